#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import SupportSession
public import SupportWire
import SupportUtilities

/// How a session ended, or why it could not start: a closed set an app switches over without `default`.
///
/// The wire's ``ReasonCode`` is open (a newer supporter node may send codes this SDK does not know); every code maps
/// to one of these cases, and the code itself stays available as detail (``SessionEnding/reason``).
public enum SessionOutcome: Sendable, Hashable, CaseIterable {
    /// The supporter ended the session or the waiting.
    case endedBySupporter
    /// The user (the app) left.
    case endedByUser
    /// The network failed: the supporter node could not be reached, or the link was lost and could not be resumed.
    case connectionLost
    /// The supporter node does not know the session code.
    case invalidSessionCode
    /// The supporter node refused the app's API token.
    case invalidAPIToken
    /// The session code expired.
    case sessionCodeExpired
    /// The supporter team closed the session code.
    case sessionCodeClosed
    /// Another device is on this session code.
    case sessionCodeInUse
    /// Too many attempts; try again later (``SessionEnding/retryAfter``).
    case rateLimited
    /// The supporter node shut down or is going away.
    case serviceUnavailable
    /// Anything else (a protocol error, an internal error of the node, a refused resume): see the detail.
    case failed

    /// Maps a wire reason to the outcome an app shows.
    public init(_ reason: ReasonCode) {
        switch reason {
        case .endedBySupporter, .abortedBySupporter: self = .endedBySupporter
        case .endedByDevice, .rejectedByUser, .normalClose, .success: self = .endedByUser
        case .connectionLost, .keepaliveTimeout: self = .connectionLost
        case .invalidSessionCode: self = .invalidSessionCode
        case .invalidAPIToken: self = .invalidAPIToken
        case .sessionCodeExpired: self = .sessionCodeExpired
        case .sessionCodeClosed: self = .sessionCodeClosed
        case .sessionCodeInUse: self = .sessionCodeInUse
        case .rateLimited: self = .rateLimited
        case .goingAway, .sessionMoved: self = .serviceUnavailable
        default: self = .failed
        }
    }

    /// Whether the session ended because something went wrong (rather than by either side's choice).
    public var isFailure: Bool {
        switch self {
        case .endedBySupporter, .endedByUser: false
        default: true
        }
    }

    /// One sentence for the user (English; apps that localize switch over the outcome and use their own strings).
    public var userMessage: String {
        switch self {
        case .endedBySupporter: "The supporter ended the session."
        case .endedByUser: "You left the session."
        case .connectionLost: "The connection to the support service was lost."
        case .invalidSessionCode: "This session code is not valid."
        case .invalidAPIToken: "This app is not allowed to use the support service."
        case .sessionCodeExpired: "This session code has expired."
        case .sessionCodeClosed: "This session code was closed."
        case .sessionCodeInUse: "Another device is already using this session code."
        case .rateLimited: "Too many attempts."
        case .serviceUnavailable: "The support service is not available right now."
        case .failed: "The support session failed."
        }
    }

    /// What the user can do about it, when there is something.
    public var recoverySuggestion: String? {
        switch self {
        case .endedBySupporter, .endedByUser: nil
        case .connectionLost: "Check the network connection and join again."
        case .invalidSessionCode: "Check the code with your supporter."
        case .invalidAPIToken: "Update the app, or contact the app's support team."
        case .sessionCodeExpired, .sessionCodeClosed: "Ask your supporter for a new code."
        case .sessionCodeInUse: "Leave the session on the other device, or ask for a new code."
        case .rateLimited: "Wait a moment, then try again."
        case .serviceUnavailable: "Try again in a few minutes."
        case .failed: "Try again; if it keeps failing, contact your supporter."
        }
    }
}

extension DeviceSessionFailure: LocalizedError {
    /// The closed outcome of this failure.
    public var outcome: SessionOutcome { SessionOutcome(reason) }
    /// ``SessionOutcome/userMessage``; the technical ``message`` stays for logs.
    public var errorDescription: String? { outcome.userMessage }
    /// The wire reason and the technical message.
    public var failureReason: String? { "\(reason): \(message)" }
    /// ``SessionOutcome/recoverySuggestion``.
    public var recoverySuggestion: String? { outcome.recoverySuggestion }
}
