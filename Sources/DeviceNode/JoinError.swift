#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import SupportWire
import SupportUtilities

/// Why ``DeviceNode/join(code:delegate:)`` (or ``DeviceSessionModel/join(code:)``) did not bring the code online.
///
/// Switch over ``reason`` (a closed set); show ``errorDescription`` (or `localizedDescription`) to the user; log
/// ``detail``.
public struct JoinError: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
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

    /// A join error; apps meet these, and build them only in tests.
    public init(_ reason: Reason, wireReason: ReasonCode? = nil, detail: String, retryAfter: Duration? = nil) {
        self.reason = reason
        self.wireReason = wireReason
        self.detail = detail
        self.retryAfter = retryAfter
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
        self.init(reason, wireReason: ending.reason, detail: ending.detail ?? "\(ending.reason)", retryAfter: ending.retryAfter)
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
        self.init(reason, detail: error.description)
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
