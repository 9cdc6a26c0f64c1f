#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// Why ``DeviceNode/join(code:delegate:)`` (or ``DeviceSessionModel/join(code:)``) did not bring the code online.
///
/// Switch over ``reason`` (a closed set); show ``errorDescription`` (or `localizedDescription`) to the user; log
/// ``detail``. The `StoreError` shape besides: ``kind`` (a struct over a private enum, one kind per reason), a human
/// ``message`` and the ``underlying`` error.
public struct JoinError: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
    /// Why the join failed, coarsely: ``JoinError/reason`` as a kind that can grow without breaking callers.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidSessionCode = "invalid_session_code", invalidAPIToken = "invalid_api_token"
            case sessionCodeExpired = "session_code_expired", sessionCodeClosed = "session_code_closed"
            case sessionCodeInUse = "session_code_in_use", rateLimited = "rate_limited", network, unavailable
            case alreadyJoined = "already_joined", cancelled
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// ``Reason/invalidSessionCode``.
        public static let invalidSessionCode = Kind(.invalidSessionCode)
        /// ``Reason/invalidAPIToken``.
        public static let invalidAPIToken = Kind(.invalidAPIToken)
        /// ``Reason/sessionCodeExpired``.
        public static let sessionCodeExpired = Kind(.sessionCodeExpired)
        /// ``Reason/sessionCodeClosed``.
        public static let sessionCodeClosed = Kind(.sessionCodeClosed)
        /// ``Reason/sessionCodeInUse``.
        public static let sessionCodeInUse = Kind(.sessionCodeInUse)
        /// ``Reason/rateLimited``.
        public static let rateLimited = Kind(.rateLimited)
        /// ``Reason/network``.
        public static let network = Kind(.network)
        /// ``Reason/unavailable``.
        public static let unavailable = Kind(.unavailable)
        /// ``Reason/alreadyJoined``.
        public static let alreadyJoined = Kind(.alreadyJoined)
        /// ``Reason/cancelled``.
        public static let cancelled = Kind(.cancelled)

        /// The kind of `reason`.
        public init(reason: Reason) {
            switch reason {
            case .invalidSessionCode: self.init(.invalidSessionCode)
            case .invalidAPIToken: self.init(.invalidAPIToken)
            case .sessionCodeExpired: self.init(.sessionCodeExpired)
            case .sessionCodeClosed: self.init(.sessionCodeClosed)
            case .sessionCodeInUse: self.init(.sessionCodeInUse)
            case .rateLimited: self.init(.rateLimited)
            case .network: self.init(.network)
            case .unavailable: self.init(.unavailable)
            case .alreadyJoined: self.init(.alreadyJoined)
            case .cancelled: self.init(.cancelled)
            }
        }

        public var description: String { base.rawValue }
    }

    /// The closed set of reasons a join fails.
    public enum Reason: Sendable, Hashable, CaseIterable {
        /// The code is empty or too long (checked before anything is sent), or the node does not know it.
        case invalidSessionCode
        /// The node refused the API token.
        case invalidAPIToken
        /// The code expired.
        case sessionCodeExpired
        /// The code was closed.
        case sessionCodeClosed
        /// Another device is on the code.
        case sessionCodeInUse
        /// Too many attempts: wait ``JoinError/retryAfter``.
        case rateLimited
        /// No supporter node could be reached, or the link failed while joining.
        case network
        /// The node is shutting down, or refused for another reason (see the detail).
        case unavailable
        /// A code is already joined on this device node: leave it first.
        case alreadyJoined
        /// The app left (or the joining task was cancelled) before the code came online.
        case cancelled
    }

    /// The closed reason.
    public var reason: Reason
    /// The wire reason, when the supporter node gave one.
    public var wireReason: ReasonCode?
    /// A technical message for logs.
    public var detail: String
    /// With ``Reason/rateLimited``: how long to wait.
    public var retryAfter: Duration?
    /// The error underneath, when there is one (the ``SessionEnding`` or ``DeviceNodeError`` the join ended with).
    /// Not part of equality.
    public var underlying: (any Error & Sendable)?

    /// Why the join failed, coarsely: the kind of ``reason``.
    public var kind: Kind { Kind(reason: reason) }
    /// One sentence for the user: ``errorDescription``.
    public var message: String { errorDescription ?? "" }

    /// A join error; apps meet these, and build them only in tests.
    public init(
        _ reason: Reason, wireReason: ReasonCode? = nil, detail: String, retryAfter: Duration? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.reason = reason
        self.wireReason = wireReason
        self.detail = detail
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// The join error for how a session ended before it came online.
    init(_ ending: SessionEnding) {
        let reason: Reason =
            switch ending.outcome {
            case .invalidSessionCode: .invalidSessionCode
            case .invalidAPIToken: .invalidAPIToken
            case .sessionCodeExpired: .sessionCodeExpired
            case .sessionCodeClosed: .sessionCodeClosed
            case .sessionCodeInUse: .sessionCodeInUse
            case .rateLimited: .rateLimited
            case .connectionLost: .network
            case .endedByUser: .cancelled
            case .endedBySupporter, .serviceUnavailable, .failed: .unavailable
            }
        self.init(
            reason, wireReason: ending.reason, detail: ending.detail ?? "\(ending.reason)", retryAfter: ending.retryAfter,
            underlying: ending)
    }

    /// The join error for a refusal before anything was sent.
    init(_ error: DeviceNodeError) {
        let reason: Reason =
            if error.kind == .alreadyJoined {
                .alreadyJoined
            } else if error.kind == .invalidSessionCode {
                .invalidSessionCode
            } else {
                .unavailable
            }
        self.init(reason, detail: error.description, underlying: error)
    }

    public static func == (lhs: JoinError, rhs: JoinError) -> Bool {
        lhs.reason == rhs.reason && lhs.wireReason == rhs.wireReason && lhs.detail == rhs.detail
            && lhs.retryAfter == rhs.retryAfter
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reason)
        hasher.combine(wireReason)
        hasher.combine(detail)
        hasher.combine(retryAfter)
    }

    /// One sentence for the user.
    public var errorDescription: String? {
        switch reason {
        case .invalidSessionCode: SessionOutcome.invalidSessionCode.userMessage
        case .invalidAPIToken: SessionOutcome.invalidAPIToken.userMessage
        case .sessionCodeExpired: SessionOutcome.sessionCodeExpired.userMessage
        case .sessionCodeClosed: SessionOutcome.sessionCodeClosed.userMessage
        case .sessionCodeInUse: SessionOutcome.sessionCodeInUse.userMessage
        case .rateLimited: SessionOutcome.rateLimited.userMessage
        case .network: "The support service cannot be reached."
        case .unavailable: SessionOutcome.serviceUnavailable.userMessage
        case .alreadyJoined: "A support session is already running."
        case .cancelled: "Joining was cancelled."
        }
    }

    /// The technical detail.
    public var failureReason: String? { detail }

    /// What the user can do.
    public var recoverySuggestion: String? {
        switch reason {
        case .invalidSessionCode: SessionOutcome.invalidSessionCode.recoverySuggestion
        case .invalidAPIToken: SessionOutcome.invalidAPIToken.recoverySuggestion
        case .sessionCodeExpired, .sessionCodeClosed: SessionOutcome.sessionCodeExpired.recoverySuggestion
        case .sessionCodeInUse: SessionOutcome.sessionCodeInUse.recoverySuggestion
        case .rateLimited: SessionOutcome.rateLimited.recoverySuggestion
        case .network: "Check the network connection and try again."
        case .unavailable: SessionOutcome.serviceUnavailable.recoverySuggestion
        case .alreadyJoined: "Leave the current session first."
        case .cancelled: nil
        }
    }

    /// The reason and the detail.
    public var description: String { "\(reason): \(detail)" }
}

/// The user's answer to a connection request.
public enum RequestDecision: Sendable, Hashable {
    /// Let the supporter in, granting every feature the request asks the user to confirm.
    case allow
    /// Let the supporter in with access control, granting only these of the request's
    /// ``ConnectionRequestInfo/featuresToConfirm``; features granted with the connection are always included, denied
    /// ones never.
    case allowGranting(FeatureSet)
    /// Refuse the supporter; the code stays online.
    case reject
}

/// What became of an answer to a connection request.
public enum AnswerOutcome: Sendable, Hashable {
    /// The answer was sent to the supporter node.
    case sent
    /// The link is being re-established: the answer counts, and travels with the session's resume (SPEC §15.5).
    case sentWithResume
    /// No such request is waiting: it was already answered, withdrawn by the supporter, or timed out. Nothing sent.
    case notPending
    /// The session is over (ended, left, or released by the app). Nothing sent.
    case sessionOver
}
