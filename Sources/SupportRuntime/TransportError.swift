import SupportUtilities
/// A failure of the TLS transport: configuration, sockets, TLS, timeouts, closing.
///
/// ``kind`` says what class of failure it is, ``message`` says what happened in words a person can act on, and
/// ``openSSLReason`` carries OpenSSL's own reason string when OpenSSL reported it.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A class of failure. A struct over a private enum (the `StoreError` pattern), so that kinds can be added
    /// without breaking callers.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileUnreadable = "file_unreadable", invalidPEM = "invalid_pem", keyMismatch = "key_mismatch"
            case invalidPin = "invalid_pin", invalidConfiguration = "invalid_configuration"
            case addressInUse = "address_in_use", connectionRefused = "connection_refused"
            case hostUnreachable = "host_unreachable", nameResolution = "name_resolution"
            case resolverBusy = "resolver_busy", socket
            case handshakeFailed = "handshake_failed", certificateVerification = "certificate_verification"
            case pinMismatch = "pin_mismatch", alpnMismatch = "alpn_mismatch", tls
            case connectTimeout = "connect_timeout", handshakeTimeout = "handshake_timeout", idleTimeout = "idle_timeout"
            case deadlineExceeded = "deadline_exceeded"
            case uncleanShutdown = "unclean_shutdown", connectionReset = "connection_reset"
            case writeBufferFull = "write_buffer_full", closed, protocolViolation = "protocol_violation", cancelled
            case eventLoopShutDown = "event_loop_shut_down", blockingOnEventLoop = "blocking_on_event_loop", poller
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The kind's name in logs, e.g. `handshake_failed`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }

        // Configuration: reported when a configuration is built, never at the first connection.
        public static let fileUnreadable = Kind(.fileUnreadable)
        public static let invalidPEM = Kind(.invalidPEM)
        public static let keyMismatch = Kind(.keyMismatch)
        public static let invalidPin = Kind(.invalidPin)
        public static let invalidConfiguration = Kind(.invalidConfiguration)
        // Sockets.
        public static let addressInUse = Kind(.addressInUse)
        public static let connectionRefused = Kind(.connectionRefused)
        public static let hostUnreachable = Kind(.hostUnreachable)
        public static let nameResolution = Kind(.nameResolution)
        /// The name resolver's queue is full: too many lookups wait already. Retry later.
        public static let resolverBusy = Kind(.resolverBusy)
        public static let socket = Kind(.socket)
        // TLS.
        public static let handshakeFailed = Kind(.handshakeFailed)
        public static let certificateVerification = Kind(.certificateVerification)
        public static let pinMismatch = Kind(.pinMismatch)
        public static let alpnMismatch = Kind(.alpnMismatch)
        public static let tls = Kind(.tls)
        // Time.
        public static let connectTimeout = Kind(.connectTimeout)
        public static let handshakeTimeout = Kind(.handshakeTimeout)
        public static let idleTimeout = Kind(.idleTimeout)
        /// A blocking read or write (``DeadlineSocket``) did not complete before its deadline: the peer sent nothing,
        /// or took nothing, in time.
        public static let deadlineExceeded = Kind(.deadlineExceeded)
        // Closing and flow.
        public static let uncleanShutdown = Kind(.uncleanShutdown)
        public static let connectionReset = Kind(.connectionReset)
        public static let writeBufferFull = Kind(.writeBufferFull)
        public static let closed = Kind(.closed)
        public static let protocolViolation = Kind(.protocolViolation)
        /// The dial was cancelled before its link opened: its task was cancelled, or another address of a race won.
        public static let cancelled = Kind(.cancelled)
        // Event loops.
        /// The event loop was shut down: the work was not accepted and will never run.
        public static let eventLoopShutDown = Kind(.eventLoopShutDown)
        /// A blocking wait (or a blocking name lookup) was attempted on an event-loop thread, where it would stall
        /// every connection of that loop or deadlock. Nothing was done.
        public static let blockingOnEventLoop = Kind(.blockingOnEventLoop)
        /// epoll refused to add, change or remove a descriptor, or to wait.
        public static let poller = Kind(.poller)
    }

    public let kind: Kind
    /// What happened, for people.
    public let message: String
    /// OpenSSL's reason string, when OpenSSL reported the failure.
    public let openSSLReason: String?
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?

    public init(_ kind: Kind, _ message: String, openSSLReason: String? = nil, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.openSSLReason = openSSLReason
        self.underlying = underlying
    }

    public static func == (lhs: TransportError, rhs: TransportError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.openSSLReason == rhs.openSSLReason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
        hasher.combine(openSSLReason)
    }

    public var description: String {
        guard let openSSLReason, !message.contains(openSSLReason) else { return message }
        return message + " (OpenSSL: " + openSSLReason + ")"
    }
}
