import SupportUtilities
/// A failure of the TLS transport: configuration, sockets, TLS, timeouts, closing.
///
/// ``kind`` says what class of failure it is, ``message`` says what happened in words a person can act on, and
/// ``openSSLReason`` carries OpenSSL's own reason string when OpenSSL reported it.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A class of failure. A struct so that kinds can be added without breaking callers.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        // Configuration: reported when a configuration is built, never at the first connection.
        public static let fileUnreadable = Kind("file_unreadable")
        public static let invalidPEM = Kind("invalid_pem")
        public static let keyMismatch = Kind("key_mismatch")
        public static let invalidPin = Kind("invalid_pin")
        public static let invalidConfiguration = Kind("invalid_configuration")
        // Sockets.
        public static let addressInUse = Kind("address_in_use")
        public static let connectionRefused = Kind("connection_refused")
        public static let hostUnreachable = Kind("host_unreachable")
        public static let nameResolution = Kind("name_resolution")
        /// The name resolver's queue is full: too many lookups wait already. Retry later.
        public static let resolverBusy = Kind("resolver_busy")
        public static let socket = Kind("socket")
        // TLS.
        public static let handshakeFailed = Kind("handshake_failed")
        public static let certificateVerification = Kind("certificate_verification")
        public static let pinMismatch = Kind("pin_mismatch")
        public static let alpnMismatch = Kind("alpn_mismatch")
        public static let tls = Kind("tls")
        // Time.
        public static let connectTimeout = Kind("connect_timeout")
        public static let handshakeTimeout = Kind("handshake_timeout")
        public static let idleTimeout = Kind("idle_timeout")
        // Closing and flow.
        public static let uncleanShutdown = Kind("unclean_shutdown")
        public static let connectionReset = Kind("connection_reset")
        public static let writeBufferFull = Kind("write_buffer_full")
        public static let closed = Kind("closed")
        public static let protocolViolation = Kind("protocol_violation")
        /// The dial was cancelled before its link opened: its task was cancelled, or another address of a race won.
        public static let cancelled = Kind("cancelled")
        // Event loops.
        /// The event loop was shut down: the work was not accepted and will never run.
        public static let eventLoopShutDown = Kind("event_loop_shut_down")
        /// A blocking wait (or a blocking name lookup) was attempted on an event-loop thread, where it would stall
        /// every connection of that loop or deadlock. Nothing was done.
        public static let blockingOnEventLoop = Kind("blocking_on_event_loop")
        /// epoll refused to add, change or remove a descriptor, or to wait.
        public static let poller = Kind("poller")
    }

    public let kind: Kind
    /// What happened, for people.
    public let message: String
    /// OpenSSL's reason string, when OpenSSL reported the failure.
    public let openSSLReason: String?

    public init(_ kind: Kind, _ message: String, openSSLReason: String? = nil) {
        self.kind = kind
        self.message = message
        self.openSSLReason = openSSLReason
    }

    public var description: String {
        guard let openSSLReason, !message.contains(openSSLReason) else { return message }
        return message + " (OpenSSL: " + openSSLReason + ")"
    }
}
