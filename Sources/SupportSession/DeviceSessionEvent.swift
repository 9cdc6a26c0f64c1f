public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// A connection request as the device's user sees it: who asks, for what. Answer it through the device node.
public struct ConnectionRequestInfo: Sendable, Hashable {
    public var requestID: UInt32
    public var supporterName: String
    public var connectionType: ConnectionType
    public var requestedFeatures: FeatureSet
    /// With access control (SPEC §15.3): features granted with the connection, without a question.
    public var grantedWithConnection: FeatureSet = []
    /// With access control: features the user may grant or not when allowing (the prompt's choices).
    public var featuresToConfirm: FeatureSet = []
    /// With access control: features asked for that a rule denies or the device lacks; never granted.
    public var deniedFeatures: FeatureSet = []

    public init(
        requestID: UInt32, supporterName: String, connectionType: ConnectionType, requestedFeatures: FeatureSet,
        grantedWithConnection: FeatureSet = [], featuresToConfirm: FeatureSet = [], deniedFeatures: FeatureSet = []
    ) {
        self.requestID = requestID
        self.supporterName = supporterName
        self.connectionType = connectionType
        self.requestedFeatures = requestedFeatures
        self.grantedWithConnection = grantedWithConnection
        self.featuresToConfirm = featuresToConfirm
        self.deniedFeatures = deniedFeatures
    }
}

/// What the device learns as a session starts (SPEC §5.10, §15.2).
public struct SessionDetails: Sendable, Hashable {
    /// With access control: the features granted for the session; nil when access control is not in effect.
    public var grantedFeatures: FeatureSet?
    /// With session messages: the integrator's media descriptor (e.g. a WebRTC room and token), unchanged.
    public var mediaDescriptor: [UInt8]?

    public init(grantedFeatures: FeatureSet? = nil, mediaDescriptor: [UInt8]? = nil) {
        self.grantedFeatures = grantedFeatures
        self.mediaDescriptor = mediaDescriptor
    }
}

/// A supporter's ask for a feature during the session that needs the user's answer (SPEC §15.3).
public struct FeatureAsk: Sendable, Hashable {
    public var askID: UInt32
    public var feature: Feature.ID
    /// Why the supporter asks.
    public var text: String?
}

/// What the device session reports to the app, in order (SPEC §8).
public enum DeviceSessionEvent: Sendable, Hashable {
    /// The code is online: the supporter sees it; the device waits (handleSessionCodeOnline).
    /// `waitingMessage` is what the supporter team wants shown while the user waits, if any.
    case sessionCodeOnline(codeType: SessionCodeType?, waitingMessage: String?)
    /// A supporter asks to connect (handleConnectionRequestWithAuthenticationData).
    case connectionRequest(ConnectionRequestInfo)
    /// The supporter withdrew the request before it was answered (handleConnectionRequestAbort).
    case connectionRequestAborted(requestID: UInt32, reason: ReasonCode)
    /// Nobody answered in time; the request was rejected (`request_timed_out`).
    case connectionRequestTimedOut(requestID: UInt32)
    /// The session started (handleSupporterConnected).
    case supporterConnected(supporterName: String, connectionType: ConnectionType, details: SessionDetails)
    /// The session or the waiting ended: by the supporter, the local user, or link loss (handleSupporterDisconnected).
    case supporterDisconnected(reason: ReasonCode, text: String?)
    /// The session failed and is over (handleError).
    case error(DeviceSessionFailure)
    /// Informative only; the session goes on (handleSessionError).
    case sessionError(reason: ReasonCode, feature: Feature.ID?, text: String?)
    /// VoIP changed state; the supporter was told the same.
    case voipStateChanged(VoIPCallState)
    /// The supporter asks for a feature the user must confirm; answer through the session (SPEC §15.3).
    case featureRequested(FeatureAsk)
    /// A feature was granted (with an ask answered at once or by the user).
    case featureGranted(Feature.ID)
    /// An ask was refused: by the user, a rule (`feature_denied`), a missing capability, or the prompt's timer.
    case featureRefused(Feature.ID, reason: ReasonCode)
    /// The device revoked a grant.
    case featureRevoked(Feature.ID)
    /// A message from the supporter (SPEC §15.4).
    case messageReceived(MessageChannel.Delivery)
    /// The supporter's side acknowledged our message.
    case messageDelivered(id: UInt32)
    /// The supporter's side refused our message.
    case messageRefused(id: UInt32, reason: ReasonCode, text: String?)
    /// The session ended with these of our messages not acknowledged.
    case messagesUndelivered(MessageChannel.Undelivered)
    /// The link was lost; the session is kept while the device reconnects (SPEC §15.5).
    case reconnecting
    /// The session continues on a new link.
    case resumed
}
