import SupportUtilities
internal import COpenSSL
import Glibc
import Synchronization

/// Accepts TLS connections and hands each over, on one of a group's loops, as a ``TLSStream`` (HTTP, …) or, through
/// SupportLink's initializer, as a framed link.
///
/// A connection that fails TLS (plaintext, an HTTP request, a bad certificate, a silent peer) is closed alone; the
/// listener keeps serving others, and tells `onHandshakeFailure` why. Every accepted connection holds a place in
/// ``DescriptorBudget/process``; with none left a new connection is closed at once ("shed", told to `onAcceptError` once
/// per run of sheds), so the process keeps descriptors for its store, control socket and runtime. Out of file
/// descriptors (or memory) all the same, it stops accepting for 100 ms at a time instead of spinning, and tells
/// `onAcceptError` once per pause.
public final class TLSListener: @unchecked Sendable {
    // @unchecked: every stored property is a `let`; `acceptor` is used only on `loop`; `closed` is atomic.
    public let localAddress: SocketAddress
    private let fd: Int32
    private let loop: EventLoop
    private let closedFlag = Atomic<Bool>(false)
    private let acceptor: Acceptor

    /// How long accepting pauses when the process is out of descriptors or memory.
    public static let exhaustionPause: Duration = .milliseconds(100)

    /// Binds `host:port` and hands every accepted connection over as a raw ``TLSStream`` (HTTP, …).
    ///
    /// - Parameters:
    ///   - onHandshakeFailure: as for every listener: every failed or timed-out TLS handshake, with the
    ///     peer's address and the reason.
    ///   - onAcceptError: told, on the listener's loop, when accepting fails (see the framed-link listener in SupportLink).
    ///   - onStream: called on the stream's loop before it starts, to set its delegate. Return false to refuse the
    ///     connection. Once it returned true, the delegate hears `streamDidClose` exactly once.
    public convenience init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup, backlog: Int32 = 1024,
        maxBufferedBytes: Int = 1 << 20, idleTimeout: Duration? = nil,
        onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)? = nil,
        onAcceptError: (@Sendable (TransportError) -> Void)? = nil,
        onStream: @escaping @Sendable (TLSStream) -> Bool
    ) throws(TransportError) {
        try self.init(
            host: host, port: port, context: context, group: group, backlog: backlog,
            maxBufferedBytes: maxBufferedBytes, idleTimeout: idleTimeout,
            hooks: Hooks(onHandshakeFailure: onHandshakeFailure, onAcceptError: onAcceptError)
        ) { connection in
            let stream = TLSStream(connection: connection)
            guard onStream(stream) else { return false }
            connection.start()
            return true
        }
    }

    /// What the owner asked to be told.
    package struct Hooks: Sendable {
        package var onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)?
        package var onAcceptError: (@Sendable (TransportError) -> Void)?

        package init(
            onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)?,
            onAcceptError: (@Sendable (TransportError) -> Void)?
        ) {
            self.onHandshakeFailure = onHandshakeFailure
            self.onAcceptError = onAcceptError
        }
    }

    /// Binds `host:port` and hands every accepted connection to `accept` (which wraps and starts it; false refuses
    /// it). For the protocol layers built on this listener.
    package init(
        host: String, port: UInt16, context: TLSContext, group: EventLoopGroup, backlog: Int32,
        maxBufferedBytes: Int, idleTimeout: Duration?, hooks: Hooks,
        accept: @escaping @Sendable (TLSConnection) -> Bool
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
            idleTimeout: idleTimeout, hooks: hooks, accept: accept)
        self.acceptor = acceptor
        let loop = self.loop
        let fd = self.fd
        let accepted = loop.execute {
            do throws(TransportError) { try loop.register(fd, events: .readable, handler: acceptor) } catch {
                // Nothing will accept on this socket: say so, and give its descriptor back.
                hooks.onAcceptError?(error)
                acceptor.stop()
            }
        }
        guard accepted else {
            closedFlag.store(true, ordering: .releasing)
            Glibc.close(fd)
            throw TransportError(.eventLoopShutDown, "the event loop group is shut down; cannot listen on \(address)")
        }
    }

    /// From now on new connections use `context` (a certificate rotated on SIGHUP); established ones keep theirs.
    /// Throws, changing nothing, when `context` is not a server context.
    public func replaceContext(_ context: TLSContext) throws(TransportError) {
        guard context.configuration.isServer else {
            throw TransportError(.invalidConfiguration, "a listener needs a server TLS configuration")
        }
        let acceptor = self.acceptor
        guard loop.execute({ acceptor.context = context }) else {
            throw TransportError(.eventLoopShutDown, "the listener's event loop is shut down")
        }
    }

    /// Stops accepting; established links are not affected.
    public func close() {
        guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Refused only after the loop shut down, when the acceptor already closed the descriptor.
        let acceptor = self.acceptor
        loop.execute { acceptor.stop() }
    }

    deinit { close() }
}

/// The listener's loop-side half.
private final class Acceptor: Selectable, @unchecked Sendable {
    // @unchecked: created off-loop, then used only on `loop` (`context`, `paused`, `resumeTimer` and `stopped` are
    // its only mutable state: ``TLSListener/replaceContext(_:)`` sets `context` on the loop); the `let`s are Sendable
    // or immutable.
    let fd: Int32
    let loop: EventLoop
    let group: EventLoopGroup
    /// What new connections are set up with.
    var context: TLSContext {
        didSet { loop.preconditionInLoop() }
    }
    let maxBufferedBytes: Int
    let idleTimeout: Duration?
    let hooks: TLSListener.Hooks
    /// Wraps the new connection, sets its owner up and starts it; false refuses it.
    let accept: @Sendable (TLSConnection) -> Bool
    private var paused = false
    private var resumeTimer: LoopTimer?
    private var stopped = false
    private let budget = DescriptorBudget.process
    /// New connections closed at once since the budget last had a place.
    private var shed = 0

    init(
        fd: Int32, loop: EventLoop, group: EventLoopGroup, context: TLSContext, maxBufferedBytes: Int,
        idleTimeout: Duration?, hooks: TLSListener.Hooks, accept: @escaping @Sendable (TLSConnection) -> Bool
    ) {
        self.fd = fd
        self.loop = loop
        self.group = group
        self.context = context
        self.maxBufferedBytes = maxBufferedBytes
        self.idleTimeout = idleTimeout
        self.hooks = hooks
        self.accept = accept
    }

    func handle(events: PollEvents) {
        // Bounded per wake-up so one loop's other connections are not starved by a connection storm.
        for _ in 0..<256 {
            switch Socket.accept(fd) {
            case .accepted(let client):
                guard let place = budget.acquire() else {
                    Glibc.close(client)
                    if shed == 0 {
                        hooks.onAcceptError?(
                            TransportError(
                                .socket,
                                "accept on \(fdDescription): \(budget.capacity) connections open, all the descriptor "
                                    + "limit allows (a limit of \(budget.limit), \(budget.reserve) of them kept for the "
                                    + "node itself); closing new connections at once until one ends"))
                    }
                    shed += 1
                    continue
                }
                shed = 0
                let target = group.next()
                let context = self.context
                let maxBufferedBytes = self.maxBufferedBytes
                let idleTimeout = self.idleTimeout
                let accept = self.accept
                let onHandshakeFailure = hooks.onHandshakeFailure
                let setUp: @Sendable () -> Void = {
                    let connection = TLSConnection(
                        loop: target, context: context, fd: client, connecting: nil, serverName: nil,
                        maxBufferedBytes: maxBufferedBytes, idleTimeout: idleTimeout)
                    connection.onHandshakeFailure = onHandshakeFailure
                    connection.descriptorPlace = place
                    if !accept(connection) {
                        connection.handler = nil  // the connection's deinit closes the fd
                    }
                }
                if target === loop {
                    setUp()
                } else if !target.execute(setUp) {
                    Glibc.close(client)  // that loop is shut down: nobody will serve the connection
                }
            case .wouldBlock:
                return
            case .exhausted(let code):
                // Out of descriptors: stop accepting for a while instead of spinning on a level-triggered listener.
                pause(code)
                return
            case .failed(let code):
                hooks.onAcceptError?(
                    TransportError(.socket, "accept on \(fdDescription) failed: \(SystemError.describe(code))"))
                return
            }
        }
    }

    private var fdDescription: String { SocketAddress.of(fd, peer: false)?.description ?? "fd \(fd)" }

    private func pause(_ code: Int32) {
        guard !paused, !stopped else { return }
        do { try loop.modify(fd, events: []) } catch {
            hooks.onAcceptError?(error)
            return
        }
        paused = true
        let what = code == EMFILE || code == ENFILE ? "out of file descriptors" : "out of memory"
        hooks.onAcceptError?(
            TransportError(
                .socket,
                "accept on \(fdDescription): \(what) (\(SystemError.describe(code))); not accepting for "
                    + "\(TLSListener.exhaustionPause); raise the descriptor limit (ulimit -n) if this repeats"))
        resumeTimer = loop.schedule(at: loop.now + TLSListener.exhaustionPause) { [self] in
            self.resumeTimer = nil
            self.paused = false
            do throws(TransportError) {
                try self.loop.modify(self.fd, events: .readable)
            } catch {
                self.hooks.onAcceptError?(error)
            }
        }
    }

    /// Stops accepting and closes the listening descriptor, once. Loop thread.
    func stop() {
        guard !stopped else { return }
        stopped = true
        resumeTimer?.cancel()
        resumeTimer = nil
        loop.unregister(fd)
        Glibc.close(fd)
    }

    /// The loop stops before the listener was closed: the listener's close can no longer reach the loop, so the
    /// descriptor is closed here.
    func loopDidStop() { stop() }
}
