public import SupportSession
public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// The classic-style receiver of a device session's events, for code that runs off the main actor.
///
/// Calls come on the configuration's `delegateQueue` (default: a private serial queue), one at a time, in the order
/// the events happened; ``DeviceSession/events`` yields the same events in the same order. The delegate is
/// `Sendable` because it is called from that queue: a `@MainActor` view model should not conform to it (it would
/// have to mark every method `nonisolated` and hop back); use ``DeviceSessionModel`` instead, which is main-actor
/// isolated and observable.
///
/// ``session(_:didReceive:)`` is the one required method: a session that nobody can answer would reject every
/// request after ``DeviceConfiguration/promptTimeout``. Every other method has an empty default.
public protocol DeviceSessionDelegate: AnyObject, Sendable {
    /// A supporter asks to connect; answer with `request.allow()`, `request.reject()` or `await request.answer(_:)`,
    /// now or later (the prompt waits ``DeviceConfiguration/promptTimeout``). Required.
    /// (handleConnectionRequestWithAuthenticationData)
    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication)
    /// The code is online: the supporter sees it. `waitingMessage` is what the supporter team wants shown while the
    /// user waits, if any. (handleSessionCodeOnline)
    func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?)
    /// The supporter withdrew the request; clear the prompt. (handleConnectionRequestAbort)
    func session(_ session: DeviceSession, requestWasAborted requestID: UInt32, reason: ReasonCode)
    /// Nobody answered the prompt in time: it was rejected.
    func session(_ session: DeviceSession, requestTimedOut requestID: UInt32)
    /// The session started. (handleSupporterConnected)
    func session(_ session: DeviceSession, supporterDidConnect supporterName: String, type: ConnectionType)
    /// The session ended: by the supporter, by the user, or by link loss. (handleSupporterDisconnected)
    /// ``session(_:didEnd:)`` follows with the closed outcome.
    func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?)
    /// The session failed and is over. (handleError) ``session(_:didEnd:)`` follows with the closed outcome.
    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure)
    /// The session is over, whichever way: the closed ``SessionOutcome``, its user-facing text, and the wire detail.
    func session(_ session: DeviceSession, didEnd ending: SessionEnding)
    /// The session's ``DeviceSessionState`` changed (after the event's own call).
    func session(_ session: DeviceSession, stateDidChange state: DeviceSessionState)
    /// Informative: the session goes on. (handleSessionError)
    func session(_ session: DeviceSession, sessionError reason: ReasonCode, feature: Feature.ID?, text: String?)
    /// Start the app's VoIP now: the call decision allowed it (at session start, or when the app handed over its call
    /// later). ``session(_:voipStateDidChange:)`` follows with `.started`.
    func sessionShouldStartVoIP(_ session: DeviceSession)
    /// Stop the app's VoIP now: the session ended or the app cleared its call hand-over.
    func sessionShouldStopVoIP(_ session: DeviceSession)
    /// VoIP started, was not started (and why), or ended; the supporter was told the same.
    func session(_ session: DeviceSession, voipStateDidChange state: VoIPCallState)
    /// Right after `supporterDidConnect`: the grant in effect and the integrator's media descriptor (SPEC §15.2).
    func session(_ session: DeviceSession, didStartWith details: SessionDetails)
    /// The supporter asks for a feature the user must confirm: answer with
    /// ``DeviceSession/answerFeature(askID:grant:)`` (SPEC §15.3).
    func session(_ session: DeviceSession, didAskFor ask: FeatureAsk)
    /// A feature was granted, refused or revoked (the event says which). A refusal of a pending ask also ends its
    /// prompt: timed out (`request_timed_out`), or withdrawn by the supporter (`aborted_by_supporter`).
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
    /// Does nothing.
    public func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, requestWasAborted requestID: UInt32, reason: ReasonCode) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, requestTimedOut requestID: UInt32) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, supporterDidConnect supporterName: String, type: ConnectionType) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, didEnd ending: SessionEnding) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, stateDidChange state: DeviceSessionState) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, sessionError reason: ReasonCode, feature: Feature.ID?, text: String?) {}
    /// Does nothing.
    public func sessionShouldStartVoIP(_ session: DeviceSession) {}
    /// Does nothing.
    public func sessionShouldStopVoIP(_ session: DeviceSession) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, voipStateDidChange state: VoIPCallState) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, didStartWith details: SessionDetails) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, didAskFor ask: FeatureAsk) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, accessDidChange event: DeviceSessionEvent) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, didReceive message: MessageChannel.Delivery) {}
    /// Does nothing.
    public func session(_ session: DeviceSession, messageStatus event: DeviceSessionEvent) {}
    /// Does nothing.
    public func sessionIsReconnecting(_ session: DeviceSession) {}
    /// Does nothing.
    public func sessionDidResume(_ session: DeviceSession) {}
}

/// A connection request with its authentication data, and the one-time answer to it.
public struct ConnectionRequestAuthentication: Sendable {
    /// The request's id (the supporter node's numbering within the code).
    public let requestID: UInt32
    /// The supporter's display name.
    public let supporterName: String
    /// Screen share or Assist AR.
    public let connectionType: ConnectionType
    /// The features the supporter asks for.
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

    /// Answers the request and returns what became of the answer: sent, sent with the resume, not pending any more
    /// (already answered, withdrawn, timed out), or the session is over (also when the app released it).
    public func answer(
        _ decision: RequestDecision, isolation: isolated (any Actor)? = #isolation
    ) async -> AnswerOutcome {
        guard let session else { return .sessionOver }
        return await session.answer(requestID: requestID, decision)
    }

    /// Lets the supporter in, granting every feature to confirm. Counts once; `completion` (on the SDK's thread:
    /// keep it short) says what became of it.
    public func allow(completion: (@Sendable (AnswerOutcome) -> Void)? = nil) {
        send(.allow, completion)
    }

    /// Lets the supporter in, granting only `features` of ``featuresToConfirm`` (and what needs no confirmation).
    public func allow(granting features: FeatureSet, completion: (@Sendable (AnswerOutcome) -> Void)? = nil) {
        send(.allowGranting(features), completion)
    }

    /// Refuses the supporter. Counts once.
    public func reject(completion: (@Sendable (AnswerOutcome) -> Void)? = nil) { send(.reject, completion) }

    private func send(_ decision: RequestDecision, _ completion: (@Sendable (AnswerOutcome) -> Void)?) {
        guard let session else {
            completion?(.sessionOver)
            return
        }
        session.answer(requestID: requestID, decision, completion: completion)
    }
}
