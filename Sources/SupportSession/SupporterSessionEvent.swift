public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// What the supporter node's session with one device reports, in order (SPEC §9).
public enum SupporterSessionEvent: Sendable, Hashable {
    /// A device registered a code: the code is online.
    case deviceOnline(code: String, capabilities: FeatureSet)
    /// A registration was refused with this reason.
    case registrationRefused(code: String, reason: ReasonCode)
    /// The device's user allowed: the session runs.
    case connected(requestID: UInt32)
    /// The device's user rejected (or its prompt timed out: `request_timed_out`).
    case rejected(requestID: UInt32, reason: ReasonCode)
    /// Our request timed out before an answer; REQUEST_ABORT was sent.
    case requestTimedOut(requestID: UInt32)
    /// The registration ended: the device left, the supporter ended it, or the code was closed or expired.
    case ended(reason: ReasonCode, text: String?)
    /// The device reported its VoIP state.
    case voipState(VoIPCallState, text: String?)
    /// Informative: a feature mismatch the device reported; the session goes on.
    case sessionError(reason: ReasonCode, feature: Feature.ID?, text: String?)
    /// With access control (SPEC §15.3): the code's rules removed these features from a request or an ask.
    case featuresDenied(FeatureSet)
    /// With access control: the grant in effect as the session starts.
    case grantInEffect(FeatureSet)
    /// The device granted an ask.
    case featureGranted(Feature.ID)
    /// The device refused an ask (`rejected_by_user`, `request_timed_out`, `feature_denied`, …).
    case featureRefused(Feature.ID, reason: ReasonCode)
    /// The device revoked a grant.
    case featureRevoked(Feature.ID)
    /// A message from the device (SPEC §15.4).
    case messageReceived(MessageChannel.Delivery)
    /// The device acknowledged our message.
    case messageDelivered(id: UInt32)
    /// The device refused our message.
    case messageRefused(id: UInt32, reason: ReasonCode, text: String?)
    /// The device acknowledged every part of our file `transferID`.
    case fileDelivered(transferID: UInt32)
    /// The device refused a part of our file `transferID`; the rest was not sent.
    case fileRefused(transferID: UInt32, reason: ReasonCode)
    /// The registration ended with these of our messages not acknowledged.
    case messagesUndelivered(MessageChannel.Undelivered)
    /// The device's link was lost; the session is kept for the grace period (SPEC §15.5).
    case reconnecting
    /// The device resumed on a new connection.
    case resumed
}

/// The node's answer to a REGISTER: accept the code, or refuse with a reason.
public enum RegistrationDecision: Sendable, Hashable {
    /// Online; `waitingMessage` (at most 256 bytes are sent) is shown to the device's user while it waits.
    case accept(codeType: SessionCodeType, waitingMessage: String? = nil)
    case refuse(ReasonCode, text: String? = nil, retryAfterMilliseconds: UInt32? = nil)
}
