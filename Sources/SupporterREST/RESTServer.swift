import Foundation
import Glibc
import Synchronization
import SupportHTTP
public import SupportRuntime
public import SupportUtilities
public import SupporterModel

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
    private let node: any SupporterService
    private let http: HTTPServer
    private let group: EventLoopGroup
    /// Whether the server made ``group`` (and so shuts it down); loops given to it are the caller's.
    private let ownsLoops: Bool
    /// Where the API reads the wall time (authentication back-off, audit rows, validity of new codes).
    private let clock: any NodeClock
    private let guardian: GuardBox
    private let feed: EventFeed
    private let logger: NodeLogger
    /// The once-a-second sweep's timer, on the loop it runs on.
    private let sweeper: LoopBound<LoopTimer?>
    private let stopped = Atomic<Bool>(false)

    /// Binds the API's address and starts serving `node`.
    ///
    /// - Parameters:
    ///   - loops: the event loops the API's connections and its once-a-second sweep run on. Given, the server uses
    ///     them and never shuts them down (the caller does, after ``shutdown()``); nil (the default), it starts
    ///     ``RESTServerConfiguration/loopCount`` loops of its own and stops them when it stops.
    ///   - clock: where the API reads the wall time; nil (the default) is the node's (``SupporterService/clock``).
    /// - Throws: `invalid_configuration` when a trusted proxy is not an IP address or there is no certificate; the
    ///   transport's errors when the TLS files cannot be used or the address cannot be bound.
    public init(
        node: any SupporterService, configuration: RESTServerConfiguration, loops: EventLoopGroup? = nil,
        clock: (any NodeClock)? = nil
    ) throws(TransportError) {
        self.configuration = configuration
        self.node = node
        let clock = clock ?? node.clock
        self.clock = clock
        ownsLoops = loops == nil
        logger = configuration.logger
        guard let resolver = ClientAddressResolver(trustedProxies: configuration.trustedProxies) else {
            let bad = configuration.trustedProxies.first { IPAddressText.canonical($0) == nil } ?? ""
            throw TransportError(.invalidConfiguration, "trusted proxy '\(bad)' is not an IP address")
        }
        guard let chain = configuration.certificateChain, let key = configuration.privateKey else {
            throw TransportError(.invalidConfiguration, "the REST API needs a certificate and key")
        }
        let context = try TLSContext(HTTPServer.makeTLSConfiguration(certificateChain: chain, privateKey: key))
        var http = configuration.http
        http.headersOnEveryAnswer = BrowserSecurity.headers
        http.addressesWithoutPerAddressLimit.formUnion(resolver.trustedProxies)
        let guardian = GuardBox(AuthenticationGuard(policy: configuration.authentication))
        self.guardian = guardian
        let group: EventLoopGroup
        if let loops {
            group = loops
        } else {
            group = try EventLoopGroup(loopCount: max(1, configuration.loopCount))
        }
        self.group = group
        let console = ConsoleFiles()
        if console.isEmpty { logger.log(.warning, "REST API: the web console's files are missing; serving the API only") }
        // The event feed's poll: a timer on one of the API's loops, its store reads on the node's blocking-work pool.
        let feed = EventFeed(node: node, loop: group.next(), logger: configuration.logger)
        self.feed = feed
        let metrics = RESTMetrics(registry: node.metrics, feed: feed)
        let router = RESTRouter(
            node: node, guardian: guardian, resolver: resolver, logger: configuration.logger, console: console,
            feed: feed, clock: clock, probeLoop: group.next(), metricsAccess: configuration.metricsAccess,
            metrics: metrics)
        do {
            let server = try HTTPServer(
                host: configuration.host, port: configuration.port, context: context, group: group,
                configuration: http, onHandshakeFailure: { _, reason in metrics.handshakeFailed(reason) }
            ) { request in await router.handle(request) }
            self.http = server
            RESTMetrics.register(server, in: node.metrics)
        } catch {
            feed.stop()
            if loops == nil { group.shutdown() }
            throw error
        }
        localAddress = self.http.localAddress
        logger.log(.info, "REST API on https://\(localAddress)/api/v1, web console on https://\(localAddress)/")
        // Once a second: audit windows that closed write their aggregate rows; decayed back-off is forgotten. A timer
        // on one of the API's loops, so that an embedded loop's `advance(by:)` drives it.
        let loop = group.next()
        let sweep = LoopBound<LoopTimer?>(handingOver: nil, to: loop)
        sweeper = sweep
        let sweepGuardian = guardian
        let logger = self.logger
        loop.execute { Self.armSweep(sweep, guardian: sweepGuardian, node: node, clock: clock, logger: logger) }
    }

    /// Arms the next sweep, a second from now on the sweep's loop; each sweep arms the next. Loop thread. The sweep
    /// itself is in-memory work under the guard's lock; rows to audit are handed to a task (they wait for the commit).
    private static func armSweep(
        _ sweep: LoopBound<LoopTimer?>, guardian: GuardBox, node: any SupporterService, clock: any NodeClock,
        logger: NodeLogger
    ) {
        let loop = sweep.loop
        sweep.value = loop.schedule(at: loop.now + .seconds(1)) {
            let rows = guardian.tick(now: clock.wallTime)
            if !rows.isEmpty { Task { await flush(rows, to: node, logger: logger) } }
            armSweep(sweep, guardian: guardian, node: node, clock: clock, logger: logger)
        }
    }

    /// Cancels the sweep's timer on its loop (after a sweep running now, which arms the next). Safe on any thread.
    private func stopSweeping() {
        let sweep = sweeper
        sweep.loop.execute {
            sweep.value?.cancel()
            sweep.value = nil
        }
    }

    /// The port actually listened on.
    public var port: UInt16 { localAddress.port }

    /// Open HTTPS connections now.
    public var connectionCount: Int { http.connectionCount }

    /// Connections closed at once because a connection cap was reached.
    public var refusedConnections: Int { http.refusedConnections }

    /// Reads `certificateChain` and `privateKey` again (a certificate rotated on SIGHUP): new HTTPS connections use
    /// them, open ones keep what they have. Throws, and keeps serving with the previous pair, when they cannot be
    /// loaded (a missing or broken file, a key that does not match).
    public func reloadIdentity(certificateChain: PEMSource, privateKey: PEMSource) throws(TransportError) {
        try http.replaceContext(
            TLSContext(HTTPServer.makeTLSConfiguration(certificateChain: certificateChain, privateKey: privateKey)))
    }

    /// Stops accepting, ends the event streams and the feed's polls (waiting for a read in flight), closes every
    /// connection (running requests are cancelled), stops the API's loops and writes the aggregate audit rows of
    /// authentication failures still held back. Call it before the node's `shutdown()`, from
    /// outside the API's loops. Safe to call twice.
    public func shutdown() async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopSweeping()
        await feed.shutdown()
        http.close()
        // Let answers and close_notify leave before the loops stop (bounded).
        let deadline = ContinuousClock.now + .seconds(1)
        while http.connectionCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        if ownsLoops { group.shutdown() }
        await Self.flush(guardian.tick(now: clock.wallTime, everything: true), to: node, logger: logger)
        logger.log(.info, "REST API stopped")
    }

    /// Without ``shutdown()``: stops accepting and the loops, dropping any audit rows still held back. (Nothing on the
    /// API's loops holds the server, so this never runs on one of them.)
    deinit {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopSweeping()
        feed.stop()
        http.close()
        if ownsLoops { group.shutdown() }
    }

    private static func flush(_ rows: [AuditEvent], to node: any SupporterService, logger: NodeLogger) async {
        guard !rows.isEmpty else { return }
        do { try await node.appendAudit(rows) } catch {
            logger.log(.error, "REST API: could not audit suppressed authentication failures: \(error)")
        }
    }
}
