public import SupportWire
/// Why the device's session failed; after it the session is over (SPEC §5.6 outcomes and link failures).
///
/// A struct over a small kind (the `StoreError` pattern): ``kind`` sorts the open set of wire reasons into the few
/// classes a caller reacts to, ``reason`` keeps the wire's own word.
public struct DeviceSessionFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What failed, coarsely, from the wire reason.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case codeRefused = "code_refused", rateLimited = "rate_limited", connectionLost = "connection_lost"
            case serviceUnavailable = "service_unavailable", resumeRejected = "resume_rejected"
            case protocolError = "protocol_error", failed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The node refused the code or the API token: `invalid_session_code`, `invalid_api_token`,
        /// `session_code_expired`, `session_code_closed`, `session_code_in_use`.
        public static let codeRefused = Kind(.codeRefused)
        /// `rate_limited`: try again after ``DeviceSessionFailure/retryAfterMilliseconds``.
        public static let rateLimited = Kind(.rateLimited)
        /// The link failed: `connection_lost`, `keepalive_timeout`.
        public static let connectionLost = Kind(.connectionLost)
        /// The node is going away or moved the session: `going_away`, `session_moved`.
        public static let serviceUnavailable = Kind(.serviceUnavailable)
        /// The session could not be resumed on a new link: `resume_rejected`.
        public static let resumeRejected = Kind(.resumeRejected)
        /// A peer broke the protocol: `malformed_frame`, `protocol_error`, `unsupported_version`, `frame_too_large`,
        /// `role_mismatch`, `unsupported_feature`, `feature_version_mismatch`.
        public static let protocolError = Kind(.protocolError)
        /// Any other reason (`internal_error`, `unspecified_error`, a code this version does not know).
        public static let failed = Kind(.failed)

        /// The kind of a failure with the wire reason `reason`.
        public init(reason: ReasonCode) {
            switch reason {
            case .invalidSessionCode, .invalidAPIToken, .sessionCodeExpired, .sessionCodeClosed, .sessionCodeInUse:
                self.init(.codeRefused)
            case .rateLimited: self.init(.rateLimited)
            case .connectionLost, .keepaliveTimeout: self.init(.connectionLost)
            case .goingAway, .sessionMoved: self.init(.serviceUnavailable)
            case .resumeRejected: self.init(.resumeRejected)
            case .malformedFrame, .protocolError, .unsupportedVersion, .frameTooLarge, .roleMismatch,
                .unsupportedFeature, .featureVersionMismatch:
                self.init(.protocolError)
            default: self.init(.failed)
            }
        }

        public var description: String { base.rawValue }
    }

    /// The SPEC §6 reason: `invalid_session_code`, `invalid_api_token`, `session_code_expired`, `session_code_closed`,
    /// `session_code_in_use`, `rate_limited`, `connection_lost`, `protocol_error`, …
    public var reason: ReasonCode
    /// Words for people.
    public var message: String
    /// With `rate_limited`: when to try again.
    public var retryAfterMilliseconds: UInt32?
    /// The error underneath, when there is one (a transport error for network failures), for code that wants to
    /// tell them apart without reading the message. Not part of equality.
    public var underlying: (any Error & Sendable)?

    /// What failed, coarsely: the kind of ``reason``.
    public var kind: Kind { Kind(reason: reason) }

    public init(
        reason: ReasonCode, message: String, retryAfterMilliseconds: UInt32? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.reason = reason
        self.message = message
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.underlying = underlying
    }

    public var description: String { message }

    /// Equal when reason, message and retry hint are; the underlying error is detail.
    public static func == (lhs: DeviceSessionFailure, rhs: DeviceSessionFailure) -> Bool {
        lhs.reason == rhs.reason && lhs.message == rhs.message && lhs.retryAfterMilliseconds == rhs.retryAfterMilliseconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reason)
        hasher.combine(message)
        hasher.combine(retryAfterMilliseconds)
    }
}
