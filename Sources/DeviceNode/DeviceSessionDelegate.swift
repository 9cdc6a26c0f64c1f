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
}

/// A connection request with its authentication data, and the one-time answer to it.
public struct ConnectionRequestAuthentication: Sendable {
    public let requestID: UInt32
    public let supporterName: String
    public let connectionType: ConnectionType
    public let requestedFeatures: FeatureSet
    private weak var session: DeviceSession?

    init(_ info: ConnectionRequestInfo, session: DeviceSession) {
        requestID = info.requestID
        supporterName = info.supporterName
        connectionType = info.connectionType
        requestedFeatures = info.requestedFeatures
        self.session = session
    }

    /// Lets the supporter in. Counts once; after an abort or timeout it is ignored (and logged).
    public func allow() { session?.answer(requestID: requestID, allow: true) }
    /// Refuses the supporter. Counts once.
    public func reject() { session?.answer(requestID: requestID, allow: false) }
}
