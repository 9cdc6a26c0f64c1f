import Synchronization
import SupportTransport

/// A small, strict HTTP/1.1 server over TLS: one ``HTTPRequest`` at a time per connection, answered by an async
/// handler.
///
/// Every accepted TLS connection is parsed on its event loop by ``HTTPRequestParser``; each complete request is handed
/// to the handler in a `Task`, and the answer hops back to the loop to be written. Pipelined requests wait their
/// turn, in order. Malformed requests get their status (400, 408, 413, 414, 417, 431, 501, 505) with a JSON error body
/// and `Connection: close`. See ``HTTPServerConfiguration`` for the limits and timeouts.
///
/// Connections beyond ``HTTPServerConfiguration/maxConnections`` in all, or beyond
/// ``HTTPServerConfiguration/maxConnectionsPerAddress`` from one peer address, are closed as soon as they are accepted,
/// before any TLS work (``refusedConnections`` counts them).
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
    ///   - handler: answers each request.
    public init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup,
        configuration: HTTPServerConfiguration = HTTPServerConfiguration(), handler: @escaping Handler
    ) throws(TransportError) {
        let tls = context.configuration
        guard tls.isServer, tls.applicationProtocol == "http/1.1", !tls.requiresApplicationProtocol else {
            throw TransportError(
                .invalidConfiguration,
                "an HTTP server needs a server TLS configuration with applicationProtocol \"http/1.1\" and "
                    + "requiresApplicationProtocol false (HTTPServer.makeTLSConfiguration does this)")
        }
        let registry = HTTPConnectionRegistry(configuration)
        self.registry = registry
        self.configuration = configuration
        listener = try TLSListener(
            host: host, port: port, context: context, group: group, backlog: configuration.backlog,
            maxBufferedBytes: configuration.maxBufferedBytes, idleTimeout: nil
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

    /// Open connections now.
    public var connectionCount: Int { registry.count }

    /// Connections closed at once since the server started because a connection cap was reached.
    public var refusedConnections: Int { registry.refused }

    /// Stops accepting and closes every connection (cleanly, after what was written is sent); running handlers are
    /// cancelled and their answers dropped. Safe to call twice.
    public func close() {
        listener.close()
        for connection in registry.closeAll() { connection.shutdown() }
    }

    deinit { close() }
}

/// The open connections: their count for the caps (in all and per peer address), and a strong reference to each (a
/// stream holds its delegate weakly) until it closes.
final class HTTPConnectionRegistry: Sendable {
    private struct State {
        /// Each open connection and the key it counts against in `perAddress` (nil for an exempt proxy's).
        var connections: [ObjectIdentifier: (connection: HTTPConnection, key: String?)] = [:]
        var perAddress: [String: Int] = [:]
        var refused = 0
        var closed = false
    }
    private let state = Mutex(State())
    let maxConnections: Int
    let maxConnectionsPerAddress: Int
    /// Canonical addresses exempt from the per-address cap.
    let unlimited: Set<String>

    init(_ configuration: HTTPServerConfiguration) {
        maxConnections = configuration.maxConnections
        maxConnectionsPerAddress = configuration.maxConnectionsPerAddress
        unlimited = Set(configuration.addressesWithoutPerAddressLimit.map { IPAddressText.canonical($0) ?? $0 })
    }

    var count: Int { state.withLock { $0.connections.count } }
    var refused: Int { state.withLock { $0.refused } }

    /// Registers `connection` from `address` (canonical) unless the server is closed or a cap is reached. The
    /// per-address cap counts the address's key (``IPAddressText/sourceKey(_:)``: an IPv6 peer's whole /64). An exempt
    /// proxy is exempt by its own address, and its connections do not count against its neighbours' key.
    func admit(_ connection: HTTPConnection, address: String) -> Bool {
        let key = unlimited.contains(address) ? nil : IPAddressText.sourceKey(address)
        return state.withLock { state in
            guard !state.closed else { return false }
            let fromAddress = key.map { state.perAddress[$0, default: 0] } ?? 0
            guard state.connections.count < maxConnections, key == nil || fromAddress < maxConnectionsPerAddress else {
                state.refused += 1
                return false
            }
            state.connections[ObjectIdentifier(connection)] = (connection, key)
            if let key { state.perAddress[key] = fromAddress + 1 }
            return true
        }
    }

    func remove(_ connection: HTTPConnection) {
        state.withLock { state in
            guard let (_, counted) = state.connections.removeValue(forKey: ObjectIdentifier(connection)),
                let key = counted
            else { return }
            let left = state.perAddress[key, default: 1] - 1
            state.perAddress[key] = left > 0 ? left : nil
        }
    }

    /// Refuses new connections from now on and returns the open ones.
    func closeAll() -> [HTTPConnection] {
        state.withLock { state in
            state.closed = true
            return state.connections.values.map(\.connection)
        }
    }
}
