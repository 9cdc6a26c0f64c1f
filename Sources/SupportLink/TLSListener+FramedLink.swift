public import SupportRuntime

extension TLSListener {
    /// Binds `host:port` (port 0: any free port) and starts accepting.
    ///
    /// `host` should be an IP literal or empty (any address): a name is looked up with a blocking `getaddrinfo` on
    /// the calling thread, which is refused on an event-loop thread (`blocking_on_event_loop`).
    ///
    /// - Parameters:
    ///   - onHandshakeFailure: told, on the connection's loop, of every accepted connection whose TLS handshake
    ///     failed or timed out: the peer's address and the reason in a few words (OpenSSL's, e.g. "no application
    ///     protocol", "wrong version number", "plaintext HTTP instead of TLS …", or "timeout: …"). For logs; the link's
    ///     delegate still hears `linkDidClose`.
    ///   - onAcceptError: told, on the listener's loop, when accepting fails: once per pause when out of descriptors
    ///     or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM; accepting resumes by itself after ``exhaustionPause``), and for
    ///     any other accept error.
    ///   - onLink: called on the new link's loop before it starts, to set its delegate. Return false to refuse the
    ///     connection (it is closed at once). Once it returned true, the delegate hears `linkDidClose` exactly once,
    ///     even when TLS or HELLO never completes.
    public convenience init(
        host: String, port: UInt16, context: TLSContext, settings: LinkSettings, group: EventLoopGroup,
        backlog: Int32 = 4096, idleTimeout: Duration? = nil,
        onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)? = nil,
        onAcceptError: (@Sendable (TransportError) -> Void)? = nil,
        onLink: @escaping @Sendable (FramedLink) -> Bool
    ) throws(TransportError) {
        try self.init(
            host: host, port: port, context: context, group: group, backlog: backlog,
            maxBufferedBytes: settings.maxBufferedBytes, idleTimeout: idleTimeout,
            hooks: Hooks(onHandshakeFailure: onHandshakeFailure, onAcceptError: onAcceptError)
        ) { connection in
            let link = FramedLink(connection: connection, settings: settings, isInitiator: false)
            guard onLink(link) else { return false }
            link.start()
            return true
        }
    }
}
