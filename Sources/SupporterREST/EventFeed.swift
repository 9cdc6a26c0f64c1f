import Foundation
import Synchronization
import SupportHTTP
import SupporterNode

/// `GET /api/v1/events`: the audit trail, live, as Server-Sent Events, each subscriber seeing only what it may.
///
/// One thread of its own reads new audit rows (every ``pollInterval``, by id, from the durable trail: blocking store
/// reads, so neither an event loop nor a cooperative thread waits on the database) and sends each to the
/// subscribers allowed to see it; a row is never sent before it is committed, and its audit id is the event's `id`.
/// A subscriber that comes back with `Last-Event-ID` is first sent every row after that id it may see, then the live
/// ones — in order, none twice, none missed. Bounded: at most ``maxSubscribers`` streams; each may fall at most its
/// ``HTTPBodyStream/capacity`` behind, beyond which it is dropped (its client reconnects with `Last-Event-ID` and goes
/// on from there).
final class EventFeed: Sendable {
    static let maxSubscribers = 256
    static let pollInterval: Duration = .milliseconds(250)
    static let keepaliveInterval: Duration = .seconds(15)
    /// Rows read per query.
    static let page = 200

    private struct Subscriber: Sendable {
        let principal: RESTPrincipal
        /// The login session's secret, to end the stream when the session ends (sign-out, disabled account).
        let sessionSecret: String?
        let stream: HTTPBodyStream
        /// Rows after this id still to be sent from the trail before the subscriber joins the live ones.
        var catchUpFrom: Int64?
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var next = 0
        var stopped = false
    }

    private let node: SupporterNode
    private let logger: NodeLogger
    private let state = Mutex(State())
    init(node: SupporterNode, logger: NodeLogger) {
        self.node = node
        self.logger = logger
        let start = (try? node.latestAuditID()) ?? 0
        let thread = Thread { [weak self] in self?.run(from: start) }
        thread.name = "rsup-event-feed"
        thread.start()
    }

    func stop() {
        let streams = state.withLock { state -> [HTTPBodyStream] in
            state.stopped = true
            defer { state.subscribers = [:] }
            return state.subscribers.values.map(\.stream)
        }
        for stream in streams { stream.finish() }
    }

    /// A new stream for `principal`, resuming after `lastEventID` when given.
    func subscribe(_ principal: RESTPrincipal, sessionSecret: String?, lastEventID: Int64?) throws(RESTError)
        -> HTTPBodyStream
    {
        let stream = HTTPBodyStream()
        let added = state.withLock { state -> Bool in
            guard !state.stopped, state.subscribers.count < Self.maxSubscribers else { return false }
            state.next += 1
            state.subscribers[state.next] = Subscriber(
                principal: principal, sessionSecret: sessionSecret, stream: stream, catchUpFrom: lastEventID)
            return true
        }
        guard added else {
            throw RESTError(
                .unavailable, "too many event streams are open (\(Self.maxSubscribers)); try again later",
                retryAfter: .seconds(5))
        }
        // Tell the browser to come back soon after a drop, and open the body at once.
        stream.send(Array("retry: 1000\n: connected\n\n".utf8))
        return stream
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The feed's thread: it runs (and keeps the feed) until ``stop()``, which the REST server calls at shutdown and deinit.
    private func run(from start: Int64) {
        var position = start
        var lastKeepalive = ContinuousClock.now
        while !state.withLock({ $0.stopped }) {
            Thread.sleep(forTimeInterval: Double(Self.pollInterval.components.attoseconds) / 1e18
                + Double(Self.pollInterval.components.seconds))
            // Newcomers with a Last-Event-ID: their backlog, up to `position`, before they join the live rows.
            let newcomers = state.withLock { state -> [(Int, Subscriber)] in
                state.subscribers.filter { $0.value.catchUpFrom != nil }.map { ($0.key, $0.value) }
            }
            for (key, subscriber) in newcomers {
                if let from = subscriber.catchUpFrom, from < position {
                    catchUp(subscriber, after: from, upTo: position)
                }
                state.withLock { $0.subscribers[key]?.catchUpFrom = nil }
            }
            // Live rows.
            while let rows = try? node.auditEvents(limit: Self.page, afterID: position), !rows.isEmpty {
                let live = state.withLock { $0.subscribers.values.filter { $0.catchUpFrom == nil } }
                for row in rows {
                    let bytes = format(row)
                    for subscriber in live where visible(row, to: subscriber.principal) {
                        subscriber.stream.send(bytes)
                    }
                }
                position = rows.last?.id ?? position
                if rows.count < Self.page { break }
            }
            if ContinuousClock.now - lastKeepalive >= Self.keepaliveInterval {
                lastKeepalive = .now
                let all = state.withLock { Array($0.subscribers.values) }
                for subscriber in all {
                    if let secret = subscriber.sessionSecret, node.loginSession(secret: secret) == nil {
                        subscriber.stream.finish()  // signed out, disabled or expired
                    } else {
                        subscriber.stream.send(Array(": keepalive\n\n".utf8))
                    }
                }
            }
            state.withLock { state in state.subscribers = state.subscribers.filter { !$0.value.stream.isClosed } }
        }
    }

    private func catchUp(_ subscriber: Subscriber, after from: Int64, upTo end: Int64) {
        var cursor = from
        while cursor < end, !subscriber.stream.isClosed {
            guard let rows = try? node.auditEvents(limit: Self.page, afterID: cursor), !rows.isEmpty else { return }
            for row in rows {
                let id = row.id
                guard id <= end else { return }
                if visible(row, to: subscriber.principal) { subscriber.stream.send(format(row)) }
                cursor = id
            }
        }
    }

    /// Whether `principal` may see `row`: rows of a code it may work on; rows of no code (accounts, tokens) only for
    /// admins; a deleted code's deletion for everyone (it reveals only that the code is gone).
    private func visible(_ row: AuditEvent, to principal: RESTPrincipal) -> Bool {
        guard let code = row.code else { return principal.isAdmin }
        guard let info = node.code(code) else { return row.kind == .codeDeleted || principal.isAdmin }
        return principal.mayWork(onCodeAssignedTo: info.record.assignedSupporter)
    }

    /// One event: `id`, `event` (the audit kind) and one line of JSON data (`EventData`).
    private func format(_ row: AuditEvent) -> [UInt8] {
        let session = row.code.flatMap { node.code($0) }.map(APISession.init)
        let data = RESTJSON.encode(APIEventData(event: APIAuditEvent(row), session: session)) ?? Array("{}".utf8)
        let kind = row.kind.rawValue.filter { $0.isLetter || $0.isNumber || $0 == "_" }
        return Array("id: \(row.id)\nevent: \(kind)\ndata: ".utf8) + Array(data) + Array("\n\n".utf8)
    }
}

/// `EventData`: an audit row as `AuditEvent` shows it, with the code's state right after it (`session`, null when
/// the event concerns no code or the code is deleted).
struct APIEventData: Encodable {
    let event: APIAuditEvent
    let session: APISession?

    enum CodingKeys: String, CodingKey { case session }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(session, forKey: .session)
    }
}
