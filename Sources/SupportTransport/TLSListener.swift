import COpenSSL
import Glibc
import Synchronization

/// Accepts TLS connections and turns each into a ``FramedLink`` (or, for other protocols such as HTTP, a
/// ``TLSStream``) on one of a group's loops.
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
    public convenience init(
        host: String, port: UInt16, context: TLSContext, settings: LinkSettings, group: EventLoopGroup,
        backlog: Int32 = 4096, idleTimeout: Duration? = nil,
        onLink: @escaping @Sendable (FramedLink) -> Bool
    ) throws(TransportError) {
        try self.init(
            host: host, port: port, context: context, group: group, backlog: backlog,
            maxBufferedBytes: settings.maxBufferedBytes, idleTimeout: idleTimeout
        ) { connection in
            let link = FramedLink(connection: connection, settings: settings, isInitiator: false)
            guard onLink(link) else { return false }
            link.start()
            return true
        }
    }

    /// Binds `host:port` and hands every accepted connection over as a raw ``TLSStream`` (HTTP, …).
    ///
    /// - Parameter onStream: called on the stream's loop before it starts, to set its delegate. Return false to
    ///   refuse the connection.
    public convenience init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup, backlog: Int32 = 1024,
        maxBufferedBytes: Int = 1 << 20, idleTimeout: Duration? = nil,
        onStream: @escaping @Sendable (TLSStream) -> Bool
    ) throws(TransportError) {
        try self.init(
            host: host, port: port, context: context, group: group, backlog: backlog,
            maxBufferedBytes: maxBufferedBytes, idleTimeout: idleTimeout
        ) { connection in
            let stream = TLSStream(connection: connection)
            guard onStream(stream) else { return false }
            connection.start()
            return true
        }
    }

    private init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup, backlog: Int32,
        maxBufferedBytes: Int, idleTimeout: Duration?, accept: @escaping @Sendable (TLSConnection) -> Bool
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
            fd: fd, loop: loop, group: group, context: context, maxBufferedBytes: maxBufferedBytes,
            idleTimeout: idleTimeout, accept: accept)
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
    let maxBufferedBytes: Int
    let idleTimeout: Duration?
    /// Wraps the new connection, sets its owner up and starts it; false refuses it.
    let accept: @Sendable (TLSConnection) -> Bool
    private var paused = false

    init(
        fd: Int32, loop: EventLoop, group: EventLoopGroup, context: TLSContext, maxBufferedBytes: Int,
        idleTimeout: Duration?, accept: @escaping @Sendable (TLSConnection) -> Bool
    ) {
        self.fd = fd
        self.loop = loop
        self.group = group
        self.context = context
        self.maxBufferedBytes = maxBufferedBytes
        self.idleTimeout = idleTimeout
        self.accept = accept
    }

    func handle(events: UInt32) {
        // Bounded per wake-up so one loop's other connections are not starved by a connection storm.
        for _ in 0..<256 {
            switch Socket.accept(fd) {
            case .accepted(let client):
                let target = group.next()
                let context = self.context
                let maxBufferedBytes = self.maxBufferedBytes
                let idleTimeout = self.idleTimeout
                let accept = self.accept
                let setUp: @Sendable () -> Void = {
                    let connection = TLSConnection(
                        loop: target, context: context, fd: client, connecting: nil, serverName: nil,
                        maxBufferedBytes: maxBufferedBytes, idleTimeout: idleTimeout)
                    if !accept(connection) {
                        connection.handler = nil  // the connection's deinit closes the fd
                    }
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
