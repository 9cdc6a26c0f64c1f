import Foundation
import Synchronization
import SupportHTTP
import SupportUtilities
import SupporterModel

/// `GET /api/v1/events`: the audit trail, live, as Server-Sent Events, each subscriber seeing only what it may.
///
/// One thread of its own reads new audit rows (every ``pollInterval``, by id, from the durable trail: blocking store
/// reads, so neither an event loop nor a cooperative thread waits on the database) and sends each to the
/// subscribers allowed to see it; a row is never sent before it is committed, and its audit id is the event's `id`.
/// A subscriber that comes back with `Last-Event-ID` is first sent every row after that id it may see, then the live
/// ones — in order, none twice, none missed.
///
/// Bounded (issue 20, finding 5): at most ``maxSubscribers`` streams in all, ``maxPerAccount`` per account (or admin
/// token) and ``maxPerSource`` per client address key (an IPv6 client's /64); each may fall at most its
/// ``HTTPBodyStream/capacity`` behind, beyond which it is dropped (its client reconnects with `Last-Event-ID` and goes
/// on from there). A stream whose client closed frees its slot at once: its connection notices the close on its loop
/// and closes the body stream, which no count includes from then on.
///
/// Re-authorised (findings 6 and 7): a stream keeps the right of the principal that opened it only while that right
/// holds. It ends (the connection closes once what was sent is written) as soon as the feed sees that its login
/// session ended (sign-out, expiry, account disabled, password changed), its account's role changed (a demoted admin;
/// a promoted supporter too: the client reconnects and sees what its new role shows), or its admin token was
/// revoked: checked every poll, and before any row that follows an `account_changed`, `signed_out` or
/// `token_revoked` row is sent — so no row committed after the change reaches the stream. Ending rather than
/// narrowing: the console reconnects at once (`retry: 1000`) with `Last-Event-ID` and gets the narrower view, or 401.
final class EventFeed: Sendable {
    static let maxSubscribers = 256
    /// Streams one account, or one admin token, may hold at once.
    static let maxPerAccount = 8
    /// Streams one client address key may hold at once: half its connections (``HTTPServerConfiguration``'s
    /// `maxConnectionsPerAddress`, 32), so that a source holding its share of streams can still make API calls.
    static let maxPerSource = 16
    static let pollInterval: Duration = .milliseconds(250)
    static let keepaliveInterval: Duration = .seconds(15)
    /// Rows read per query.
    static let page = 200

    /// What authenticated a stream, to check again.
    enum Credential: Sendable {
        /// The login session cookie's secret.
        case session(String)
        /// The admin bearer token.
        case token(String)
    }

    private struct Subscriber: Sendable {
        let principal: RESTPrincipal
        let credential: Credential
        /// The account's login or the token's id: the key of ``maxPerAccount``.
        let holder: String
        /// The client address's key: the key of ``maxPerSource``.
        let source: String
        let stream: HTTPBodyStream
        /// Rows after this id still to be sent from the trail before the subscriber joins the live ones.
        var catchUpFrom: Int64?
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var next = 0
        var stopped = false

        /// Forgets subscribers whose stream closed (client gone, dropped, ended).
        mutating func prune() { subscribers = subscribers.filter { !$0.value.stream.isClosed } }
    }

    private let node: any SupporterService
    private let logger: NodeLogger
    private let state = Mutex(State())
    init(node: any SupporterService, logger: NodeLogger) {
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

    /// A new stream for `principal`, authenticated by `credential`, resuming after `lastEventID` when given. 503 when
    /// every slot is taken; 429 when the account (or token) or the client address key holds its share already.
    func subscribe(_ principal: RESTPrincipal, credential: Credential, lastEventID: Int64?) throws(RESTError)
        -> HTTPBodyStream
    {
        let stream = HTTPBodyStream()
        let holder: String
        let address: String
        switch principal {
        case .account(let account, _, let from):
            holder = "account:" + account.login
            address = from
        case .adminToken(let id, let from):
            holder = "token:" + id
            address = from
        }
        let source = IPAddressText.sourceKey(address)
        let refusal = state.withLock { state -> RESTError? in
            guard !state.stopped else {
                return RESTError(.unavailable, "the node is shutting down", retryAfter: .seconds(5))
            }
            state.prune()
            guard state.subscribers.count < Self.maxSubscribers else {
                return RESTError(
                    .unavailable, "too many event streams are open (\(Self.maxSubscribers)); try again later",
                    retryAfter: .seconds(5))
            }
            let values = state.subscribers.values
            guard values.count(where: { $0.holder == holder }) < Self.maxPerAccount else {
                return RESTError(
                    .tooManyRequests,
                    "this \(holder.hasPrefix("token:") ? "token" : "account") has \(Self.maxPerAccount) event streams "
                        + "open already; close one first", retryAfter: .seconds(5))
            }
            guard values.count(where: { $0.source == source }) < Self.maxPerSource else {
                return RESTError(
                    .tooManyRequests,
                    "\(Self.maxPerSource) event streams are open from \(source) already; close one first",
                    retryAfter: .seconds(5))
            }
            state.next += 1
            state.subscribers[state.next] = Subscriber(
                principal: principal, credential: credential, holder: holder, source: source, stream: stream,
                catchUpFrom: lastEventID)
            return nil
        }
        if let refusal { throw refusal }
        // Tell the browser to come back soon after a drop, and open the body at once.
        stream.send(Array("retry: 1000\n: connected\n\n".utf8))
        return stream
    }

    /// Open streams now (closed ones are not counted).
    var subscriberCount: Int {
        state.withLock { state in
            state.prune()
            return state.subscribers.count
        }
    }

    /// The feed's thread: it runs (and keeps the feed) until ``stop()``, which the REST server calls at shutdown and deinit.
    private func run(from start: Int64) {
        var position = start
        var lastKeepalive = ContinuousClock.now
        while !state.withLock({ $0.stopped }) {
            Thread.sleep(forTimeInterval: Double(Self.pollInterval.components.attoseconds) / 1e18
                + Double(Self.pollInterval.components.seconds))
            reauthorise()
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
            while let rows = try? node.auditEvents(
                code: nil, from: nil, to: nil, limit: Self.page, afterID: position, beforeID: nil, newestFirst: false), !rows.isEmpty {
                var live = state.withLock { $0.subscribers.values.filter { $0.catchUpFrom == nil } }
                for row in rows {
                    if Self.changesRights(row) {
                        // Nothing from here on reaches a stream whose principal lost its right (this row included).
                        reauthorise(after: row)
                        live.removeAll { $0.stream.isClosed }
                    }
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
                for subscriber in all { subscriber.stream.send(Array(": keepalive\n\n".utf8)) }
            }
            state.withLock { $0.prune() }
        }
    }

    /// Whether `row` may take a right away from an open stream.
    private static func changesRights(_ row: AuditEvent) -> Bool {
        row.kind == .accountChanged || row.kind == .signedOut || row.kind == .tokenRevoked
    }

    /// Ends every stream whose principal no longer holds (``holds(_:)``); with `row`, also the streams of the token
    /// it revoked (the node forgets a revoked token only after its row is committed).
    private func reauthorise(after row: AuditEvent? = nil) {
        let revoked = row.flatMap { $0.kind == .tokenRevoked ? $0.details["token"] : nil }
        let all = state.withLock { Array($0.subscribers.values) }
        for subscriber in all where !subscriber.stream.isClosed {
            if let revoked, subscriber.holder == "token:" + revoked {
                subscriber.stream.finish()
            } else if !holds(subscriber) {
                subscriber.stream.finish()
            }
        }
    }

    /// Whether the subscriber's credential still authenticates the principal it opened with: the login session is
    /// live and its account active with the same role; the admin token is still an admin token the node accepts.
    private func holds(_ subscriber: Subscriber) -> Bool {
        switch subscriber.credential {
        case .session(let secret):
            guard let (_, account) = node.loginSession(secret: secret), let opened = subscriber.principal.account
            else { return false }
            return account.role == opened.role && account.login == opened.login
        case .token(let token):
            return node.tokenRecord(of: token)?.scope == .admin
        }
    }

    private func catchUp(_ subscriber: Subscriber, after from: Int64, upTo end: Int64) {
        var cursor = from
        while cursor < end, !subscriber.stream.isClosed {
            guard let rows = try? node.auditEvents(
                code: nil, from: nil, to: nil, limit: Self.page, afterID: cursor, beforeID: nil, newestFirst: false), !rows.isEmpty else { return }
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
        return Array("id: \(row.id)\nevent: \(kind)\ndata: ".utf8) + data + Array("\n\n".utf8)
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
