import COpenSSL
import Glibc
import Synchronization

/// Accepts TLS connections and turns each into a ``FramedLink`` on one of a group's loops.
///
/// A connection that fails TLS (plaintext, an HTTP request, a bad certificate, a silent peer) is closed alone; the
/// listener keeps serving others.
public final class TLSListener: @unchecked Sendable {
    // @unchecked: `pausedUntil` and `acceptor` are touched only on `loop`; `fd` is set once in init; `closed` is atomic.
    public let localAddress: SocketAddress
    private let fd: Int32
    private let loop: EventLoop
    private let closedFlag = Atomic<Bool>(false)
    private var acceptor: Acceptor?

    /// Binds `host:port` (port 0: any free port) and starts accepting.
    ///
    /// - Parameter onLink: called on the new link's loop before it starts, to set its delegate. Return false to refuse
    ///   the connection (it is closed at once).
    public init(
        host: String, port: UInt16, context: TLSContext, settings: LinkSettings, group: EventLoopGroup,
        backlog: Int32 = 4096, idleTimeout: Duration? = nil,
        onLink: @escaping @Sendable (FramedLink) -> Bool
    ) throws(TransportError) {
        guard context.configuration.isServer else {
            throw TransportError(.invalidConfiguration, "a listener needs a server TLS configuration")
        }
        guard let address = try SocketAddress.resolve(host: host, port: port, passive: true).first else {
            throw TransportError(.nameResolution, "no address for '\(host)'")
        }
        fd = try Socket.listen(on: address, backlog: backlog)
        localAddress = SocketAddress.of(fd, peer: false) ?? address
        loop = group.loops[0]
        let acceptor = Acceptor(
            fd: fd, loop: loop, group: group, context: context, settings: settings, idleTimeout: idleTimeout,
            onLink: onLink)
        self.acceptor = acceptor
        let loop = self.loop
        let fd = self.fd
        loop.execute { loop.register(fd, events: rs_EPOLLIN(), handler: acceptor) }
    }

    /// Stops accepting; established links are not affected.
    public func close() {
        guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let fd = self.fd
        let loop = self.loop
        loop.execute {
            loop.unregister(fd)
            Glibc.close(fd)
        }
    }

    deinit { close() }
}

/// The listener's loop-side half.
private final class Acceptor: Selectable, @unchecked Sendable {
    // @unchecked: created off-loop, then used only on `loop` (`paused` is its only mutable state).
    let fd: Int32
    let loop: EventLoop
    let group: EventLoopGroup
    let context: TLSContext
    let settings: LinkSettings
    let idleTimeout: Duration?
    let onLink: @Sendable (FramedLink) -> Bool
    private var paused = false

    init(
        fd: Int32, loop: EventLoop, group: EventLoopGroup, context: TLSContext, settings: LinkSettings,
        idleTimeout: Duration?, onLink: @escaping @Sendable (FramedLink) -> Bool
    ) {
        self.fd = fd
        self.loop = loop
        self.group = group
        self.context = context
        self.settings = settings
        self.idleTimeout = idleTimeout
        self.onLink = onLink
    }

    func handle(events: UInt32) {
        // Bounded per wake-up so one loop's other connections are not starved by a connection storm.
        for _ in 0..<256 {
            switch Socket.accept(fd) {
            case .accepted(let client):
                let target = group.next()
                let context = self.context
                let settings = self.settings
                let idleTimeout = self.idleTimeout
                let onLink = self.onLink
                let setUp: @Sendable () -> Void = {
                    let connection = TLSConnection(
                        loop: target, context: context, fd: client, connecting: nil, serverName: nil,
                        maxBufferedBytes: settings.maxBufferedBytes, idleTimeout: idleTimeout)
                    let link = FramedLink(connection: connection, settings: settings, isInitiator: false)
                    guard onLink(link) else {
                        connection.handler = nil
                        return  // the connection's deinit closes the fd
                    }
                    link.start()
                }
                if target === loop { setUp() } else { target.execute(setUp) }
            case .wouldBlock:
                return
            case .exhausted:
                // Out of descriptors: stop accepting for 100 ms instead of spinning on a level-triggered listener.
                pause()
                return
            case .failed:
                return
            }
        }
    }

    private func pause() {
        guard !paused else { return }
        paused = true
        loop.modify(fd, events: 0)
        loop.schedule(at: .now() + .milliseconds(100)) { [self] in
            self.paused = false
            self.loop.modify(self.fd, events: rs_EPOLLIN())
        }
    }
}
