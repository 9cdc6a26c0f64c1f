import Foundation
import Testing
import TestSupport
import SupporterNode
import SupporterModel
@testable import SupportHTTP
@testable import SupporterREST
import SupportRuntime
import StoreTestSupport

/// The event feed's poll is a timer on a loop (here the router fixture's embedded one: it runs only when the test
/// advances it) whose store reads go to the node's blocking-work pool: rows reach a subscriber when virtual time
/// passes a poll interval, and never without it.
@Suite(.serialized, .timeLimit(.minutes(2))) struct EventFeedPollTests {
    /// What a stream has sent to its connection so far (the test stands in for a connection that writes everything at
    /// once).
    final class Received: Sendable {
        private let bytes = Locked<[UInt8]>([])
        private let finished = Locked(false)

        init(_ stream: HTTPBodyStream) {
            stream.attach { [self, weak stream] piece in
                switch piece {
                case .bytes(let more):
                    bytes.withLock { $0 += more }
                    stream?.written(more.count)  // as a connection that keeps up
                case .end, .drop: finished.withLock { $0 = true }
                }
            }
        }

        var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }
        var isFinished: Bool { finished.withLock { $0 } }
        /// The `id:` of every event sent, in order.
        var ids: [Int64] {
            text.split(separator: "\n").compactMap { $0.hasPrefix("id: ") ? Int64($0.dropFirst(4)) : nil }
        }
    }

    @Test func aNewAuditRowReachesASubscriberWhenVirtualTimePassesAPoll() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let loop = fixture.feedLoop
        loop.advance()  // the feed arms its first poll on its loop
        #expect(timerCount(loop) == 1, "the first poll is armed")
        let received = Received(try requireValue(await fixture.handle(.get, "/api/v1/events").stream))
        let code = try await fixture.node.createCode().record.code  // committed: its row is in the trail
        let id = try fixture.node.latestAuditID()

        // Short of the poll interval no poll has run, so no read was started: nothing but the stream's opening.
        loop.advance(by: EventFeed.pollInterval - .milliseconds(1))
        #expect(received.text == "retry: 1000\n: connected\n\n")

        // The poll's timer fires; its read runs on the node's pool and hands the rows back to the loop.
        loop.advance(by: .milliseconds(1))
        try await drive(loop, "the code_created row sent") { received.text.contains("event: code_created") }
        #expect(received.ids == [id])
        #expect(received.text.contains("id: \(id)\nevent: code_created\ndata: "), "\(received.text)")
        #expect(received.text.contains(code), "the row's data names its code: \(received.text)")
        #expect(timerCount(loop) == 1, "the next poll is armed once the read is back")

        // Stopped: the stream ends, the timer goes, and no read is left (shutdown waited for any in flight).
        await fixture.feed.shutdown()
        loop.advance()
        #expect(received.isFinished)
        #expect(timerCount(loop) == 0, "no poll is armed after the feed stopped")
    }

    /// More rows than one poll reads: a live subscriber gets them in slices of ``EventFeed/pagesPerPoll`` pages (the
    /// next poll following at once), and one coming back with `Last-Event-ID` gets the same backlog in slices, then
    /// the live rows: every id once, in order, for both.
    @Test func rowsBeyondOnePollAreSentInOrderInSlicesWithoutGapsOrRepeats() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let loop = fixture.feedLoop
        let live = Received(try requireValue(await fixture.handle(.get, "/api/v1/events").stream))
        let rows = EventFeed.pagesPerPoll * EventFeed.page + 50
        let now = fixture.node.clock.wallTime
        try await fixture.node.appendAudit(
            (0..<rows).map { AuditEvent(time: now, kind: .signInFailed, details: ["n": "\($0)"]) })
        let backlogEnd = try fixture.node.latestAuditID()
        let first = backlogEnd - Int64(rows) + 1
        loop.advance(by: EventFeed.pollInterval)
        try await drive(loop, "the live rows up to \(backlogEnd) sent") { live.ids.last == backlogEnd }
        #expect(live.ids == Array(first...backlogEnd))

        // Back from before all of them: a backlog of more than a poll reads, then a row committed after it.
        let returning = Received(
            try requireValue(
                await fixture.handle(.get, "/api/v1/events", headers: [("Last-Event-ID", "\(first - 1)")]).stream))
        _ = try await fixture.node.createCode()
        let last = try fixture.node.latestAuditID()
        loop.advance(by: EventFeed.pollInterval)
        try await drive(loop, "the backlog and the live row up to \(last) sent") { returning.ids.last == last }
        #expect(returning.ids == Array(first...last))
        #expect(live.ids == Array(first...last))
    }

    /// A code's creation is durable — its row readable by the poll — a moment before the node applies it (here held
    /// open by the store). A row read in that moment still carries the code's session and reaches the supporter the
    /// code is assigned to, not admins alone as if the code were deleted.
    @Test func aRowReadBeforeTheNodeAppliedItsCodeCarriesTheCodeToItsAssignee() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let loop = fixture.feedLoop
        let password = "password of bo"
        _ = try await fixture.node.addAccount(
            login: "bo", displayName: "Bo", role: .supporter, password: password, by: .local)
        let signedIn = try await fixture.node.signIn(
            login: "bo", password: password, address: "127.0.0.1", knownSignIn: nil)
        let admin = Received(try requireValue(await fixture.handle(.get, "/api/v1/events").stream))
        let supporter = Received(
            try requireValue(
                await fixture.handle(
                    .get, "/api/v1/events",
                    headers: [("Authorization", ""), ("Cookie", "rsup_session=\(signedIn.secret)")]
                ).stream))

        fixture.store.holdingCommits = true
        let node = fixture.node
        let creation = Task {
            try await node.createCode(
                type: .remoteSupport, details: SessionCodeDetails(description: "held", assignedSupporter: "bo"))
        }
        try await eventually("the creation committed, the node not told yet") {
            fixture.store.heldCommits == 1 ? true : nil
        }
        loop.advance(by: EventFeed.pollInterval)
        try await drive(loop, "the code_created row sent to its assignee") {
            supporter.text.contains("event: code_created")
        }
        try await drive(loop, "the code_created row sent to the admin") { admin.text.contains("event: code_created") }
        fixture.store.releaseCommits()
        let code = try await creation.value.record.code
        for received in [admin, supporter] {
            let data = try requireValue(
                received.text.split(separator: "\n").first { $0.hasPrefix("data: ") && $0.contains("code_created") })
            #expect(data.contains(#""description":"held""#), "the row carries the code's session: \(data)")
            #expect(data.contains(#""state":"open""#), "\(data)")
            #expect(data.contains(code), "\(data)")
        }
    }

    /// Timers armed on `loop` (read on its thread: queued, then run by driving it without time passing).
    private func timerCount(_ loop: EventLoop) -> Int {
        let count = Locked(-1)
        loop.execute { count.withLock { $0 = loop.scheduledTimerCount } }
        loop.advance()
        return count.withLock { $0 }
    }

    /// Drives `loop` without time passing until `condition` holds: the read runs on the node's pool thread and hands
    /// its rows to the loop, which runs them only when driven — so this turns it and looks again, a millisecond apart
    /// (nothing announces the hand-over to a test that drives the loop itself). Past ``waitDeadline`` it fails: the
    /// poll did not run.
    private func drive(_ loop: EventLoop, _ what: String, until condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while true {
            loop.advance()
            if condition() { return }
            guard ContinuousClock.now - start < waitDeadline else {
                throw WaitTimeout(description: "\(what): not after \(waitDeadline) of driving the feed's loop")
            }
            await wallClockPause(.milliseconds(1))
        }
    }
}
