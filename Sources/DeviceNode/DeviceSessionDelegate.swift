import SupportSession

/// The classic-style receiver of a device session's events. Every method has an empty default.
///
/// Calls come on the configuration's `delegateQueue` (default: a private serial queue), one at a time, in the order
/// the events happened; ``DeviceSession/events`` yields the same events in the same order.
public protocol DeviceSessionDelegate: AnyObject, Sendable {
    /// The code is online: the supporter sees it. (handleSessionCodeOnline)
    func sessionCodeDidComeOnline(_ session: DeviceSession)
    /// A supporter asks to connect; answer with `request.allow()` or `request.reject()`.
    /// (handleConnectionRequestWithAuthenticationData)
    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication)
    /// The supporter withdrew the request; clear the prompt. (handleConnectionRequestAbort)
    func session(_ session: DeviceSession, requestWasAborted requestID: UInt32, reason: ReasonCode)
    /// Nobody answered the prompt in time: it was rejected.
    func session(_ session: DeviceSession, requestTimedOut requestID: UInt32)
    /// The session started. (handleSupporterConnected)
    func session(_ session: DeviceSession, supporterDidConnect supporterName: String, type: ConnectionType)
    /// The session ended: by the supporter, by the user, or by link loss. (handleSupporterDisconnected)
    func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?)
    /// The session failed and is over. (handleError)
    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure)
    /// Informative: the session goes on. (handleSessionError)
    func session(_ session: DeviceSession, sessionError reason: ReasonCode, feature: Feature.ID?, text: String?)
    /// VoIP started, was not started (and why), or ended.
    func session(_ session: DeviceSession, voipStateDidChange state: VoIPCallState)
    /// Right after `supporterDidConnect`: the grant in effect and the integrator's media descriptor (SPEC §15.2).
    func session(_ session: DeviceSession, didStartWith details: SessionDetails)
    /// The supporter asks for a feature the user must confirm: answer with
    /// ``DeviceSession/answerFeature(askID:grant:)`` (SPEC §15.3).
    func session(_ session: DeviceSession, didAskFor ask: FeatureAsk)
    /// A feature was granted, refused or revoked (the event says which).
    func session(_ session: DeviceSession, accessDidChange event: DeviceSessionEvent)
    /// A chat line, application message, file progress or whole file from the supporter (SPEC §15.4).
    func session(_ session: DeviceSession, didReceive message: MessageChannel.Delivery)
    /// One of our messages was delivered or refused, or the session ended with some undelivered.
    func session(_ session: DeviceSession, messageStatus event: DeviceSessionEvent)
    /// The link was lost; the session is kept while the device reconnects (SPEC §15.5).
    func sessionIsReconnecting(_ session: DeviceSession)
    /// The session continues on a new link.
    func sessionDidResume(_ session: DeviceSession)
}

extension DeviceSessionDelegate {
    public func sessionCodeDidComeOnline(_ session: DeviceSession) {}
    public func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {}
    public func session(_ session: DeviceSession, requestWasAborted requestID: UInt32, reason: ReasonCode) {}
    public func session(_ session: DeviceSession, requestTimedOut requestID: UInt32) {}
    public func session(_ session: DeviceSession, supporterDidConnect supporterName: String, type: ConnectionType) {}
    public func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?) {}
    public func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {}
    public func session(_ session: DeviceSession, sessionError reason: ReasonCode, feature: Feature.ID?, text: String?) {}
    public func session(_ session: DeviceSession, voipStateDidChange state: VoIPCallState) {}
    public func session(_ session: DeviceSession, didStartWith details: SessionDetails) {}
    public func session(_ session: DeviceSession, didAskFor ask: FeatureAsk) {}
    public func session(_ session: DeviceSession, accessDidChange event: DeviceSessionEvent) {}
    public func session(_ session: DeviceSession, didReceive message: MessageChannel.Delivery) {}
    public func session(_ session: DeviceSession, messageStatus event: DeviceSessionEvent) {}
    public func sessionIsReconnecting(_ session: DeviceSession) {}
    public func sessionDidResume(_ session: DeviceSession) {}
}

/// A connection request with its authentication data, and the one-time answer to it.
public struct ConnectionRequestAuthentication: Sendable {
    public let requestID: UInt32
    public let supporterName: String
    public let connectionType: ConnectionType
    public let requestedFeatures: FeatureSet
    /// With access control (SPEC §15.3): granted with the connection, no question asked.
    public let grantedWithConnection: FeatureSet
    /// With access control: the features the user chooses to grant or not (show them as choices).
    public let featuresToConfirm: FeatureSet
    /// With access control: asked for, but denied by a rule or missing on the device.
    public let deniedFeatures: FeatureSet
    private weak var session: DeviceSession?

    init(_ info: ConnectionRequestInfo, session: DeviceSession) {
        requestID = info.requestID
        supporterName = info.supporterName
        connectionType = info.connectionType
        requestedFeatures = info.requestedFeatures
        grantedWithConnection = info.grantedWithConnection
        featuresToConfirm = info.featuresToConfirm
        deniedFeatures = info.deniedFeatures
        self.session = session
    }

    /// Lets the supporter in, granting every feature to confirm. Counts once; after an abort or timeout it is
    /// ignored (and logged).
    public func allow() { session?.answer(requestID: requestID, allow: true) }
    /// Lets the supporter in, granting only `features` of ``featuresToConfirm`` (and what needs no confirmation).
    public func allow(granting features: FeatureSet) {
        session?.answer(requestID: requestID, allow: true, grant: features)
    }
    /// Refuses the supporter. Counts once.
    public func reject() { session?.answer(requestID: requestID, allow: false) }
}
