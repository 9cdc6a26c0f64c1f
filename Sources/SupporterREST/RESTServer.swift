import Foundation
import Glibc
import Synchronization
import SupportHTTP
public import SupporterNode
public import SupportRuntime
import SupportUtilities
import SupporterCore
import SupportWire

/// The supporter node's REST API (protocol/openapi.yaml) over HTTPS, served beside a node on its public API.
///
/// It has its own event loops (``RESTServerConfiguration/loopCount``), so API clients never share a thread with
/// device connections, and its own abuse limits (SPEC §13): connection caps at accept (``HTTPServer``), unknown-token
/// back-off per client address with bounded audit (``AuthenticationGuard``), and `X-Forwarded-For` believed only
/// from trusted proxies (``ClientAddressResolver``).
///
/// Start it after the node, and ``shutdown()`` it before the node's `shutdown()`: its last audit rows go through the
/// node.
public final class RESTServer: Sendable {
    /// The settings it was started with.
    public let configuration: RESTServerConfiguration
    /// The bound address (with the real port when 0 was asked for).
    public let localAddress: SocketAddress
    private let node: SupporterNode
    private let http: HTTPServer
    private let group: EventLoopGroup
    private let guardian: GuardBox
    private let feed: EventFeed
    private let logger: NodeLogger
    private let sweeper = Mutex<Task<Void, Never>?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// Binds the API's address and starts serving `node`.
    ///
    /// - Throws: `invalid_configuration` when a trusted proxy is not an IP address or there is no certificate; the
    ///   transport's errors when the TLS files cannot be used or the address cannot be bound.
    public init(node: SupporterNode, configuration: RESTServerConfiguration) throws(TransportError) {
        self.configuration = configuration
        self.node = node
        logger = configuration.logger
        guard let resolver = ClientAddressResolver(trustedProxies: configuration.trustedProxies) else {
            let bad = configuration.trustedProxies.first { IPAddressText.canonical($0) == nil } ?? ""
            throw TransportError(.invalidConfiguration, "trusted proxy '\(bad)' is not an IP address")
        }
        guard let chain = configuration.certificateChain ?? node.configuration.tls.certificateChain,
            let key = configuration.privateKey ?? node.configuration.tls.privateKey
        else {
            throw TransportError(.invalidConfiguration, "the REST API needs a certificate and key (or the node's)")
        }
        let context = try TLSContext(HTTPServer.makeTLSConfiguration(certificateChain: chain, privateKey: key))
        var http = configuration.http
        http.headersOnEveryAnswer = BrowserSecurity.headers
        http.addressesWithoutPerAddressLimit.formUnion(resolver.trustedProxies)
        let guardian = GuardBox(AuthenticationGuard(policy: configuration.authentication))
        self.guardian = guardian
        let group = try EventLoopGroup(loopCount: max(1, configuration.loopCount))
        self.group = group
        let console = ConsoleFiles()
        if console.isEmpty { logger.log(.warning, "REST API: the web console's files are missing; serving the API only") }
        let feed = EventFeed(node: node, logger: configuration.logger)
        self.feed = feed
        let router = RESTRouter(
            node: node, guardian: guardian, resolver: resolver, logger: configuration.logger, console: console,
            feed: feed)
        do {
            self.http = try HTTPServer(
                host: configuration.host, port: configuration.port, context: context, group: group,
                configuration: http
            ) { request in await router.handle(request) }
        } catch {
            feed.stop()
            group.shutdown()
            throw error
        }
        localAddress = self.http.localAddress
        logger.log(.info, "REST API on https://\(localAddress)/api/v1, web console on https://\(localAddress)/")
        // Once a second: audit windows that closed write their aggregate rows; decayed back-off is forgotten.
        sweeper.withLock {
            $0 = Task { [guardian, node, logger] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    await Self.flush(guardian.tick(now: Date()), to: node, logger: logger)
                }
            }
        }
    }

    /// The port actually listened on.
    public var port: UInt16 { localAddress.port }

    /// Open HTTPS connections now.
    public var connectionCount: Int { http.connectionCount }

    /// Connections closed at once because a connection cap was reached.
    public var refusedConnections: Int { http.refusedConnections }

    /// Stops accepting, closes every connection (running requests are cancelled), stops the API's loops and writes the
    /// aggregate audit rows of authentication failures still held back. Call it before the node's `shutdown()`, from
    /// outside the API's loops. Safe to call twice.
    public func shutdown() async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sweeper.withLock {
            $0?.cancel()
            $0 = nil
        }
        feed.stop()
        http.close()
        // Let answers and close_notify leave before the loops stop (bounded).
        let deadline = ContinuousClock.now + .seconds(1)
        while http.connectionCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        group.shutdown()
        await Self.flush(guardian.tick(now: Date(), everything: true), to: node, logger: logger)
        logger.log(.info, "REST API stopped")
    }

    /// Without ``shutdown()``: stops accepting and the loops, dropping any audit rows still held back. (Nothing on the
    /// API's loops holds the server, so this never runs on one of them.)
    deinit {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sweeper.withLock { $0?.cancel() }
        feed.stop()
        http.close()
        group.shutdown()
    }

    private static func flush(_ rows: [AuditEvent], to node: SupporterNode, logger: NodeLogger) async {
        guard !rows.isEmpty else { return }
        do { try await node.appendAudit(rows) } catch {
            logger.log(.error, "REST API: could not audit suppressed authentication failures: \(error)")
        }
    }
}
