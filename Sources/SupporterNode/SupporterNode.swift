import Foundation
import Glibc
import Synchronization
import SupportHTTP
import SupportSession
import SupportTransport

/// The supporter node: listens for devices over TLS, keeps the durable registry of session codes, API tokens, bans
/// and the audit trail, lets supporters request, abort and end sessions, and serves the REST API.
///
/// Thread-safe: every method may be called from any thread or task. Events arrive in order on ``events``; each is in
/// the audit trail before it is yielded.
public final class SupporterNode: Sendable {
    public let configuration: SupporterNodeConfiguration
    let logger: NodeLogger
    let group: EventLoopGroup
    private let context: TLSContext
    private let listener = Mutex<TLSListener?>(nil)
    private let restServer = Mutex<HTTPServer?>(nil)
    private let sweeper = Mutex<Task<Void, Never>?>(nil)
    let store: SessionStore
    let state: Mutex<RegistryState>
    private let eventContinuation: AsyncStream<SupporterNodeEvent>.Continuation
    /// Every event, in the order it happened on each code. At most ``unreadEventLimit`` unread events are kept (the
    /// oldest are dropped first); ``auditEvents(code:from:to:limit:afterID:)`` has them all.
    public let events: AsyncStream<SupporterNodeEvent>
    /// How many unread events ``events`` keeps.
    public static let unreadEventLimit = 65_536

    struct RegistryState: ~Copyable {
        var codes: [String: CodeEntry] = [:]
        /// The device connection on each code.
        var connections: [String: DeviceConnection] = [:]
        /// Every open device link, registered or not, so shutdown can close them.
        var links: [ObjectIdentifier: DeviceConnection] = [:]
        var tokens = APITokenStore()
        var backoff: RegistrationBackoff
    }

    /// Opens the store (creating or migrating it) and loads codes, token digests and bans; checks the TLS
    /// configuration. Nothing listens until ``start()``.
    public init(configuration: SupporterNodeConfiguration) throws(SupporterNodeError) {
        self.configuration = configuration
        self.logger = configuration.logger
        do {
            self.context = try TLSContext(configuration.tls)
            self.group = try EventLoopGroup(loopCount: configuration.loopCount)
        } catch {
            throw SupporterNodeError(transport: error)
        }
        do {
            store = try SessionStore(path: configuration.storePath, durability: configuration.durability)
            var registry = RegistryState(backoff: configuration.backoff)
            let now = Date()
            for record in try store.allRecords() {
                var entry = CodeEntry(record: record)
                entry.expiryRecorded = record.isClosed || now >= record.validUntil
                registry.codes[record.code] = entry
            }
            for scope in APITokenScope.allCases {
                for digest in try store.tokenDigests(scope: scope) { registry.tokens.add(digest: digest, scope: scope) }
            }
            for row in try store.loadBackoff() {
                registry.backoff.restore(
                    key: row.key, failures: row.failures, blockedUntil: row.blockedUntil.map(Self.wallClock),
                    lastFailure: Self.wallClock(row.lastFailure))
            }
            self.state = Mutex(registry)
        } catch {
            group.shutdown()
            throw SupporterNodeError(store: error)
        }
        // Bounded: a node whose owner never reads `events` must not grow without end. The audit trail is the
        // complete, durable record; the stream keeps the newest unread events.
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(Self.unreadEventLimit))
    }

    /// Wall-clock time as the back-off's clock (time since 1970).
    static func wallClock(_ date: Date = Date()) -> Duration { .milliseconds(date.unixMilliseconds) }

    /// Binds the device address (and the REST API's) and starts serving.
    public func start() throws(SupporterNodeError) {
        var settings = LinkSettings(role: .supporter, nodeName: configuration.nodeName)
        settings.keepaliveInterval = configuration.keepaliveInterval
        do {
            let created = try TLSListener(
                host: configuration.host, port: configuration.port, context: context, settings: settings, group: group
            ) { [weak self] link in
                guard let self else { return false }
                let connection = DeviceConnection(
                    link: link, node: self, requestTimeout: self.configuration.requestTimeout)
                link.delegate = connection
                self.state.withLock { $0.links[ObjectIdentifier(connection)] = connection }
                return true
            }
            listener.withLock { $0 = created }
            logger.log(.info, "supporter node listening for devices on \(created.localAddress)")
            if let rest = configuration.restAPI {
                let server = try RESTAPI(node: self).serve(rest, tls: configuration.tls, group: group)
                restServer.withLock { $0 = server }
                logger.log(.info, "REST API on https://\(server.localAddress)/api/v1")
            }
        } catch {
            throw SupporterNodeError(transport: error)
        }
        // Codes reach their end of validity while devices sit on them: tell those devices once a second.
        sweeper.withLock {
            $0 = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    await self?.expireDueCodes()
                }
            }
        }
    }

    /// The device port actually listened on (useful with port 0).
    public var port: UInt16? { listener.withLock { $0?.localAddress.port } }

    /// The REST API's port, when it is served.
    public var restPort: UInt16? { restServer.withLock { $0?.localAddress.port } }

    /// Stops listening, ends every session with `going_away`, closes every link and the store's connection, and stops
    /// the loops. Call it from outside the node's loops.
    public func shutdown() {
        sweeper.withLock {
            $0?.cancel()
            $0 = nil
        }
        restServer.withLock {
            $0?.close()
            $0 = nil
        }
        listener.withLock {
            $0?.close()
            $0 = nil
        }
        let links = state.withLock { state in
            let all = Array(state.links.values)
            state.links.removeAll()
            return all
        }
        for connection in links { connection.link.close(reason: .goingAway, text: "the supporter node shuts down") }
        // Let the GOAWAYs and close_notify leave before the loops stop.
        let deadline = Deadline.now() + .milliseconds(500)
        while Deadline.now() < deadline, links.contains(where: { !$0.link.isTransportClosed }) {
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
        group.shutdown()
        eventContinuation.finish()
    }

    // MARK: API tokens

    /// Issues a new API token of `scope`. Only its SHA-256 digest is kept (durably); show the token to its owner once.
    public func issueAPIToken(scope: APITokenScope = .device, label: String? = nil) throws(SupporterNodeError) -> String {
        let token = APITokenStore.makeToken(scope: scope)
        try addAPIToken(token, scope: scope, label: label)
        return token
    }

    /// Accepts an API token made elsewhere (configuration).
    public func addAPIToken(_ token: String, scope: APITokenScope = .device, label: String? = nil)
        throws(SupporterNodeError)
    {
        let digest = APITokenStore.digest(of: token)
        do throws(StoreError) { try store.addTokenDigest(digest, scope: scope, label: label, createdAt: Date()) } catch {
            throw SupporterNodeError(store: error)
        }
        state.withLock { $0.tokens.add(digest: digest, scope: scope) }
    }

    /// The scope of `token`, if the node knows it (constant-time comparison).
    public func scope(ofToken token: String) -> APITokenScope? { state.withLock { $0.tokens.scope(of: token) } }

    // MARK: events and audit

    /// Appends to the audit trail; a failure is logged, never thrown into the protocol path.
    func audit(_ kind: AuditEvent.Kind, code: String?, _ details: [String: String] = [:], time: Date = Date()) {
        do throws(StoreError) { _ = try store.append(AuditEvent(time: time, code: code, kind: kind, details: details)) } catch {
            logger.log(.error, "audit trail: cannot append \(kind): \(error)")
        }
    }

    /// The audit trail, oldest first, filtered by code and time (`from` included, `to` excluded).
    public func auditEvents(
        code: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int = 1000, afterID: Int64? = nil
    ) throws(SupporterNodeError) -> [AuditEvent] {
        do throws(StoreError) { return try store.auditEvents(code: code, from: from, to: to, limit: limit, afterID: afterID) } catch {
            throw SupporterNodeError(store: error)
        }
    }

    /// Records `event` in the audit trail, then yields it.
    func report(_ event: SupporterNodeEvent, sourceAddress: String) {
        recordAudit(of: event, sourceAddress: sourceAddress)
        eventContinuation.yield(event)
    }
}
