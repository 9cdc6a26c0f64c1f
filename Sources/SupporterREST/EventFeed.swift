import Foundation
import Synchronization
import SupportHTTP
import SupportRuntime
import SupportUtilities
import SupporterModel

/// `GET /api/v1/events`: the audit trail, live, as Server-Sent Events, each subscriber seeing only what it may.
///
/// A timer on one of the REST server's loops polls for new audit rows every ``pollInterval``, by id, from the durable
/// trail. The reads block (a store read), so the timer hands them to the node's bounded blocking-work pool
/// (``SupporterService/submit(_:)``), which hands the rows straight back to the loop: no loop waits on the database,
/// and no step depends on a free thread of the cooperative pool. At most one read is in flight, and the next poll is
/// armed on the loop when its rows are back there and sent to the subscribers allowed to see them. A row is never sent before it is committed, and its audit id is the event's `id`. A subscriber that
/// comes back with `Last-Event-ID` is first sent every row after that id it may see, then the live ones — in order,
/// none twice, none missed. A poll reads at most ``pagesPerPoll`` pages of live rows and as many of backlogs; when
/// more wait, the next poll follows at once.
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
    /// Pages one poll reads of live rows, and of backlogs (all newcomers together): what a poll holds in memory and
    /// sends from the loop in one go.
    static let pagesPerPoll = 10

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

    /// Under the feed's lock: what ``subscribe(_:credential:lastEventID:)`` (any task) and the poll share.
    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var next = 0
        var stopped = false
        /// The poll's read on the node's blocking-work pool, from the timer's firing until its rows are handed back to
        /// the loop (at most one at a time); ``shutdown()`` waits for it.
        var reading: ReadInFlight?

        /// Forgets subscribers whose stream closed (client gone, dropped, ended).
        mutating func prune() { subscribers = subscribers.filter { !$0.value.stream.isClosed } }
    }

    /// On the feed's loop only: where the live rows stand, the last keepalive and the armed timer.
    private struct Poll {
        /// The id of the last live row sent (the trail's newest when the feed started).
        var position: Int64
        var lastKeepalive: Deadline
        var timer: LoopTimer?
    }

    /// An audit row read for the feed, formatted once for every subscriber, with what decides who may see it.
    private struct Row: Sendable {
        let event: AuditEvent
        let bytes: [UInt8]
        let access: Access
    }

    /// Who may see a row: by its code's assignee when it read, read with the row.
    private enum Access: Sendable {
        /// A row of no code (accounts, tokens): admins only.
        case noCode
        /// The code is gone: its deletion for everyone, the rest for admins.
        case deletedCode
        case code(assignedTo: String?)
    }

    /// What one poll read.
    private struct Batch: Sendable {
        struct Backlog: Sendable {
            let subscriber: Int
            let rows: [Row]
            /// Nil when the backlog is sent in full (the subscriber joins the live rows), else the id to go on after.
            let resumeAfter: Int64?
        }
        var backlogs: [Backlog] = []
        var live: [Row] = []
        /// Rows were left for the next poll (a page limit was reached).
        var more = false
    }

    private let node: any SupporterService
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let poll: LoopBound<Poll>

    /// A feed whose polls run on `loop` (one of the REST server's, or an embedded one a test drives), from the newest
    /// audit row now. Not on a loop: it reads the trail's newest id.
    init(node: any SupporterService, loop: EventLoop, logger: NodeLogger) {
        self.node = node
        self.logger = logger
        let start = (try? node.latestAuditID()) ?? 0
        poll = LoopBound(handingOver: Poll(position: start, lastKeepalive: loop.now, timer: nil), to: loop)
        loop.execute { [weak self] in self?.arm(after: Self.pollInterval) }
    }

    /// Ends every stream and the polls: the armed timer is cancelled on its loop, a read in flight delivers nothing
    /// and arms nothing. Safe on any thread (the REST server's deinit calls it); ``shutdown()`` also waits for the
    /// read.
    func stop() {
        let streams = state.withLock { state -> [HTTPBodyStream] in
            state.stopped = true
            defer { state.subscribers = [:] }
            return state.subscribers.values.map(\.stream)
        }
        for stream in streams { stream.finish() }
        let poll = self.poll
        poll.loop.execute {
            poll.value.timer?.cancel()
            poll.value.timer = nil
        }
    }

    /// ``stop()``, then waits until a read in flight has ended, so that nothing of the feed runs on the node after
    /// this returns. Not on a loop.
    func shutdown() async {
        stop()
        await state.withLock({ $0.reading })?.wait()
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

    // MARK: the poll (a loop timer; the reads on the node's blocking-work pool)

    /// Arms the next poll `delay` from now, unless the feed stopped. Loop thread.
    private func arm(after delay: Duration) {
        guard !state.withLock({ $0.stopped }) else { return }
        let loop = poll.loop
        poll.value.timer = loop.schedule(at: loop.now + delay) { [weak self] in
            guard let self else { return }
            self.poll.value.timer = nil
            self.startRead()
        }
    }

    /// The timer fired: hands this poll's reads (each newcomer's backlog up to the live position, then the live rows
    /// after it) to the node's blocking-work pool. Their rows come back to the loop (``deliver(_:)``), which arms the
    /// next poll. Loop thread; nothing here waits.
    private func startRead() {
        let position = poll.value.position
        let loop = poll.loop
        let node = self.node
        state.withLock { state in
            guard !state.stopped else { return }
            let newcomers = state.subscribers.compactMap { key, subscriber in
                subscriber.catchUpFrom.map { (subscriber: key, after: $0) }
            }.sorted { $0.subscriber < $1.subscriber }
            // The rows go from the worker thread straight to the loop: no task in between, so a cooperative pool whose
            // threads are all taken (by slow handlers, or blocking code elsewhere in the process) never holds the
            // feed back.
            let reading = ReadInFlight()
            state.reading = reading
            let queued = node.submit { [self] in
                let batch = Self.read(node, newcomers: newcomers, position: position)
                let accepted = loop.execute { self.deliver(batch) }
                if !accepted { logger.log(.debug, "REST API: event feed rows read after its loop stopped") }
                reading.finish()
            }
            if !queued {
                reading.finish()
                _ = loop.execute { self.deliver(nil) }  // the worker is full: try again at the next poll
            }
        }
    }

    /// The reads of one poll. On the node's blocking-work pool (a thread that may wait for the store).
    private static func read(
        _ node: any SupporterService, newcomers: [(subscriber: Int, after: Int64)], position: Int64
    ) -> Batch {
        var batch = Batch()
        var pages = 0
        // Codes looked up this poll: a backlog of a deleted code's rows costs one store read, not one per row.
        var codes = CodeLookups()
        for newcomer in newcomers {
            var cursor = newcomer.after
            var rows: [Row] = []
            var complete = true
            backlog: while cursor < position {
                guard pages < pagesPerPoll else {
                    complete = false
                    batch.more = true
                    break
                }
                pages += 1
                guard let events = try? node.auditEvents(
                    code: nil, from: nil, to: nil, limit: page, afterID: cursor, beforeID: nil, newestFirst: false),
                    let contents = contents(of: events, node: node)
                else {
                    complete = false  // the store failed: again from here at the next poll
                    break
                }
                for event in events {
                    guard event.id <= position else { break backlog }
                    guard let row = row(event, content: contents[event.id], node: node, codes: &codes) else {
                        complete = false  // as above
                        break backlog
                    }
                    rows.append(row)
                    cursor = event.id
                }
                if events.count < page { break }
            }
            batch.backlogs.append(
                Batch.Backlog(subscriber: newcomer.subscriber, rows: rows, resumeAfter: complete ? nil : cursor))
        }
        var cursor = position
        live: for read in 1...pagesPerPoll {
            guard let events = try? node.auditEvents(
                code: nil, from: nil, to: nil, limit: page, afterID: cursor, beforeID: nil, newestFirst: false),
                let contents = contents(of: events, node: node)
            else { break }
            for event in events {
                guard let row = row(event, content: contents[event.id], node: node, codes: &codes) else { break live }  // the store failed: from here next poll
                batch.live.append(row)
                cursor = event.id
            }
            if events.count < page { break }
            if read == pagesPerPoll { batch.more = true }
        }
        return batch
    }

    /// A poll's rows are back on the loop (nil: the pool refused or failed the read): re-authorises the streams, sends
    /// the backlogs, then the live rows, keeps the streams alive, and arms the next poll — at once when rows were
    /// left over. Loop thread.
    private func deliver(_ batch: Batch?) {
        guard !state.withLock({ $0.stopped }) else { return }
        reauthorise()
        if let batch {
            for backlog in batch.backlogs {
                guard let subscriber = state.withLock({ $0.subscribers[backlog.subscriber] }) else { continue }
                for row in backlog.rows where visible(row, to: subscriber.principal) {
                    guard subscriber.stream.send(row.bytes) else { break }
                }
                state.withLock { $0.subscribers[backlog.subscriber]?.catchUpFrom = backlog.resumeAfter }
            }
            var live = state.withLock { $0.subscribers.values.filter { $0.catchUpFrom == nil } }
            for row in batch.live {
                if Self.changesRights(row.event) {
                    // Nothing from here on reaches a stream whose principal lost its right (this row included).
                    reauthorise(after: row.event)
                    live.removeAll { $0.stream.isClosed }
                }
                for subscriber in live where visible(row, to: subscriber.principal) {
                    subscriber.stream.send(row.bytes)
                }
            }
            if let last = batch.live.last { poll.value.position = last.event.id }
        }
        let now = poll.loop.now
        if now.since(poll.value.lastKeepalive) >= Self.keepaliveInterval {
            poll.value.lastKeepalive = now
            let all = state.withLock { Array($0.subscribers.values) }
            for subscriber in all { subscriber.stream.send(Array(": keepalive\n\n".utf8)) }
        }
        state.withLock { $0.prune() }
        arm(after: batch?.more == true ? .zero : Self.pollInterval)
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

    /// Whether `principal` may see `row`: rows of a code it may work on; rows of no code (accounts, tokens) only for
    /// admins; a deleted code's deletion for everyone (it reveals only that the code is gone).
    private func visible(_ row: Row, to principal: RESTPrincipal) -> Bool {
        switch row.access {
        case .noCode: principal.isAdmin
        case .deletedCode: row.event.kind == .codeDeleted || principal.isAdmin
        case .code(let assignee): principal.mayWork(onCodeAssignedTo: assignee)
        }
    }

    /// The contents kept for the message rows of `events` (one read per page), or nil when the store failed.
    private static func contents(of events: [AuditEvent], node: any SupporterService) -> [Int64: StoredSessionContent]? {
        let ids = events.filter { APISessionContent.carried.contains($0.kind) }.map(\.id)
        guard !ids.isEmpty else { return [:] }
        return try? node.sessionContents(auditIDs: ids)
    }

    /// One event: `id`, `event` (the audit kind) and one line of JSON data (`EventData`), with who may see it; nil
    /// when the store failed to say what its code is. The code is read from the store when the node does not hold it:
    /// a code's creation is durable (and its row readable here) a moment before the node applies it, and a code
    /// another node of the cluster made reaches this one later still; taken for deleted, its row would lose its
    /// session and reach admins only.
    private static func row(
        _ event: AuditEvent, content: StoredSessionContent?, node: any SupporterService, codes: inout CodeLookups
    ) -> Row? {
        let info: SessionCodeInfo?
        if let code = event.code {
            // The node's own codes are read live every time; only what the store said is kept for the poll.
            if let live = node.code(code) {
                info = live
            } else if let known = codes.stored[code] {
                info = known
            } else {
                do throws(SupporterNodeError) { info = try node.codeReadingStore(code) } catch { return nil }
                codes.stored[code] = .some(info)
            }
        } else {
            info = nil
        }
        let access: Access
        if event.code == nil {
            access = .noCode
        } else if let info {
            access = .code(assignedTo: info.record.assignedSupporter)
        } else {
            access = .deletedCode
        }
        let data =
            RESTJSON.encode(
                APIEventData(
                    event: APIAuditEvent(event), session: info.map(APISession.init),
                    content: APISessionContent.carried.contains(event.kind) ? .some(content.map(APISessionContent.init)) : nil))
            ?? Array("{}".utf8)
        let kind = event.kind.rawValue.filter { $0.isLetter || $0.isNumber || $0 == "_" }
        let bytes = Array("id: \(event.id)\nevent: \(kind)\ndata: ".utf8) + data + Array("\n\n".utf8)
        return Row(event: event, bytes: bytes, access: access)
    }
}

/// `EventData`: an audit row as `AuditEvent` shows it, with the code's state right after it (`session`, null when
/// the event concerns no code or the code is deleted), and for a message or file row what it held (`content`, null
/// once past its retention; absent on other rows).
struct APIEventData: Encodable {
    let event: APIAuditEvent
    let session: APISession?
    /// False for a webhook's body, which has no `session`: the code's state when it is delivered could be much later.
    var includesSession = true
    /// Nil: the row carries no content; `.some(nil)`: it does, and the content is no longer kept.
    var content: APISessionContent?? = nil

    enum CodingKeys: String, CodingKey { case session, content }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        if includesSession { try container.encode(session, forKey: .session) }
        if let content { try container.encode(content, forKey: .content) }
    }
}

/// The codes one poll read from the store (nil: no such code), by code.
private struct CodeLookups {
    var stored: [String: SessionCodeInfo?] = [:]
}

/// A poll's read on the node's worker thread, which ``EventFeed/shutdown()`` waits for.
private final class ReadInFlight: Sendable {
    private let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func finish() {
        let waiters = state.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}
