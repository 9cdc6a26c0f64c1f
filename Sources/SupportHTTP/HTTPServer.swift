import Synchronization
public import SupportRuntime
import SupportUtilities

/// A small, strict HTTP/1.1 server over TLS: one ``HTTPRequest`` at a time per connection, answered by an async
/// handler.
///
/// Every accepted TLS connection is parsed on its event loop by ``HTTPRequestParser``; each complete request is handed
/// to the handler in a `Task`, and the answer hops back to the loop to be written. Pipelined requests wait their
/// turn, in order. Malformed requests get their status (400, 408, 413, 414, 417, 431, 501, 505) with a JSON error body
/// and `Connection: close`. See ``HTTPServerConfiguration`` for the limits and timeouts.
///
/// Connections beyond ``HTTPServerConfiguration/maxConnectionsPerAddress`` from one peer address key are closed as
/// soon as they are accepted, before any TLS work (``refusedConnections`` counts them). When
/// ``HTTPServerConfiguration/maxConnections`` are open, a newcomer from a key holding fewer connections than the
/// biggest holder takes the slot of that holder's oldest idle connection (still in TLS, waiting for or dribbling a
/// request head, or kept alive between requests), which is closed (``evictedConnections``); otherwise it is refused
/// too. So a few dozen addresses cannot hold the cap against a newcomer.
public final class HTTPServer: Sendable {
    /// Answers one request. Runs off the event loops, so it may await; it cannot throw, and a slow one is answered
    /// for with 503 after ``HTTPServerConfiguration/handlerTimeout``.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// The bound address (with the real port when 0 was asked for).
    public let localAddress: SocketAddress
    /// The limits and timeouts in force.
    public let configuration: HTTPServerConfiguration
    private let listener: TLSListener
    private let registry: HTTPConnectionRegistry

    /// The TLS settings an HTTP server needs: the certificate and key, ALPN `http/1.1` offered but not required
    /// (most HTTP/1.1 clients send no ALPN).
    public static func makeTLSConfiguration(certificateChain: PEMSource, privateKey: PEMSource) -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: certificateChain, privateKey: privateKey)
        tls.applicationProtocol = "http/1.1"
        tls.requiresApplicationProtocol = false
        return tls
    }

    /// Binds `host:port` (port 0: any free port) and starts serving.
    ///
    /// - Parameters:
    ///   - context: a server context whose ALPN is `http/1.1` and not required (see ``makeTLSConfiguration(certificateChain:privateKey:)``);
    ///     anything else throws `invalid_configuration`, since HTTP clients would be refused.
    ///   - group: the loops connections are spread over.
    ///   - onHandshakeFailure: every failed or timed-out TLS handshake, with the peer's address and the reason.
    ///   - handler: answers each request.
    public init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup,
        configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
        onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)? = nil, handler: @escaping Handler
    ) throws(TransportError) {
        try Self.check(context)
        let registry = HTTPConnectionRegistry(configuration)
        self.registry = registry
        self.configuration = configuration
        listener = try TLSListener(
            host: host, port: port, context: context, group: group, backlog: configuration.backlog,
            maxBufferedBytes: configuration.maxBufferedBytes, idleTimeout: nil, onHandshakeFailure: onHandshakeFailure
        ) { stream in
            let address = stream.peerAddress.map { IPAddressText.canonical($0.host) ?? $0.host } ?? "unknown"
            let connection = HTTPConnection(
                stream: stream, configuration: configuration, handler: handler, registry: registry)
            guard registry.admit(connection, address: address) else { return false }
            stream.delegate = connection
            connection.start()
            return true
        }
        localAddress = listener.localAddress
    }

    /// A context HTTP clients can speak to, or `invalid_configuration`.
    private static func check(_ context: TLSContext) throws(TransportError) {
        let tls = context.configuration
        guard tls.isServer, tls.applicationProtocol == "http/1.1", !tls.requiresApplicationProtocol else {
            throw TransportError(
                .invalidConfiguration,
                "an HTTP server needs a server TLS configuration with applicationProtocol \"http/1.1\" and "
                    + "requiresApplicationProtocol false (HTTPServer.makeTLSConfiguration does this)")
        }
    }

    /// From now on new connections use `context` (a certificate rotated on SIGHUP); open ones keep theirs. Throws,
    /// changing nothing, for a context the initializer would refuse.
    public func replaceContext(_ context: TLSContext) throws(TransportError) {
        try Self.check(context)
        try listener.replaceContext(context)
    }

    /// Open connections now.
    public var connectionCount: Int { registry.count }

    /// Connections closed at once since the server started because a connection cap was reached.
    public var refusedConnections: Int { registry.refused }

    /// Idle connections closed since the server started to make room for a newcomer from a smaller holder (fair
    /// shares of ``HTTPServerConfiguration/maxConnections``; see ``HTTPServer``).
    public var evictedConnections: Int { registry.evicted }

    /// Open connections now that are idle (evictable: not in the middle of a request or its answer). For tests.
    var idleConnectionCount: Int { registry.idle }

    /// Stops accepting and closes every connection (cleanly, after what was written is sent); running handlers are
    /// cancelled and their answers dropped. Safe to call twice.
    public func close() {
        listener.close()
        for connection in registry.closeAll() { connection.shutdown() }
    }

    deinit { close() }
}

/// The open connections: their count for the caps (in all and per peer address key), and a strong reference to each
/// (a stream holds its delegate weakly) until it closes.
///
/// Fair shares (issue 20, finding 4): when the global cap is full, a newcomer whose key holds fewer connections than
/// the biggest holder (even once admitted: at least two fewer now) does not get refused; the biggest holder's oldest *idle* connection is evicted (closed) and the
/// newcomer takes its slot. Idle means not in the middle of a request or its answer: still in its TLS handshake,
/// waiting for (or dribbling) a request head, or kept alive between requests. A connection receiving a body, whose
/// request is being answered, or that carries an event stream is busy and never evicted. So a few dozen addresses
/// holding idle connections cannot keep a newcomer out; only when every connection of every bigger holder is busy is
/// the newcomer refused. Exempt proxies' connections are never evicted.
/// One of the server's large-body slots, with the address key it counts against.
struct LargeBodySlot: Sendable {
    let key: String?
}

final class HTTPConnectionRegistry: Sendable {
    private struct Entry {
        let connection: HTTPConnection
        /// The key it counts against in `perAddress` (nil for an exempt proxy's).
        let key: String?
        /// Admission order: the lowest is the oldest.
        let order: UInt64
        /// In the middle of a request or its answer (or streaming): not evictable.
        var busy = false
    }

    private struct State {
        var connections: [ObjectIdentifier: Entry] = [:]
        var perAddress: [String: Int] = [:]
        var nextOrder: UInt64 = 0
        var refused = 0
        var evicted = 0
        var closed = false
        var largeBodies = 0
        var largeBodiesByKey: [String: Int] = [:]

        mutating func forget(_ id: ObjectIdentifier) {
            guard let entry = connections.removeValue(forKey: id), let key = entry.key else { return }
            let left = perAddress[key, default: 1] - 1
            perAddress[key] = left > 0 ? left : nil
        }

        /// The oldest idle connection of the biggest holder holding more than `newcomer` + 1, if any;
        /// O(connections), and only run when the cap is full.
        func victim(holdingMoreThan newcomer: Int) -> ObjectIdentifier? {
            var best: (id: ObjectIdentifier, held: Int, order: UInt64)?
            for (id, entry) in connections where !entry.busy {
                // Admitted, the newcomer must still hold fewer than the holder it takes from: holders of about the
                // same size never take slots from each other in turn.
                guard let key = entry.key, let held = perAddress[key], held > newcomer + 1 else { continue }
                if let current = best, current.held > held || current.held == held && current.order < entry.order {
                    continue
                }
                best = (id, held, entry.order)
            }
            return best?.id
        }
    }
    private let state = Mutex(State())
    let maxConnections: Int
    let maxConnectionsPerAddress: Int
    let maxLargeBodies: Int
    let maxLargeBodiesPerAddress: Int
    /// Canonical addresses exempt from the per-address cap.
    let unlimited: Set<String>

    init(_ configuration: HTTPServerConfiguration) {
        maxConnections = configuration.maxConnections
        maxConnectionsPerAddress = configuration.maxConnectionsPerAddress
        maxLargeBodies = configuration.maxLargeBodies
        maxLargeBodiesPerAddress = configuration.maxLargeBodiesPerAddress
        unlimited = Set(configuration.addressesWithoutPerAddressLimit.map { IPAddressText.canonical($0) ?? $0 })
    }

    var count: Int { state.withLock { $0.connections.count } }
    var refused: Int { state.withLock { $0.refused } }
    var evicted: Int { state.withLock { $0.evicted } }
    var idle: Int { state.withLock { $0.connections.values.count(where: { !$0.busy }) } }

    /// Registers `connection` from `address` (canonical) unless the server is closed, its key's cap is reached, or the
    /// global cap is reached and no bigger holder has an idle connection to evict (see the type's comment). The
    /// per-address cap counts the address's key (``IPAddressText/sourceKey(_:)``: an IPv6 peer's whole /64). An exempt
    /// proxy is exempt by its own address, and its connections do not count against its neighbours' key.
    func admit(_ connection: HTTPConnection, address: String) -> Bool {
        let key = unlimited.contains(address) ? nil : IPAddressText.sourceKey(address)
        let (admitted, victim) = state.withLock { state -> (Bool, HTTPConnection?) in
            guard !state.closed else { return (false, nil) }
            let fromAddress = key.map { state.perAddress[$0, default: 0] } ?? 0
            guard key == nil || fromAddress < maxConnectionsPerAddress else {
                state.refused += 1
                return (false, nil)
            }
            var victim: HTTPConnection?
            if state.connections.count >= maxConnections {
                // Most refusals are decided by the per-key counts alone (O(keys)): a newcomer as big as every other
                // holder — an attacker reconnecting — never reaches the scan of the connections.
                guard state.perAddress.values.contains(where: { $0 > fromAddress + 1 }),
                    let id = state.victim(holdingMoreThan: fromAddress)
                else {
                    state.refused += 1
                    return (false, nil)
                }
                victim = state.connections[id]?.connection
                state.forget(id)
                state.evicted += 1
            }
            state.nextOrder += 1
            state.connections[ObjectIdentifier(connection)] = Entry(connection: connection, key: key, order: state.nextOrder)
            if let key { state.perAddress[key] = fromAddress + 1 }
            return (true, victim)
        }
        victim?.evict()
        return admitted
    }

    /// The connection started (`busy`) or finished (`!busy`) a request or its answer.
    func setBusy(_ connection: HTTPConnection, _ busy: Bool) {
        state.withLock { $0.connections[ObjectIdentifier(connection)]?.busy = busy }
    }

    /// Takes one of the ``HTTPServerConfiguration/maxLargeBodies`` slots for `connection`; false when all are taken,
    /// or its address key holds ``HTTPServerConfiguration/maxLargeBodiesPerAddress`` already.
    /// Returns the slot's holder (the address key it counts against, nil for none), or nil when refused.
    func acquireLargeBody(_ connection: HTTPConnection) -> LargeBodySlot? {
        state.withLock { state in
            guard state.largeBodies < maxLargeBodies else { return nil }
            let key = state.connections[ObjectIdentifier(connection)]?.key
            if let key {
                guard state.largeBodiesByKey[key, default: 0] < maxLargeBodiesPerAddress else { return nil }
                state.largeBodiesByKey[key, default: 0] += 1
            }
            state.largeBodies += 1
            return LargeBodySlot(key: key)
        }
    }

    /// Gives back a slot ``acquireLargeBody(_:)`` handed out (whether or not its connection is still registered).
    func releaseLargeBody(_ slot: LargeBodySlot) {
        state.withLock { state in
            state.largeBodies -= 1
            if let key = slot.key {
                let left = state.largeBodiesByKey[key, default: 1] - 1
                state.largeBodiesByKey[key] = left > 0 ? left : nil
            }
        }
    }

    func remove(_ connection: HTTPConnection) {
        state.withLock { $0.forget(ObjectIdentifier(connection)) }
    }

    /// Refuses new connections from now on and returns the open ones.
    func closeAll() -> [HTTPConnection] {
        state.withLock { state in
            state.closed = true
            return state.connections.values.map(\.connection)
        }
    }
}
