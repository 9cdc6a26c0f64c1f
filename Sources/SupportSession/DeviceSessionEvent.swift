/// A connection request as the device's user sees it: who asks, for what. Answer it through the device node.
public struct ConnectionRequestInfo: Sendable, Hashable {
    public var requestID: UInt32
    public var supporterName: String
    public var connectionType: ConnectionType
    public var requestedFeatures: FeatureSet
}

/// Why the device's session failed; after it the session is over (SPEC §5.6 outcomes and link failures).
public struct DeviceSessionFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The SPEC §6 reason: `invalid_session_code`, `invalid_api_token`, `session_code_expired`, `session_code_closed`,
    /// `session_code_in_use`, `rate_limited`, `connection_lost`, `protocol_error`, …
    public var reason: ReasonCode
    /// Words for people.
    public var message: String
    /// With `rate_limited`: when to try again.
    public var retryAfterMilliseconds: UInt32?
    /// The error underneath, when there is one (a transport error for network failures), for code that wants to
    /// tell them apart without reading the message.
    public var underlying: (any Error & Sendable)?

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
    case supporterConnected(supporterName: String, connectionType: ConnectionType)
    /// The session or the waiting ended: by the supporter, the local user, or link loss (handleSupporterDisconnected).
    case supporterDisconnected(reason: ReasonCode, text: String?)
    /// The session failed and is over (handleError).
    case error(DeviceSessionFailure)
    /// Informative only; the session goes on (handleSessionError).
    case sessionError(reason: ReasonCode, feature: Feature.ID?, text: String?)
    /// VoIP changed state; the supporter was told the same.
    case voipStateChanged(VoIPCallState)
}
