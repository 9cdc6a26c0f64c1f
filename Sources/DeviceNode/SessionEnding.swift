import SupportRuntime
public import SupportSession
public import SupportWire
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How a session ended: the outcome an app switches over, the user-facing text, and the wire detail.
///
/// The `StoreError` shape: ``kind`` (a struct over a private enum, one kind per ``SessionOutcome``), a human
/// ``message``, the wire context, and the ``underlying`` error. Apps that want a closed set switch over ``outcome``.
public struct SessionEnding: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
    /// How the session ended, coarsely: ``SessionEnding/outcome`` as a kind.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case endedBySupporter = "ended_by_supporter", endedByUser = "ended_by_user"
            case connectionLost = "connection_lost", invalidSessionCode = "invalid_session_code"
            case invalidAPIToken = "invalid_api_token", sessionCodeExpired = "session_code_expired"
            case sessionCodeClosed = "session_code_closed", sessionCodeInUse = "session_code_in_use"
            case rateLimited = "rate_limited", serviceUnavailable = "service_unavailable", failed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// ``SessionOutcome/endedBySupporter``.
        public static let endedBySupporter = Kind(.endedBySupporter)
        /// ``SessionOutcome/endedByUser``.
        public static let endedByUser = Kind(.endedByUser)
        /// ``SessionOutcome/connectionLost``.
        public static let connectionLost = Kind(.connectionLost)
        /// ``SessionOutcome/invalidSessionCode``.
        public static let invalidSessionCode = Kind(.invalidSessionCode)
        /// ``SessionOutcome/invalidAPIToken``.
        public static let invalidAPIToken = Kind(.invalidAPIToken)
        /// ``SessionOutcome/sessionCodeExpired``.
        public static let sessionCodeExpired = Kind(.sessionCodeExpired)
        /// ``SessionOutcome/sessionCodeClosed``.
        public static let sessionCodeClosed = Kind(.sessionCodeClosed)
        /// ``SessionOutcome/sessionCodeInUse``.
        public static let sessionCodeInUse = Kind(.sessionCodeInUse)
        /// ``SessionOutcome/rateLimited``.
        public static let rateLimited = Kind(.rateLimited)
        /// ``SessionOutcome/serviceUnavailable``.
        public static let serviceUnavailable = Kind(.serviceUnavailable)
        /// ``SessionOutcome/failed``.
        public static let failed = Kind(.failed)

        /// The kind of `outcome`.
        public init(outcome: SessionOutcome) {
            switch outcome {
            case .endedBySupporter: self.init(.endedBySupporter)
            case .endedByUser: self.init(.endedByUser)
            case .connectionLost: self.init(.connectionLost)
            case .invalidSessionCode: self.init(.invalidSessionCode)
            case .invalidAPIToken: self.init(.invalidAPIToken)
            case .sessionCodeExpired: self.init(.sessionCodeExpired)
            case .sessionCodeClosed: self.init(.sessionCodeClosed)
            case .sessionCodeInUse: self.init(.sessionCodeInUse)
            case .rateLimited: self.init(.rateLimited)
            case .serviceUnavailable: self.init(.serviceUnavailable)
            case .failed: self.init(.failed)
            }
        }

        public var description: String { base.rawValue }
    }

    /// The closed outcome.
    public var outcome: SessionOutcome
    /// The wire reason (SPEC §6), for logs and support tickets.
    public var reason: ReasonCode
    /// The supporter's text, or the SDK's technical message for a failure; for logs, not for the user.
    public var detail: String?
    /// With ``SessionOutcome/rateLimited``: how long to wait before joining again.
    public var retryAfter: Duration?
    /// The error underneath, when there is one (the transport error of a lost link). Not part of equality.
    public var underlying: (any Error & Sendable)?

    /// How the session ended, coarsely: the kind of ``outcome``.
    public var kind: Kind { Kind(outcome: outcome) }
    /// One sentence for the user: ``SessionOutcome/userMessage``.
    public var message: String { outcome.userMessage }

    /// An ending for a wire reason.
    public init(
        reason: ReasonCode, detail: String? = nil, retryAfter: Duration? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.outcome = SessionOutcome(reason)
        self.reason = reason
        self.detail = detail
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// The ending a failure event carries.
    public init(_ failure: DeviceSessionFailure) {
        self.init(
            reason: failure.reason, detail: failure.message,
            retryAfter: failure.retryAfterMilliseconds.map { .milliseconds(Int64($0)) }, underlying: failure.underlying)
    }

    public static func == (lhs: SessionEnding, rhs: SessionEnding) -> Bool {
        lhs.outcome == rhs.outcome && lhs.reason == rhs.reason && lhs.detail == rhs.detail
            && lhs.retryAfter == rhs.retryAfter
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(outcome)
        hasher.combine(reason)
        hasher.combine(detail)
        hasher.combine(retryAfter)
    }

    /// ``SessionOutcome/userMessage``.
    public var errorDescription: String? { outcome.userMessage }
    /// The wire reason and the detail.
    public var failureReason: String? { detail.map { "\(reason): \($0)" } ?? "\(reason)" }
    /// ``SessionOutcome/recoverySuggestion``.
    public var recoverySuggestion: String? { outcome.recoverySuggestion }
    /// The outcome's text, then the wire reason.
    public var description: String { "\(outcome.userMessage) (\(failureReason ?? ""))" }
}
