import Glibc
import Testing
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import SupportWire

/// Framed links over real TLS sockets on an embedded loop (virtual time): minutes of keepalive behaviour in
/// milliseconds of wall time. The real-time tests beside (TLSLinkTests, IdleTimeoutTests) keep the real thing covered.
@Suite struct VirtualTimeLinkTests {
    /// A listener and a dialled link, both on one embedded loop that the test drives.
    struct Pair {
        let loop: EventLoop
        let server: TestServer
        let client: FramedLink
        let clientRecorder: LinkRecorder
        let serverLink: FramedLink
        let serverRecorder: LinkRecorder
    }

    /// Drives `loop` (no virtual time passing) until `task` finishes.
    ///
    /// Only driving the loop runs the task's I/O, so the loop is driven for as long as the task is awaited: waiting
    /// for it without driving would wait forever (this hung whole test runs when a loaded machine's cooperative pool
    /// let the dial miss an earlier wall-clock limit). Past `limit` of wall time the task is cancelled, and driving
    /// goes on until it ends; past twice `limit` the test fails without waiting any longer.
    static func drive<T: Sendable>(
        _ loop: EventLoop, _ task: Task<T, any Error>, limit: Duration = .seconds(60)
    ) async throws -> T {
        let done = Locked(false)
        let watcher = Task {
            _ = try? await task.value
            done.withLock { $0 = true }
        }
        let wall = ContinuousClock.now
        var cancelled = false
        while !done.withLock({ $0 }) {
            let waited = ContinuousClock.now - wall
            if waited > limit * 2 {
                throw WaitTimeout(description: "the driven task did not end \(waited) after it started, even cancelled")
            }
            if waited > limit, !cancelled {
                Issue.record("the driven task was not done after \(limit) of wall time; cancelled")
                task.cancel()
                cancelled = true
            }
            loop.advance()
            // Between two turns of the loop: only driving it runs the task's I/O, so this cannot wait on an event.
            await wallClockPause(.milliseconds(1))
        }
        _ = await watcher.value
        return try await task.value
    }

    static func pair(
        _ certificates: TestCertificates, keepalive: Duration, idleTimeout: Duration? = nil
    ) async throws -> Pair {
        let loop = try EventLoop.embedded()
        let group = EventLoopGroup(loops: [loop])
        let serverContext = try TLSContext(
            .makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath)))
        let server = try TestServer(
            context: serverContext, settings: .supporter(keepalive: keepalive), group: group, idleTimeout: idleTimeout)
        let clientContext = try TLSContext(.makeClientConfiguration(trustRoots: .file(certificates.caPath)))
        let recorder = LinkRecorder()
        let port = server.port
        let dial = Task { () async throws -> FramedLink in
            try await TLSDialer.connect(
                host: "localhost", port: port, context: clientContext, settings: .device(keepalive: keepalive),
                loop: loop, delegate: recorder)
        }
        let client = try await drive(loop, dial)
        let accepted = Task { () async throws -> (link: FramedLink, recorder: LinkRecorder) in
            try await server.link(timeout: waitDeadline)
        }
        let (serverLink, serverRecorder) = try await drive(loop, accepted)
        return Pair(
            loop: loop, server: server, client: client, clientRecorder: recorder, serverLink: serverLink,
            serverRecorder: serverRecorder)
    }

    @Test func anIdleLinkStaysOpenForTenVirtualMinutesOfKeepalives() async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let pair = try await Self.pair(certificates, keepalive: .seconds(15))
        let wall = ContinuousClock.now
        for _ in 0..<120 { pair.loop.advance(by: .seconds(5)) }  // PINGs and PONGs cross at their virtual times
        #expect(pair.clientRecorder.closeReason == nil)
        #expect(pair.serverRecorder.closeReason == nil)
        // Virtual, not real: 600 seconds of keepalive in far less (a generous bound: the machine may be loaded).
        #expect(ContinuousClock.now - wall < .seconds(120), "600 virtual seconds took \(ContinuousClock.now - wall)")
        pair.client.close()
        pair.loop.advance(by: .seconds(1))
        pair.server.listener.close()
        pair.loop.advance()
    }

    @Test func aClientThatNeverSpeaksTLSIsDroppedAtTheHandshakeDeadlineOfVirtualTime() async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let pair = try await Self.pair(certificates, keepalive: .seconds(15))
        // A TCP client that connects and says nothing (the kernel completes the TCP handshake).
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = pair.server.port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(silent, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        pair.loop.advance(by: .seconds(9))
        #expect(pair.server.handshakeFailures.withLock { $0.count } == 0)
        pair.loop.advance(by: .seconds(2))  // past the 10 s TLS handshake deadline
        let failures = pair.server.handshakeFailures.withLock { $0.map(\.reason) }
        #expect(failures.count == 1, "\(failures)")
        #expect(pair.clientRecorder.closeReason == nil)  // the real link is untouched
        pair.client.close()
        pair.server.listener.close()
        pair.loop.advance(by: .seconds(1))
    }
}

extension VirtualTimeLinkTests {
    /// Runs `body` with a fresh pair on its own embedded loop, then closes both ends.
    static func withPair(
        keepalive: Duration, idleTimeout: Duration? = nil, _ body: (Pair) async throws -> Void
    ) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let pair = try await pair(certificates, keepalive: keepalive, idleTimeout: idleTimeout)
        try await body(pair)
        pair.client.close()
        pair.loop.advance(by: .seconds(1))
        pair.server.listener.close()
        pair.loop.advance()
    }
}

extension VirtualTimeLinkTests.Pair {
    /// Turns the loop without moving its clock until `condition` holds (what loopback I/O and queued work cause);
    /// whether it did within `turns` turns.
    @discardableResult
    func advance(until condition: () -> Bool, turns: Int = 100_000) -> Bool {
        for _ in 0..<turns {
            if condition() { return true }
            loop.advance()
        }
        return condition()
    }

    /// Moves virtual time on by `duration` in `step`s, so that the peers' PINGs and PONGs cross at their times.
    func advance(by duration: Duration, step: Duration = .milliseconds(10)) {
        var left = duration
        while left > .zero {
            let next = min(step, left)
            loop.advance(by: next)
            left -= next
        }
    }
}
