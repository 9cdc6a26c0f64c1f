import Synchronization
public import SupportRuntime
import SupportUtilities
import Glibc
import SupportWire

/// Opens a ``FramedLink`` to a listener: TCP connect, TLS handshake, HELLO exchange.
public enum TLSDialer {
    /// Connects to `host:port` and returns the link once HELLO / HELLO_ACK are exchanged.
    ///
    /// `host` is also what the server certificate is verified against (unless `configuration.serverName` says
    /// otherwise, or pins are used). Errors say what failed: refused, unreachable, timeout, which TLS check, …
    ///
    /// A host name is looked up on ``NameResolver/shared``'s threads (never on the loop or the cooperative pool); an
    /// IP literal is used as it is. A full resolver queue fails at once with `resolver_busy`. When the name has several
    /// addresses, they are raced (``ConnectionRace``, RFC 8305): the next attempt starts 250 ms after the previous
    /// one (or at once when it failed), and the first link to open wins.
    public static func connect(
        host: String, port: UInt16, context: TLSContext, settings: LinkSettings, loop: EventLoop,
        connectTimeout: Duration = .seconds(10), delegate: FramedLinkDelegate?
    ) async throws(TransportError) -> FramedLink {
        try await connect(
            host: host, port: port, context: context, settings: settings, loop: loop, connectTimeout: connectTimeout,
            delegate: delegate, resolver: .shared)
    }

    /// ``connect(host:port:context:settings:loop:connectTimeout:delegate:)`` with a resolver of the caller's.
    static func connect(
        host: String, port: UInt16, context: TLSContext, settings: LinkSettings, loop: EventLoop,
        connectTimeout: Duration, delegate: FramedLinkDelegate?, resolver: NameResolver
    ) async throws(TransportError) -> FramedLink {
        guard !context.configuration.isServer else {
            throw TransportError(.invalidConfiguration, "a dialer needs a client TLS configuration")
        }
        let addresses = try await resolver.resolve(host: host, port: port)
        let serverName = context.configuration.serverName ?? host
        // Several addresses (IPv6 and IPv4, or several A records): raced, Happy Eyeballs style.
        return try await ConnectionRace.run(addresses) { address, claim throws(TransportError) in
            // The link keeps its delegate weakly: the gate lives here until the link has opened (or failed).
            let gate = ConnectionRaceGate(target: delegate, claim: claim)
            let link = try await connect(
                to: address, serverName: serverName, context: context, settings: settings, loop: loop,
                connectTimeout: connectTimeout, delegate: gate)
            withExtendedLifetime(gate) {}
            return link
        }
    }

    /// One attempt to one address, for the race's tests.
    package static func connectForTests(
        to address: SocketAddress, serverName: String, context: TLSContext, settings: LinkSettings, loop: EventLoop,
        delegate: FramedLinkDelegate?
    ) async throws(TransportError) -> FramedLink {
        try await connect(
            to: address, serverName: serverName, context: context, settings: settings, loop: loop,
            connectTimeout: .seconds(10), delegate: delegate)
    }

    private static func connect(
        to address: SocketAddress, serverName: String, context: TLSContext, settings: LinkSettings, loop: EventLoop,
        connectTimeout: Duration, delegate: FramedLinkDelegate?
    ) async throws(TransportError) -> FramedLink {
        let (fd, _) = try Socket.startConnect(to: address)
        let pending = PendingDial()
        let cancelled = TransportError(.cancelled, "the dial to \(address) was cancelled")
        let result: Result<FramedLink, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let accepted = loop.execute {
                    let connection = TLSConnection(
                        loop: loop, context: context, fd: fd, connecting: address, serverName: serverName,
                        maxBufferedBytes: settings.maxBufferedBytes, idleTimeout: nil)
                    let link = FramedLink(connection: connection, settings: settings, isInitiator: true)
                    link.delegate = delegate
                    link.openWaiter = { reason in
                        guard let reason else {
                            // From now on the caller owns the link and a late cancel leaves it be; a cancel that came
                            // just before (its close already on its way here) wins.
                            continuation.resume(returning: pending.opened() ? .success(link) : .failure(cancelled))
                            return
                        }
                        if pending.isCancelled {
                            continuation.resume(returning: .failure(cancelled))
                        } else if case .transport(let error) = reason {
                            continuation.resume(returning: .failure(error))
                        } else {
                            continuation.resume(
                                returning: .failure(
                                    TransportError(.handshakeFailed, "the link closed before HELLO: \(reason)")))
                        }
                    }
                    link.start(connectDeadline: loop.now + connectTimeout)
                    // The same deadline bounds the TLS handshake and HELLO: a peer that accepts TCP and then says
                    // nothing (a frozen or hung node) is given up on as one that does not answer.
                    let openDeadline = loop.schedule(at: loop.now + connectTimeout) { [weak link] in
                        link?.abortOpening(
                            TransportError(
                                .connectTimeout, "\(address) accepted the connection but did not finish TLS and HELLO within \(connectTimeout)"))
                    }
                    let waiter = link.openWaiter
                    link.openWaiter = { reason in
                        openDeadline.cancel()
                        waiter?(reason)
                    }
                    // Cancelled before the link existed: close it now (its waiter answers `cancelled`).
                    if !pending.attach(link) { link.close(reason: .normalClose) }
                }
                if !accepted {
                    close(fd)
                    continuation.resume(
                        returning: .failure(
                            TransportError(.eventLoopShutDown, "event loop \(loop.name) is shut down; cannot connect")))
                }
            }
        } onCancel: {
            // A cancelled dial stops now, not at its connect or handshake deadline.
            pending.cancel()?.close(reason: .normalClose)
        }
        return try result.get()
    }
}

/// A dial's link while it opens, for cancellation from another thread: `cancel()` hands back the link to close, or
/// marks the dial so that the loop closes the link as soon as it exists.
private final class PendingDial: Sendable {
    private struct State {
        var link: FramedLink?
        var cancelled = false
    }
    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// On the loop, once the link exists: false when the dial was cancelled already (the caller closes the link).
    func attach(_ link: FramedLink) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.link = link
            return true
        }
    }

    /// The link opened: a later cancellation does not close it. False when the dial was cancelled already (the link
    /// is being closed).
    func opened() -> Bool {
        state.withLock { state in
            state.link = nil
            return !state.cancelled
        }
    }

    /// The link to close, if it exists yet.
    func cancel() -> FramedLink? {
        state.withLock { state in
            state.cancelled = true
            defer { state.link = nil }
            return state.link
        }
    }
}
