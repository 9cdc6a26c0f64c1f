public import Foundation
import Glibc
import Synchronization
import SupporterCore
public import SupporterStore
import SupportSession
import SupportLink
public import SupportRuntime
public import SupportUtilities
import SupportWire
public import SupporterModel
public import SupportMetrics

/// The supporter node: listens for devices over TLS, keeps the durable registry of session codes, API tokens, bans
/// and the audit trail, and lets supporters request, abort and end sessions.
///
/// Glue only: links ⇄ ``CodeRegistry`` (a pure value, behind the session lock; accounts and sign-ins behind a lock of
/// their own, ``sessions`` and ``people``, each held for in-memory work only) ⇄ a store engine
/// (SQLite's ``StoreWriter`` or the PostgreSQL engine: one thread each; loops never wait for a database). Nothing is acknowledged — to a device, an API caller or ``events`` —
/// before the audit record of what it acknowledges is durable.
///
/// Thread-safe: every method may be called from any thread or task (async ones not from a node's loop).
public final class SupporterNode: Sendable {
    public let configuration: SupporterNodeConfiguration
    let logger: NodeLogger
    let group: EventLoopGroup
    /// The node's event loops, for services beside it that run timers on them (the webhook dispatcher).
    public var loops: EventLoopGroup { group }
    /// Whether the node made ``group`` (and so shuts it down); loops given to it are the caller's.
    private let ownsLoops: Bool
    /// Where the node reads the time: wall time for records, audit rows and expiries. Deadlines of links and
    /// connections are their loop's (`EventLoop.now`).
    public let clock: any NodeClock
    private let context: TLSContext
    private let listener = Mutex<TLSListener?>(nil)
    /// The once-a-second sweep's timer, on the loop it runs on (set by ``start()``).
    private let sweeper = Mutex<LoopBound<LoopTimer?>?>(nil)
    /// The durable store: any engine (SQLite, the embedded default, or PostgreSQL), opened by the caller.
    let store: any StoreEngine
    /// The other nodes sharing the database (PostgreSQL only).
    let cluster: (any ClusterBus)?
    /// Hashes and checks passwords off every loop and cooperative thread: sign-ins (admitted per source address key,
    /// a sign-in that proves an earlier success in the reserved lane) and admins' new passwords (reserved lane).
    let passwords = BlockingWorker(name: "rsup-passwords")
    /// Other blocking work of async callers (synchronous store writes: API tokens; the REST event feed's audit reads),
    /// on a thread of its own, so that it never waits behind password hashing (issue 20, finding 2).
    let storeWork = BlockingWorker(name: "rsup-store-work")
    /// Changes of one code, or of the accounts, run one after another from decision to answer (decide → commit →
    /// apply → answer).
    let changes = ChangeLanes()
    let handshakeLog: RateLimitedLog
    /// The node's metrics, and the registry the REST API adds its own to (``metrics``).
    let nodeMetrics: NodeMetrics
    private let eventContinuation: AsyncStream<SupporterNodeEvent>.Continuation
    /// Every event, in the order it happened on each code, each after its audit record is durable. At most
    /// ``unreadEventLimit`` unread events are kept (the oldest are dropped first); the audit trail has them all.
    public let events: AsyncStream<SupporterNodeEvent>
    /// How many unread events ``events`` keeps.
    public static let unreadEventLimit = 65_536

    /// The node's in-memory state, split by job into two parts, each under its own ``NodeLock`` (held for pure,
    /// in-memory work only, never across I/O or a wait):
    /// - ``sessions``: the session path — devices, their codes and the tokens they register with. Taken by every device
    ///   step (admission, REGISTER, answers, events, closes), by supporters' commands on codes and sessions, by the
    ///   cluster listener's code, presence and token news, and by the sweep's registry tick.
    /// - ``people``: the people path — accounts, sign-in limits, login sessions. Taken by sign-in, sign-out, login
    ///   session checks, account changes, the cluster listener's account and login-session news, and the sweep's
    ///   account tick.
    ///
    /// A sign-in flood never takes the session lock, and a device never takes the people lock. The two are never
    /// nested (checked on every take in debug builds, ``NodeLock``): an operation that needs both — the sweep, a
    /// connection request as an account (the account is a value by then; only the code is looked up) — takes them
    /// one after the other, so there is no lock order.
    let sessions: NodeLock<SessionState>
    /// See ``sessions``.
    let people: NodeLock<PeopleState>

    /// How often each of the node's locks was taken so far: the tests hold the node to its lock budget with it (a
    /// REGISTER takes the session lock twice and the people lock never; a sign-in never takes the session lock).
    package var lockTakes: (sessions: Int, people: Int) { (sessions.takes, people.takes) }

    /// The session path's state, under ``sessions``: what a device's step and a supporter's command on a code need,
    /// in one take. One REGISTER takes this lock twice — its decision (token, registry and the machine's new state in
    /// one take) and the registry's apply once the commit is back (decide → commit → apply) — and ``people`` never.
    struct SessionState: ~Copyable {
        /// Codes, their devices, connections, back-off and abuse limits (the pure core).
        var registry: CodeRegistry
        /// Every open device link, registered or not.
        var links: [ConnectionID: DeviceConnection] = [:]
        /// API token digests: a REGISTER's token is checked in the same take as the registry's decision.
        var tokens = APITokenStore()
        var nextConnection: UInt64 = 1
        /// Set by ``shutdown()`` in the same take that lists the links to end, so that no link is admitted after it.
        var shuttingDown = false
    }

    /// The people path's state, under ``people``: supporters' accounts and what signing in needs.
    struct PeopleState: ~Copyable {
        /// Supporter accounts by login, as stored.
        var accounts: [String: SupporterAccountRecord] = [:]
        /// Sign-in attempts per address and login (rate limits before any hashing).
        var loginGuard = LoginGuard()
        /// Live login sessions (the console's cookies).
        var loginSessions = LoginSessionTable()
        /// When stored login sessions past their lifetime are next deleted (the start deletes them too).
        var nextLoginSessionPurge: Date
        /// Failed sign-ins' audit rows, at most one a minute per address (the rest counted).
        var signInAudit = AuditThrottle(policy: AuditThrottle.Policy(window: .seconds(60), globalLimit: 600, keys: 10_000))
    }

    /// Loads codes, token digests, accounts and bans from `store` (an opened engine: SQLite, PostgreSQL, …) and checks
    /// the TLS configuration; `cluster` is the other nodes sharing the store's database, if any. Nothing listens until
    /// ``start()``. The node stops the engine when it stops (or when this throws).
    ///
    /// - Parameters:
    ///   - loops: the event loops device links and the node's timers (the once-a-second sweep) run on. Given, the
    ///     node uses them and never shuts them down (the caller does, after ``shutdown()``); nil (the default), the
    ///     node starts ``SupporterNodeConfiguration/loopCount`` loops of its own and stops them when it stops. Tests
    ///     pass an `EventLoopGroup(loops: [EventLoop.embedded()])` and drive expiries with `advance(by:)`.
    ///   - clock: the wall clock of records, audit rows and expiries (the default reads the system's). With embedded
    ///     loops, pass the loop's `clock`, so that wall time moves with the virtual time.
    public init(
        configuration: SupporterNodeConfiguration, store engine: any StoreEngine, cluster: (any ClusterBus)? = nil,
        loops: EventLoopGroup? = nil, clock: any NodeClock = SystemClock()
    ) throws(SupporterNodeError) {
        self.configuration = configuration
        self.logger = configuration.logger
        self.handshakeLog = RateLimitedLog(logger: configuration.logger, interval: .seconds(10))
        self.nodeMetrics = NodeMetrics(registry: MetricsRegistry())
        self.cluster = cluster
        self.clock = clock
        self.ownsLoops = loops == nil
        do throws(TransportError) {
            self.context = try TLSContext(configuration.tls)
            if let loops {
                self.group = loops
            } else {
                self.group = try EventLoopGroup(loopCount: configuration.loopCount)
            }
        } catch {
            engine.stop()
            throw SupporterNodeError(transport: error)
        }
        do throws(StoreError) {
            store = engine
            var registry = CodeRegistry(policy: configuration.registryPolicy)
            let now = clock.wallTime
            // Sessions past their lifetime are forgotten here; the rest are loaded (a restart signs nobody out).
            let snapshot: StoreSnapshot
            do throws(StoreError) {
                snapshot = try engine.loadSnapshot(
                    expiringLoginSessionsBefore: now.addingTimeInterval(-LoginSessionTable.lifetime))
            } catch {
                engine.stop()
                throw error
            }
            for record in snapshot.codes { registry.load(record, now: now) }
            for row in snapshot.backoff { registry.load(row) }
            // What the previous process left for a resume; on several nodes the presence rows carry it instead.
            if cluster == nil {
                registry.loadUnresumed(
                    snapshot.unresumed, deadline: now.addingTimeInterval(configuration.resumeGrace.seconds))
            }
            var tokens = APITokenStore()
            for (digest, record) in snapshot.activeTokens { tokens.add(digest: digest, record: record) }
            var peopleState = PeopleState(nextLoginSessionPurge: now.addingTimeInterval(3600))
            for account in snapshot.accounts { peopleState.accounts[account.login] = account }
            for session in snapshot.loginSessions { peopleState.loginSessions.load(session, now: now) }
            self.sessions = NodeLock("session", SessionState(registry: registry, tokens: tokens))
            self.people = NodeLock("people", peopleState)
        } catch {
            if ownsLoops { group.shutdown() }
            throw SupporterNodeError(store: error)
        }
        // Bounded: a node whose owner never reads `events` must not grow without end.
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(Self.unreadEventLimit))
        nodeMetrics.registerReads(node: self)
    }

    /// Every metric of the node (its devices, sessions, store, cluster, process) and of what is served beside it (the
    /// REST API adds its own), in the Prometheus text format by ``MetricsRegistry/exposition()``.
    public var metrics: MetricsRegistry { nodeMetrics.registry }

    /// Devices registered here and codes by state, for the metrics.
    func census() -> (devicesHere: Int, states: [SessionCodeState: Int]) {
        let now = clock.wallTime
        return sessions.withLock { $0.registry.census(now: now) }
    }

    /// Binds the device address and starts serving. (The REST API is served beside the node, by `SupporterREST`.)
    public func start() throws(SupporterNodeError) {
        var settings = LinkSettings(role: .supporter, nodeName: configuration.nodeName)
        settings.keepaliveInterval = configuration.keepaliveInterval
        settings.extensions = configuration.extensions
        settings.resumeGrace = configuration.resumeGrace
        do {
            let log = handshakeLog
            let logger = self.logger
            let metrics = nodeMetrics
            let created = try TLSListener(
                host: configuration.host, port: configuration.port, context: context, settings: settings, group: group,
                onHandshakeFailure: { address, reason in
                    let source = address.map { IPAddressText.canonical($0.host) ?? $0.host } ?? "unknown"
                    metrics.handshakeFailed(reason)
                    log.log(
                        .info, key: "tls:" + IPAddressText.sourceKey(source),
                        "TLS handshake with \(source) failed: \(reason)")
                },
                onAcceptError: { error in logger.log(.warning, "accepting device connections: \(error)") }
            ) { [weak self] link in
                guard let self else { return false }
                return self.admit(link)
            }
            listener.withLock { $0 = created }
            logger.log(.info, "supporter node listening for devices on \(created.localAddress)")
        } catch {
            throw SupporterNodeError(transport: error)
        }
        startClusterListener()
        // The registry's clock: codes expire under waiting devices, refusal windows close, back-off decays. A timer
        // on one of the node's loops, so that an embedded loop's `advance(by:)` drives it.
        let loop = group.next()
        let sweep = LoopBound<LoopTimer?>(handingOver: nil, to: loop)
        sweeper.withLock { $0 = sweep }
        loop.execute { [weak self] in self?.armSweep(sweep) }
    }

    /// Arms the next sweep, a second from now on the sweep's loop; each sweep arms the next. Loop thread.
    private func armSweep(_ sweep: LoopBound<LoopTimer?>) {
        let loop = sweep.loop
        sweep.value = loop.schedule(at: loop.now + .seconds(1)) { [weak self] in
            guard let self else { return }
            self.tick()
            self.armSweep(sweep)
        }
    }

    /// A new TLS connection, on its loop: admitted under the caps on unregistered connections, or closed at once.
    private func admit(_ link: FramedLink) -> Bool {
        let address = link.peerAddress.map { IPAddressText.canonical($0.host) ?? $0.host } ?? "unknown"
        // Limits (the registry's, and rate-limited log lines) count against the address's key (an IPv6 peer's
        // whole /64); logs and the rows of what the device did name the address itself.
        let key = IPAddressText.sourceKey(address)
        let admitted = sessions.withLock { state -> Result<(DeviceConnection, DeviceConnection?), RefusedAdmission> in
            guard !state.shuttingDown else { return .failure(RefusedAdmission(reason: "the node is shutting down")) }
            let id = ConnectionID(state.nextConnection)
            state.nextConnection += 1
            var evicted: DeviceConnection?
            switch state.registry.connectionOpened(id, address: address, now: clock.wallTime) {
            case .refuse(let reason): return .failure(RefusedAdmission(reason: reason))
            case .admitEvicting(let victim): evicted = state.links[victim]
            case .admit: break
            }
            let connection = DeviceConnection(id: id, link: link, node: self, sourceAddress: address, sourceKey: key)
            state.links[id] = connection
            return .success((connection, evicted))
        }
        switch admitted {
        case .success(let (connection, evicted)):
            link.delegate = connection
            if let evicted {
                handshakeLog.log(
                    .info, key: "evicted:" + evicted.sourceKey,
                    "unregistered connection from \(evicted.sourceAddress) closed to make room for \(address)")
                evicted.closeLink(
                    reason: .rateLimited, text: "the node is full of unregistered connections; this source holds the most")
            }
            return true
        case .failure(let refusal):
            handshakeLog.log(.info, key: "refused:" + key, "connection from \(address) refused: \(refusal.reason)")
            return false
        }
    }

    private struct RefusedAdmission: Error { let reason: String }

    /// Loads `tls` (its certificate chain, key and trust, read from their files again) for new device connections:
    /// a certificate rotated on SIGHUP. Established links and their sessions keep the TLS they have. Throws, and keeps
    /// serving with the previous configuration, when the files cannot be loaded (missing, broken, a key that does not
    /// match the certificate).
    public func reloadTLS(_ tls: TLSConfiguration) throws(SupporterNodeError) {
        do throws(TransportError) {
            let context = try TLSContext(tls)
            guard let current = listener.withLock({ $0 }) else {
                throw TransportError(.invalidConfiguration, "the node is not listening (not started, or stopped)")
            }
            try current.replaceContext(context)
        } catch {
            throw SupporterNodeError(transport: error)
        }
    }

    /// Runs `body` once every loop of the node has run a turn after this call (a service manager's watchdog: a loop
    /// stuck in a callback never answers, so `body` never runs). Never runs `body` once the loops are shut down.
    public func whenLoopsRespond(_ body: @escaping @Sendable () -> Void) {
        let loops = group.loops
        let waiting = LoopCountdown(loops.count)
        for loop in loops {
            _ = loop.execute {
                if waiting.left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { body() }
            }
        }
    }

    /// Checks the node's readiness (``NodeHealth``): its device port, whether it drains, a read of its store on the
    /// store worker (refused when that worker is full: not ready), and its cluster listener. `done` runs on the store
    /// worker's thread, or at once when the read was refused.
    public func checkReadiness(_ done: @escaping @Sendable (NodeHealth) -> Void) {
        let (listening, draining) = (
            listener.withLock { $0 != nil }, sessions.withLock { $0.shuttingDown }
        )
        let clusterConnected = cluster.map { $0.isListening }
        let store = self.store
        let queued = storeWork.submit({ (try? store.latestAuditID()) != nil }) { reachable in
            done(
                NodeHealth(
                    listening: listening, draining: draining, storeReachable: reachable,
                    clusterConnected: clusterConnected))
        }
        if !queued {
            done(
                NodeHealth(
                    listening: listening, draining: draining, storeReachable: false, clusterConnected: clusterConnected))
        }
    }

    /// The device port actually listened on (useful with port 0).
    public var port: UInt16? { listener.withLock { $0?.localAddress.port } }

    /// What the store writer did so far (for benchmarks and diagnostics).
    public var storeStatistics: (applied: Int, failed: Int, transactions: Int, largestBatch: Int, queued: Int) {
        let statistics = store.statistics
        return (
            statistics.jobsApplied, statistics.jobsFailed, statistics.transactions, statistics.largestBatch,
            statistics.queued
        )
    }

    /// Stops listening and drains (SPEC §15.5 "Drain"): a node of a cluster hands each session that can resume over to
    /// the other nodes (GOAWAY `going_away` + `resume_elsewhere`, after its state and the release of its presence are
    /// committed); every other session ends with `going_away` (SESSION_END, then GOAWAY). Then it writes what is
    /// queued and stops the loops. Call it from outside the node's loops.
    public func shutdown() {
        if let sweep = sweeper.withLock({ $0.take() }) {
            // On the sweep's loop, after a sweep running now (which arms the next): whichever timer is armed goes.
            sweep.loop.execute {
                sweep.value?.cancel()
                sweep.value = nil
            }
        }
        drain()
        if ownsLoops { group.shutdown() }
        stopClusterListener()
        // What the audit windows held back is written before the store stops (its writer drains what is queued).
        let now = clock.wallTime
        let closing = sessions.withLock { $0.registry.closeAuditWindows(now: now) }
        if !closing.isEmpty, !store.submit(closing, deferrable: false, completion: { _ in }) {
            logger.log(.warning, "audit trail: the aggregate rows of \(closing.count) open windows could not be queued")
        }
        store.stop()
        passwords.stop()
        storeWork.stop()
        eventContinuation.finish()
    }

    /// The first part of ``shutdown()``: stops listening for devices and drains their links (SPEC §15.5 "Drain"),
    /// waiting up to 1 s for them to close; the store, the loops and every front end still run, and readiness says
    /// `draining` from now on. A front end (the REST API) can then stop on a node that still records what it does.
    /// Only the first call does anything. Call it from outside the node's loops.
    public func drain() {
        let links = sessions.withLock { state -> [DeviceConnection]? in
            guard !state.shuttingDown else { return nil }
            state.shuttingDown = true
            return Array(state.links.values)
        }
        listener.withLock {
            $0?.close()
            $0 = nil
        }
        guard let links else { return }
        // A drain: sessions that can resume are handed over (several nodes), the others end with `going_away`.
        for connection in links { connection.drain() }
        // Let the audit records, SESSION_ENDs, GOAWAYs and close_notify leave before the loops stop.
        let deadline = Deadline.now() + .milliseconds(1000)
        while Deadline.now() < deadline, links.contains(where: { !$0.link.isTransportClosed }) {
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
    }

    // MARK: API tokens

    /// Issues a new API token of `scope`. Only its SHA-256 digest is kept (durably, with a public id); the issuance is
    /// audited. Show the token to its owner once. Writes to the store directly: not on a node's loop.
    public func issueAPIToken(scope: APITokenScope = .device, label: String? = nil, by actor: AuditActor = .local)
        throws(SupporterNodeError) -> String
    {
        let token = APITokenStore.makeToken(scope: scope)
        try addAPIToken(token, scope: scope, label: label, by: actor)
        return token
    }

    /// Accepts an API token made elsewhere (configuration). Refused when shorter than
    /// ``APITokenStore/minimumTokenLength`` or revoked. Audited. Not on a node's loop.
    @discardableResult
    public func addAPIToken(
        _ token: String, scope: APITokenScope = .device, label: String? = nil, by actor: AuditActor = .local
    ) throws(SupporterNodeError) -> APITokenRecord {
        do throws(APITokenError) { try APITokenStore.validate(token) } catch {
            throw SupporterNodeError(error.description, kind: .invalid)
        }
        let digest = APITokenStore.digest(of: token)
        let now = clock.wallTime
        let record: APITokenRecord
        do throws(StoreError) {
            record = try store.addToken(digest: digest, scope: scope, label: label, createdAt: now) { record in
                var details = actor.details
                details["token"] = record.id
                details["scope"] = scope.rawValue
                if let label { details["label"] = label }
                return AuditEvent(time: now, kind: .tokenIssued, details: details)
            }.record
        } catch {
            throw SupporterNodeError(store: error)
        }
        sessions.withLock { $0.tokens.add(digest: digest, record: record) }
        return record
    }

    /// Every token the node knows (revoked ones too), oldest first; never the tokens themselves.
    public func apiTokens() throws(SupporterNodeError) -> [APITokenRecord] {
        do throws(StoreError) { return try store.tokens() } catch { throw SupporterNodeError(store: error) }
    }

    /// Revokes the token with public id `id` at once: it never authenticates again (devices already registered with
    /// it stay until they leave). Audited. Not on a node's loop.
    public func revokeAPIToken(id: String, by actor: AuditActor = .local) throws(SupporterNodeError) {
        let now = clock.wallTime
        let revoked: Bool
        do throws(StoreError) {
            var details = actor.details
            details["token"] = id
            revoked = try store.revokeToken(
                id: id, at: now, audit: AuditEvent(time: now, kind: .tokenRevoked, details: details))
        } catch {
            throw SupporterNodeError(store: error)
        }
        guard revoked else { throw SupporterNodeError("no active token has the id \(id)", kind: .notFound) }
        sessions.withLock { _ = $0.tokens.remove(id: id) }
        logger.log(.info, "API token \(id) revoked")
    }

    /// The scope of `token`, if the node accepts it.
    public func scope(ofToken token: String) -> APITokenScope? { sessions.withLock { $0.tokens.scope(of: token) } }

    /// The record (public id, scope) of `token`, if the node accepts it.
    public func tokenRecord(of token: String) -> APITokenRecord? { sessions.withLock { $0.tokens.record(of: token) } }

    // MARK: events and audit

    /// The audit trail, oldest first, filtered by code and time (`from` included, `to` excluded).
    public func auditEvents(
        code: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int = 1000, afterID: Int64? = nil,
        beforeID: Int64? = nil, newestFirst: Bool = false
    ) throws(SupporterNodeError) -> [AuditEvent] {
        do throws(StoreError) {
            return try store.auditEvents(
                code: code, from: from, to: to, limit: limit, afterID: afterID, beforeID: beforeID,
                newestFirst: newestFirst)
        } catch {
            throw SupporterNodeError(store: error)
        }
    }

    /// The id of the newest audit event (0 when there is none).
    public func latestAuditID() throws(SupporterNodeError) -> Int64 {
        do throws(StoreError) { return try store.latestAuditID() } catch { throw SupporterNodeError(store: error) }
    }

    public func codeReadingStore(_ code: String) throws(SupporterNodeError) -> SessionCodeInfo? {
        if let info = self.code(code) { return info }
        do throws(StoreError) {
            return try store.code(code).map { SessionCodeInfo(stored: $0, now: clock.wallTime) }
        } catch {
            throw SupporterNodeError(store: error)
        }
    }

    public func sessionContents(auditIDs: [Int64]) throws(SupporterNodeError) -> [Int64: StoredSessionContent] {
        guard !auditIDs.isEmpty else { return [:] }
        do throws(StoreError) { return try store.contents(auditIDs: auditIDs, fileBytes: false) } catch {
            throw SupporterNodeError(store: error)
        }
    }

    public func sessionFile(auditID: Int64) throws(SupporterNodeError) -> StoredSessionContent? {
        let found: StoredSessionContent?
        do throws(StoreError) { found = try store.contents(auditIDs: [auditID], fileBytes: true)[auditID] } catch {
            throw SupporterNodeError(store: error)
        }
        guard let found, case .file = found.content.body else { return nil }
        return found
    }

    /// Appends `events` to the audit trail; returns once they are durable. For services beside the node that refuse
    /// things on its behalf (the REST API's failed authentications); the node audits its own changes itself.
    public func appendAudit(_ events: [AuditEvent]) async throws(SupporterNodeError) {
        try await commit(events.map { .audit($0) })
    }

    /// Writes `intents` and waits for the commit; the caller acknowledges only after this returns.
    func commit(_ intents: [StoreIntent]) async throws(SupporterNodeError) {
        guard !intents.isEmpty else { return }
        do throws(StoreError) { try await store.write(intents) } catch {
            throw SupporterNodeError(store: error)
        }
    }

    /// Yields an event to ``events``. Called only after the event's audit record is durable.
    func yield(_ event: SupporterNodeEvent) {
        if case .dropped = eventContinuation.yield(event) { droppedEventCount.add(1, ordering: .relaxed) }
    }

    private let droppedEventCount = Atomic<Int>(0)

    /// Events ``events`` dropped so far because ``unreadEventLimit`` were unread (the oldest go first): a reader
    /// that falls behind says how many it missed instead of missing them silently. The audit trail has them all.
    public var droppedEvents: Int { droppedEventCount.load(ordering: .relaxed) }

    /// Once a second, on the sweep's loop: expiries, refusal-audit windows, back-off decay (one take of the session
    /// lock), then sign-in limits and login sessions (one take of the people lock, after the first is released). Only
    /// in-memory work under the locks and store submissions (which never wait) here; the expiries, which wait for
    /// their commits, run in a task.
    func tick() {
        handshakeLog.flush()
        let now = clock.wallTime
        let (expiring, intents, unresumed) = sessions.withLock { state in
            let (expiring, intents) = state.registry.tick(now: now)
            return (expiring, intents, state.registry.expireUnresumed(now: now))
        }
        if !intents.isEmpty { _ = store.submit(intents, deferrable: false) { _ in } }
        if !unresumed.intents.isEmpty {
            // Told once the end rows are durable, like any session's end.
            _ = store.submit(unresumed.intents, deferrable: false) { [self] error in
                guard error == nil else { return }
                for code in unresumed.ended {
                    yield(
                        SupporterNodeEvent(
                            code: code, event: .ended(reason: .connectionLost, text: CodeRegistry.unresumedText),
                            deviceName: nil))
                }
            }
        }
        let signInRows = accountsTick(now: now)
        if !signInRows.isEmpty { _ = store.submit(signInRows, deferrable: false) { _ in } }
        guard !expiring.isEmpty else { return }
        Task { [self] in
            for code in expiring { try? await expireCode(code, by: .node) }
        }
    }

    /// The connection closed: forget it.
    func connectionClosed(_ connection: DeviceConnection) {
        sessions.withLock { state in
            state.registry.connectionClosed(connection.id)
            state.links[connection.id] = nil
        }
    }
}

/// The node is what the REST API and the web console are built on.
extension SupporterNode: SupporterService {}

/// The loops that have not answered ``SupporterNode/whenLoopsRespond(_:)`` yet.
private final class LoopCountdown: Sendable {
    let left: Atomic<Int>
    init(_ count: Int) { left = Atomic(count) }
}
