import Glibc
import Synchronization
import SupportSession
import SupportTransport

/// The supporter node: listens for devices over TLS, keeps the registry of session codes and API tokens, and lets
/// supporters request, abort and end sessions.
///
/// Thread-safe: every method may be called from any thread or task. Events arrive in order on ``events``.
public final class SupporterNode: Sendable {
    public let configuration: SupporterNodeConfiguration
    let logger: NodeLogger
    private let group: EventLoopGroup
    private let context: TLSContext
    private let listener = Mutex<TLSListener?>(nil)
    private let sweeper = Mutex<Task<Void, Never>?>(nil)
    private let state: Mutex<RegistryState>
    private let eventContinuation: AsyncStream<SupporterNodeEvent>.Continuation
    /// Every event, in the order it happened on each code.
    public let events: AsyncStream<SupporterNodeEvent>

    struct RegistryState: ~Copyable {
        var codes: [String: SessionCodeInfo] = [:]
        /// The device connection on each code.
        var connections: [String: DeviceConnection] = [:]
        /// Every open device link, registered or not, so shutdown can close them.
        var links: [ObjectIdentifier: DeviceConnection] = [:]
        var tokens = APITokenStore()
        var backoff: RegistrationBackoff
    }

    /// Makes a node; nothing listens until ``start()``. TLS configuration errors are thrown here.
    public init(configuration: SupporterNodeConfiguration) throws(TransportError) {
        self.configuration = configuration
        self.logger = configuration.logger
        self.context = try TLSContext(configuration.tls)
        self.group = try EventLoopGroup(loopCount: configuration.loopCount)
        self.state = Mutex(RegistryState(backoff: configuration.backoff))
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Binds the listen address and starts accepting devices.
    public func start() throws(TransportError) {
        var settings = LinkSettings(role: .supporter, nodeName: configuration.nodeName)
        settings.keepaliveInterval = configuration.keepaliveInterval
        let created = try TLSListener(
            host: configuration.host, port: configuration.port, context: context, settings: settings, group: group
        ) { [weak self] link in
            guard let self else { return false }
            let connection = DeviceConnection(link: link, node: self, requestTimeout: self.configuration.requestTimeout)
            link.delegate = connection
            self.state.withLock { $0.links[ObjectIdentifier(connection)] = connection }
            return true
        }
        listener.withLock { $0 = created }
        logger.log(.info, "supporter node listening on \(created.localAddress)")
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

    /// Ends the registrations on codes whose validity ran out (SESSION_END `session_code_expired`).
    func expireDueCodes() async {
        let now = DeviceConnection.now()
        let due = state.withLock { state in
            state.connections.keys.filter { code in state.codes[code].map { now >= $0.validUntil } ?? false }
        }
        for code in due { try? await expireCode(code) }
    }

    /// The port actually listened on (useful with port 0).
    public var port: UInt16? { listener.withLock { $0?.localAddress.port } }

    /// Stops listening, ends every session with `going_away`, closes every link and stops the loops.
    public func shutdown() {
        sweeper.withLock {
            $0?.cancel()
            $0 = nil
        }
        listener.withLock {
            $0?.close()
            $0 = nil
        }
        let links = state.withLock { state in
            let all = Array(state.links.values)
            state.links.removeAll()
            state.connections.removeAll()
            return all
        }
        for connection in links { connection.link.close(reason: .goingAway, text: "the supporter node shuts down") }
        // Let the GOAWAYs and close_notify leave before the loops stop.
        let deadline = Deadline.now() + .milliseconds(500)
        while Deadline.now() < deadline, links.contains(where: { !$0.link.isTransportClosed }) {
            usleepShort()
        }
        group.shutdown()
        eventContinuation.finish()
    }

    // MARK: API tokens

    /// Issues a new API token. Only its SHA-256 digest is kept; show the token to its owner once.
    public func issueAPIToken() -> String { state.withLock { $0.tokens.issue() } }

    /// Accepts an API token made elsewhere (configuration).
    public func addAPIToken(_ token: String) { state.withLock { $0.tokens.add(token) } }

    // MARK: codes

    /// Creates a code of `type`, valid for `lifetime` (default from the configuration).
    @discardableResult
    public func createCode(
        type: SessionCodeType = .remoteSupport, description: String? = nil, lifetime: Duration? = nil
    ) -> SessionCodeInfo {
        let now = DeviceConnection.now()
        return state.withLock { state in
            var code = SessionCodeFormat.generate()
            while state.codes[code] != nil { code = SessionCodeFormat.generate() }
            let info = SessionCodeInfo(
                code: code, type: type, description: description, createdAt: now,
                validUntil: now + (lifetime ?? configuration.defaultCodeLifetime), closedAt: nil, state: .open)
            state.codes[code] = info
            logger.log(.info, "code \(Redact.code(code)) created (\(type))")
            return info
        }
    }

    /// Every code with its live state.
    public func codes() -> [SessionCodeInfo] {
        let now = DeviceConnection.now()
        return state.withLock { state in
            state.codes.values.map { Self.refreshed($0, now: now) }.sorted { $0.createdAt < $1.createdAt }
        }
    }

    /// One code with its live state.
    public func code(_ code: String) -> SessionCodeInfo? {
        let now = DeviceConnection.now()
        return state.withLock { state in state.codes[code].map { Self.refreshed($0, now: now) } }
    }

    private static func refreshed(_ info: SessionCodeInfo, now: Duration) -> SessionCodeInfo {
        var info = info
        if info.closedAt != nil {
            info.state = .closed
        } else if now >= info.validUntil, info.state == .open {
            info.state = .expired
        }
        return info
    }

    /// Closes a code: a device on it is told (SESSION_END `session_code_closed`); it can never be joined again.
    public func closeCode(_ code: String) async throws(SupporterNodeError) {
        try await finishCode(code, reason: .sessionCodeClosed)
    }

    /// Expires a code now: like closing, with `session_code_expired`.
    public func expireCode(_ code: String) async throws(SupporterNodeError) {
        try await finishCode(code, reason: .sessionCodeExpired)
    }

    private func finishCode(_ code: String, reason: ReasonCode) async throws(SupporterNodeError) {
        let now = DeviceConnection.now()
        let connection = try state.withLock { state throws(SupporterNodeError) -> DeviceConnection? in
            guard var info = state.codes[code] else { throw SupporterNodeError("no such code") }
            if reason == .sessionCodeClosed {
                info.closedAt = now
                info.state = .closed
            } else {
                info.validUntil = now
                info.state = .expired
            }
            state.codes[code] = info
            return state.connections[code]
        }
        logger.log(.info, "code \(Redact.code(code)) \(reason == .sessionCodeClosed ? "closed" : "expired")")
        guard let connection else { return }
        _ = try? await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.end(reason: reason), ())
        }
    }

    // MARK: sessions

    private func connection(for code: String) throws(SupporterNodeError) -> DeviceConnection {
        guard let connection = state.withLock({ $0.connections[code] }) else {
            throw SupporterNodeError("no device is online on code \(Redact.code(code))")
        }
        return connection
    }

    /// Sends a connection request to the device on `code` as `supporterName`; returns the request id. The answer
    /// arrives as an event (`connected`, `rejected`, `requestTimedOut`).
    @discardableResult
    public func requestConnection(
        code: String, supporterName: String, type: ConnectionType, features: FeatureSet = []
    ) async throws(SupporterNodeError) -> UInt32 {
        guard (1...WireLimits.nameLength).contains(supporterName.utf8.count) else {
            throw SupporterNodeError("a supporter name has 1 to \(WireLimits.nameLength) bytes")
        }
        let connection = try connection(for: code)
        let id = try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            let actions = try machine.requestConnection(
                supporterName: supporterName, type: type, features: features, now: DeviceConnection.now())
            var id: UInt32 = 0
            if case .requestPending(_, let request, _) = machine.state { id = request.requestID }
            return (actions, id)
        }
        state.withLock { $0.codes[code]?.assignedSupporter = supporterName }
        logger.log(.info, "code \(Redact.code(code)): request \(id) sent as '\(supporterName)' (\(type))")
        return id
    }

    /// Withdraws the pending request on `code`.
    public func abortRequest(code: String) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in (try machine.abortRequest(), ()) }
    }

    /// Ends the session (or the waiting) on `code`; the device is told `ended_by_supporter`.
    public func endSession(code: String, text: String? = nil) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.end(reason: .endedBySupporter, text: text), ())
        }
    }

    // MARK: called by device connections, on their loops

    /// Decides a REGISTER: token, code, state, back-off. Runs under the registry lock.
    func authorize(_ register: Register, from connection: DeviceConnection) -> RegistrationDecision {
        let now = DeviceConnection.now()
        let code = register.sessionCode
        let addressKey = "addr:" + connection.sourceAddress
        let codeKey = "code:" + code
        return state.withLock { state -> RegistrationDecision in
            if let wait = state.backoff.retryAfter(addressKey, now: now) ?? state.backoff.retryAfter(codeKey, now: now) {
                logger.log(.warning, "registration from \(connection.sourceAddress) rate limited")
                return .refuse(.rateLimited, text: "too many failed attempts", retryAfterMilliseconds: wait.millisecondsRoundedUp)
            }
            func refuse(_ reason: ReasonCode, _ text: String) -> RegistrationDecision {
                state.backoff.recordFailure(addressKey, now: now)
                state.backoff.recordFailure(codeKey, now: now)
                logger.log(
                    .warning,
                    "registration of code \(Redact.code(code)) from \(connection.sourceAddress) refused: \(reason)")
                return .refuse(reason, text: text)
            }
            guard state.tokens.accepts(register.apiToken) else { return refuse(.invalidAPIToken, "unknown API token") }
            guard var info = state.codes[code] else { return refuse(.invalidSessionCode, "no such session code") }
            if info.closedAt != nil { return refuse(.sessionCodeClosed, "the code was closed") }
            if now >= info.validUntil { return refuse(.sessionCodeExpired, "the code expired") }
            if state.connections[code] != nil { return refuse(.sessionCodeInUse, "another device is on this code") }
            state.backoff.recordSuccess(codeKey)
            state.connections[code] = connection
            info.state = .online
            info.deviceName = connection.deviceName
            state.codes[code] = info
            logger.log(.info, "code \(Redact.code(code)) online: device '\(connection.deviceName ?? "?")'")
            return .accept(codeType: info.type)
        }
    }

    func report(_ event: SupporterNodeEvent) {
        eventContinuation.yield(event)
    }

    func updateLiveState(code: String, connection: DeviceConnection, state machineState: SupporterSessionMachine.State) {
        state.withLock { state in
            guard state.connections[code] === connection, var info = state.codes[code] else { return }
            switch machineState {
            case .idle: info.state = .open
            case .online: info.state = .online
            case .requestPending: info.state = .requestPending
            case .active: info.state = .active
            }
            state.codes[code] = info
        }
    }

    /// The device left `code` (or its link died): the code is free again and shows offline.
    func detach(_ connection: DeviceConnection, code: String) {
        state.withLock { state in
            guard state.connections[code] === connection else { return }
            state.connections[code] = nil
            if var info = state.codes[code], info.state != .closed, info.state != .expired {
                info.state = .open
                info.deviceName = nil
                state.codes[code] = info
            }
        }
        logger.log(.info, "code \(Redact.code(code)) offline")
    }

    func connectionClosed(_ connection: DeviceConnection) {
        state.withLock { _ = $0.links.removeValue(forKey: ObjectIdentifier(connection)) }
    }
}

extension Duration {
    var millisecondsRoundedUp: UInt32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return UInt32(clamping: max(0, milliseconds))
    }
}

private func usleepShort() {
    var request = timespec(tv_sec: 0, tv_nsec: 10_000_000)
    nanosleep(&request, nil)
}
