public import SupportUtilities
public import SupportWire
public import SupportVocabulary

/// The device's session state machine of SPEC §8. Sans-I/O: events in, actions out; time is an input.
///
/// One machine serves one joined code at a time. It never throws and never traps on what a peer sends: an
/// out-of-state frame becomes the spec'd discard or a `protocolViolation` action.
public struct DeviceSessionMachine: Sendable {
    public enum State: Sendable, Hashable {
        case idle
        case registering
        case online
        case requestPending(ConnectionRequestInfo, deadline: Deadline)
        case awaitingStart(ConnectionRequestInfo)
        case active(ConnectionRequestInfo)
    }

    public enum Action: Sendable, Hashable {
        case send(Message)
        case report(DeviceSessionEvent)
        /// The peer broke SPEC §8: close the link with GOAWAY `protocol_error` and this text.
        case protocolViolation(String)
        /// Start the app's VoIP (the call hand-over allowed it).
        case startVoIP
        /// Stop the app's VoIP.
        case stopVoIP
        /// RESUME_RESULT `rate_limited`: dial again no sooner than this, within the grace period (SPEC §15.5).
        case resumeLater(milliseconds: UInt32)
    }

    public private(set) var state: State = .idle
    /// What the device can do, sent with REGISTER and checked against requests.
    public let capabilities: FeatureSet
    /// How long a request prompt stays unanswered before it counts as a reject.
    public let promptTimeout: Duration
    /// The call the app handed over (setupCallUUID), if any.
    public private(set) var handedOverCallID: String?
    /// Whether our VoIP runs.
    public private(set) var voipRunning = false
    /// The app's access rules (SPEC §15.3).
    public let rules: FeatureRules
    /// How long a feature ask's prompt stays unanswered before it counts as refused.
    public let featurePromptTimeout: Duration
    /// The extensions in effect on the current link (SPEC §15.1).
    public private(set) var extensions: ProtocolExtensions = .none
    /// With access control: the features granted in the active session.
    public private(set) var granted: FeatureSet = []
    /// The in-session message channel of the current registration (SPEC §15.4).
    public private(set) var channel = MessageChannel()
    /// Asks for features waiting for the user, by ask id, with their deadlines.
    public private(set) var featureAsks: [UInt32: (ask: FeatureAsk, deadline: Deadline)] = [:]
    /// With session resume: the last secret the node gave; nil when the session cannot be resumed.
    public private(set) var resumeSecret: String?
    /// The joined code (for RESUME).
    public private(set) var code: String?
    /// Whether the link was lost and the session waits for a RESUME to be answered or sent (SPEC §15.5).
    public private(set) var isReconnecting = false
    /// The last request this device rejected or let time out, for RESUME's `request_id` in state online.
    private var lastRefusedRequestID: UInt32?
    /// The grant sent with the allow, until SESSION_STARTED says what is in effect.
    private var grantSent: FeatureSet?
    private var peerMaxFrameSize = WireLimits.defaultMaxFrameSize
    /// The last FEATURE_REQUEST ask id of the registration (they increase, SPEC §15.3).
    private var lastAskID: UInt32 = 0
    /// Feature asks that may wait for the user at once; one more is the node's protocol error.
    static let pendingAskLimit = 8

    public init(
        capabilities: FeatureSet, promptTimeout: Duration = .seconds(60), rules: FeatureRules = .deviceDefault,
        featurePromptTimeout: Duration = .seconds(30)
    ) {
        self.capabilities = capabilities
        self.promptTimeout = promptTimeout
        self.rules = rules
        self.featurePromptTimeout = featurePromptTimeout
    }

    /// When ``tick(now:)`` should run next: the earliest prompt deadline, as time since an arbitrary origin the caller
    /// uses.
    public var nextDeadline: Deadline? {
        var deadlines = featureAsks.values.map(\.deadline)
        if case .requestPending(_, let deadline) = state { deadlines.append(deadline) }
        return deadlines.min()
    }

    /// A link opened with these extensions in effect and a peer receiving `peerMaxFrameSize`-byte payloads.
    public mutating func linkOpened(extensions: ProtocolExtensions, peerMaxFrameSize: Int) {
        self.extensions = extensions
        self.peerMaxFrameSize = peerMaxFrameSize
        channel.partSize = MessageChannel.partSize(forPeerMaxFrameSize: peerMaxFrameSize)
    }

    /// Whether a code is joined (registering, waiting, prompt shown, or active).
    public var isJoined: Bool { state != .idle }

    // MARK: local events

    /// Joins `code` with `token`. Refused (nothing sent) when a code is joined, or when the REGISTER would not
    /// encode: a code of 1–64 bytes, a token of 1–256, capabilities with versions ≥ 1 that fit a 16 KiB frame.
    public mutating func register(code: String, token: String) throws(Refusal) -> [Action] {
        guard state == .idle else {
            throw Refusal(.wrongState, "a session code is already joined; leave it before joining another")
        }
        let message = Message.register(Register(sessionCode: code, apiToken: token, capabilities: capabilities))
        guard message.encodesWithinDefaultLimit else {
            throw Refusal(
                .invalidArgument, "REGISTER would not encode: the code needs 1–64 bytes, the token 1–256, "
                    + "and every capability a version of 1 or more")
        }
        state = .registering
        self.code = code
        lastAskID = 0
        resumeSecret = nil
        channel = MessageChannel(peerMaxFrameSize: peerMaxFrameSize)
        return [.send(message)]
    }

    /// The user's answer to the pending request. An answer counts once: any other is ignored (and returns nothing).
    ///
    /// With access control, `grant` is what the user kept of the request's ``ConnectionRequestInfo/featuresToConfirm``
    /// (nil: all of them); features granted with the connection are always included, denied ones never.
    public mutating func answer(requestID: UInt32, allow: Bool, grant: FeatureSet? = nil) -> [Action] {
        guard case .requestPending(let request, _) = state, request.requestID == requestID else { return [] }
        let actions = sendAnswer(request, allow: allow, grant: grant)
        if isReconnecting { return [] }  // carried by the RESUME's state (SPEC §15.5)
        return actions
    }

    private mutating func sendAnswer(_ request: ConnectionRequestInfo, allow: Bool, grant: FeatureSet?) -> [Action] {
        if allow {
            state = .awaitingStart(request)
            var response = ConnectionResponse(requestID: request.requestID, decision: .allow)
            if extensions.contains(.accessControl) {
                let kept = (grant ?? request.featuresToConfirm).filter { request.featuresToConfirm.contains($0.id) }
                let features = FeatureSet(request.grantedWithConnection.map { $0 } + kept)
                response.grantedFeatures = features
                grantSent = features
            }
            return [.send(.connectionResponse(response))]
        }
        state = .online
        lastRefusedRequestID = request.requestID
        return [.send(.connectionResponse(ConnectionResponse(requestID: request.requestID, decision: .reject)))]
    }

    /// The user leaves, in any joined state: SESSION_END `ended_by_device`, and the app hears it too.
    public mutating func leave() -> [Action] {
        guard state != .idle else { return [] }
        // While reconnecting there is no link: the session ends here, and the node learns by its grace period.
        var actions: [Action] = isReconnecting ? [] : [.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))]
        actions += endSession()
        actions.append(.report(.supporterDisconnected(reason: .endedByDevice, text: nil)))
        return actions
    }

    /// Leaves every session state: VoIP stops, the channel reports what it could not deliver, asks are dropped.
    private mutating func endSession() -> [Action] {
        var actions = stopVoIPIfRunning()
        state = .idle
        isReconnecting = false
        resumeSecret = nil
        granted = []
        grantSent = nil
        featureAsks = [:]
        lastRefusedRequestID = nil
        let undelivered = channel.close()
        if !undelivered.isEmpty { actions.append(.report(.messagesUndelivered(undelivered))) }
        return actions
    }

    /// The app hands over its own call (setupCallUUID): VoIP may run alongside it.
    public mutating func setCallID(_ id: String) -> [Action] {
        handedOverCallID = id
        return []
    }

    /// The app hands over its own call while `call` is what the call observer reports now. In an active session
    /// whose VoIP did not start because another call was running, the decision is made again: when the running call
    /// is now the handed-over one (or none runs), VoIP starts and the supporter is told (VOIP_STATE `started`).
    public mutating func setCallID(_ id: String, call: SystemCallStatus) -> [Action] {
        handedOverCallID = id
        guard !voipRunning, !isReconnecting, case .active(let request) = state else { return [] }
        let voip = VoIPDecision.decide(
            deviceHasVoIP: capabilities.contains(.voip), supporterWantsVoIP: request.requestedFeatures.contains(.voip),
            call: call, handedOverCallID: id)
        guard voip == .started else { return [] }
        voipRunning = true
        return [.startVoIP, .send(.voipState(VoIPState(state: voip, text: Self.describe(voip)))), .report(.voipStateChanged(voip))]
    }

    /// The app clears its call hand-over (clearCallUUID): our VoIP ends.
    public mutating func clearCallID() -> [Action] {
        handedOverCallID = nil
        guard voipRunning, case .active = state else { return [] }
        voipRunning = false
        return [.stopVoIP, .send(.voipState(VoIPState(state: .ended))), .report(.voipStateChanged(.ended))]
    }

    /// Time passed (`now` on the caller's monotonic origin): the prompt may time out.
    public mutating func tick(now: Deadline) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in featureAsks.sorted(by: { $0.key < $1.key }) where now >= entry.deadline {
            actions += answerFeature(askID: id, grant: false, reason: .requestTimedOut)
        }
        guard case .requestPending(let request, let deadline) = state, now >= deadline else { return actions }
        state = .online
        lastRefusedRequestID = request.requestID
        if !isReconnecting {
            actions.append(
                .send(
                    .connectionResponse(
                        ConnectionResponse(requestID: request.requestID, decision: .reject, reason: .requestTimedOut)))
            )
        }
        actions.append(.report(.connectionRequestTimedOut(requestID: request.requestID)))
        return actions
    }

    /// Whether a lost link may be resumed (SPEC §15.5): session resume was in effect, the node gave a secret, and a
    /// code is joined past registering.
    public var canResume: Bool {
        extensions.contains(.sessionResume) && resumeSecret != nil && state != .idle && state != .registering
    }

    /// The link was lost (not closed by a GOAWAY or SESSION_END). With ``canResume`` the session is kept and the app
    /// hears ``DeviceSessionEvent/reconnecting``; otherwise this is ``linkClosed(reason:message:)``.
    public mutating func linkLost(reason: ReasonCode, message: String) -> [Action] {
        guard canResume else { return linkClosed(reason: reason, message: message) }
        guard !isReconnecting else { return [] }
        isReconnecting = true
        // Asks pending at a link loss are withdrawn on both sides (SPEC §15.5).
        var actions: [Action] = [.report(.reconnecting)]
        for (_, entry) in featureAsks.sorted(by: { $0.key < $1.key }) {
            actions.append(.report(.featureRefused(entry.ask.feature, reason: .connectionLost)))
        }
        featureAsks = [:]
        return actions
    }

    /// The RESUME to send first on a new link while reconnecting; nil when there is nothing to resume.
    public func resumeMessage() -> Resume? {
        guard isReconnecting, let code, let resumeSecret else { return nil }
        let last = channel.lastReceivedID == 0 ? nil : channel.lastReceivedID
        switch state {
        case .online:
            return Resume(
                sessionCode: code, resumeSecret: resumeSecret, state: .online, requestID: lastRefusedRequestID,
                lastMessageID: last)
        case .requestPending(let request, _):
            return Resume(
                sessionCode: code, resumeSecret: resumeSecret, state: .requestPending, requestID: request.requestID,
                lastMessageID: last)
        case .awaitingStart(let request):
            return Resume(
                sessionCode: code, resumeSecret: resumeSecret, state: .awaitingStart, requestID: request.requestID,
                lastMessageID: last, grantedFeatures: extensions.contains(.accessControl) ? grantSent : nil)
        case .active(let request):
            return Resume(
                sessionCode: code, resumeSecret: resumeSecret, state: .active, requestID: request.requestID,
                lastMessageID: last)
        case .idle, .registering:
            return nil
        }
    }

    /// The link under the session closed: the session is over.
    public mutating func linkClosed(reason: ReasonCode, message: String) -> [Action] {
        let previous = state
        guard previous != .idle else { return [] }
        var actions = endSession()
        switch previous {
        case .active:
            actions.append(.report(.supporterDisconnected(reason: reason, text: message)))
        default:
            actions.append(.report(.error(DeviceSessionFailure(reason: reason, message: message))))
        }
        return actions
    }

    private mutating func stopVoIPIfRunning() -> [Action] {
        guard voipRunning else { return [] }
        voipRunning = false
        return [.stopVoIP]
    }

    // MARK: frames

    /// A session frame arrived. `now` starts the prompt timer; `call` is the call observer's report, read at
    /// SESSION_STARTED for the VoIP decision.
    ///
    /// Total over `Message`: connection-level frames get §7's rule for an open connection (HELLO / HELLO_ACK are a
    /// protocol error in every session state; PING, PONG, GOAWAY give no session action).
    public mutating func received(_ message: Message, now: Deadline, call: SystemCallStatus) -> [Action] {
        switch FrameRouting(message) {
        case .session: break
        case .connectionOnly: return []
        case .violation(let text): return [.protocolViolation(text)]
        }
        if let extensionNeeded = message.frameType.requiredExtension, !extensions.contains(extensionNeeded) {
            return [.protocolViolation("\(message.frameType.specName) needs \(extensionNeeded), not in effect (SPEC §15.1)")]
        }
        if case .resumeResult(let result) = message, state != .idle { return resumed(result) }
        switch (state, message) {
        case (.idle, _):
            return []  // crossed our SESSION_END
        case (.registering, .registerResult(let result)):
            if result.reason == .success {
                state = .online
                if extensions.contains(.sessionResume) { resumeSecret = result.resumeSecret }
                return [.report(.sessionCodeOnline(codeType: result.codeType, waitingMessage: result.text))]
            }
            state = .idle
            return [
                .report(
                    .error(
                        DeviceSessionFailure(
                            reason: result.reason, message: Self.describe(result),
                            retryAfterMilliseconds: result.retryAfterMilliseconds)))
            ]
        case (.online, .connectionRequest(let request)):
            let info = requestInfo(request)
            state = .requestPending(info, deadline: now + promptTimeout)
            return [.report(.connectionRequest(info))] + featureMismatches(for: request)
        case (.online, .requestAbort), (.active, .requestAbort):
            return []
        case (.requestPending(let pending, _), .requestAbort(let abort)),
            (.awaitingStart(let pending), .requestAbort(let abort)):
            guard abort.requestID == pending.requestID else { return [] }
            state = .online
            return [.report(.connectionRequestAborted(requestID: abort.requestID, reason: abort.reason))]
        case (.awaitingStart(let pending), .sessionStarted(let started)) where started.requestID == pending.requestID:
            state = .active(pending)
            if extensions.contains(.sessionResume), let secret = started.resumeSecret { resumeSecret = secret }
            var details = SessionDetails()
            if extensions.contains(.accessControl) {
                // Never more than this device granted: the node's list is trusted only within our own grant.
                // Absent under access control: nothing granted (SPEC §15.3).
                let offered = grantSent ?? []
                granted = FeatureSet((started.grantedFeatures ?? []).filter { offered.contains($0.id) })
                details.grantedFeatures = granted
            }
            if extensions.contains(.sessionMessages) { details.mediaDescriptor = started.mediaDescriptor }
            grantSent = nil
            var actions: [Action] = [
                .report(
                    .supporterConnected(
                        supporterName: pending.supporterName, connectionType: pending.connectionType, details: details))
            ]
            let voip = VoIPDecision.decide(
                deviceHasVoIP: capabilities.contains(.voip),
                supporterWantsVoIP: pending.requestedFeatures.contains(.voip), call: call,
                handedOverCallID: handedOverCallID)
            if voip == .started {
                voipRunning = true
                actions.append(.startVoIP)
            }
            actions.append(.send(.voipState(VoIPState(state: voip, text: Self.describe(voip)))))
            actions.append(.report(.voipStateChanged(voip)))
            return actions
        case (.online, .sessionEnd(let end)), (.requestPending, .sessionEnd(let end)),
            (.awaitingStart, .sessionEnd(let end)), (.active, .sessionEnd(let end)):
            var actions = endSession()
            if end.reason.isError {
                actions.append(.report(.error(DeviceSessionFailure(reason: end.reason, message: Self.describe(end)))))
            } else {
                actions.append(.report(.supporterDisconnected(reason: end.reason, text: end.text)))
            }
            return actions
        case (_, .sessionError(let error)):
            return [.report(.sessionError(reason: error.reason, feature: error.feature, text: error.text))]
        case (.active, .featureRequest(let ask)):
            return featureAsked(ask, now: now)
        case (.active, .featureWithdraw(let withdraw)):
            // SPEC §15.3: the ask ends as refused `aborted_by_supporter` (the app's prompt goes with it); a withdrawal
            // that crossed the answer finds no pending ask and changes nothing; one for an ask never made is an error.
            guard withdraw.askID <= lastAskID else {
                return [.protocolViolation("FEATURE_WITHDRAW for ask_id \(withdraw.askID), never asked (last \(lastAskID))")]
            }
            return answerFeature(askID: withdraw.askID, grant: false, reason: .abortedBySupporter)
        case (_, .featureWithdraw):
            return []  // crossed the end of the session
        case (.active, .sessionMessage), (.active, .messageAck):
            // The channel's step first, then the method on self: `actions(channel.handle(…))` would take a copy
            // of self for the call before the argument mutates the channel, so every file part would copy the
            // whole file received so far (copy on write of a shared buffer).
            let steps = channel.handle(message, granted: granted)
            return actions(steps)
        default:
            return [.protocolViolation("\(message.frameType.specName) is not allowed in device state \(state.name)")]
        }
    }

    /// The request as the user sees it; with access control, sorted by effective rule (SPEC §15.3).
    private func requestInfo(_ request: ConnectionRequest) -> ConnectionRequestInfo {
        var info = ConnectionRequestInfo(
            requestID: request.requestID, supporterName: request.supporterName,
            connectionType: request.connectionType, requestedFeatures: request.requestedFeatures)
        guard extensions.contains(.accessControl) else { return info }
        var wanted = request.requestedFeatures.map(\.id)
        if !wanted.contains(request.connectionType.requiredFeature) { wanted.append(request.connectionType.requiredFeature) }
        var allowed: [Feature] = []
        var confirm: [Feature] = []
        var denied: [Feature] = []
        for id in wanted {
            let codeRule: AccessRule = request.confirmFeatures?.contains(id) == true ? .confirm : .allow
            guard let version = capabilities.version(of: id) else {
                denied.append(Feature(id))
                continue
            }
            switch rules.rule(for: id).stricter(codeRule) {
            case .allow: allowed.append(Feature(id, version: version))
            case .confirm: confirm.append(Feature(id, version: version))
            case .deny: denied.append(Feature(id))
            }
        }
        info.grantedWithConnection = FeatureSet(allowed)
        info.featuresToConfirm = FeatureSet(confirm)
        info.deniedFeatures = FeatureSet(denied)
        return info
    }

    /// A FEATURE_REQUEST in an active session: answered at once by rule, or shown to the user.
    private mutating func featureAsked(_ request: FeatureRequest, now: Deadline) -> [Action] {
        // SPEC §15.3: ask ids increase; one ask per feature at a time; a bounded number waits for the user.
        guard request.askID > lastAskID else {
            return [.protocolViolation("FEATURE_REQUEST ask_id \(request.askID) after \(lastAskID): ids increase")]
        }
        guard !featureAsks.values.contains(where: { $0.ask.feature == request.feature }),
            featureAsks.count < Self.pendingAskLimit
        else {
            return [
                .protocolViolation(
                    "FEATURE_REQUEST for \(request.feature) while one is pending, or over \(Self.pendingAskLimit) pending")
            ]
        }
        lastAskID = request.askID
        let ask = FeatureAsk(askID: request.askID, feature: request.feature, text: request.text)
        guard let version = capabilities.version(of: request.feature) else {
            return refuseAsk(ask, reason: .unsupportedFeature)
        }
        if granted.contains(request.feature) { return grantAsk(ask, version: version) }
        switch rules.rule(for: request.feature).stricter(request.confirm ? .confirm : .allow) {
        case .allow: return grantAsk(ask, version: version)
        case .deny: return refuseAsk(ask, reason: .featureDenied)
        case .confirm:
            featureAsks[request.askID] = (ask, now + featurePromptTimeout)
            return [.report(.featureRequested(ask))]
        }
    }

    private mutating func grantAsk(_ ask: FeatureAsk, version: UInt16) -> [Action] {
        granted.insert(Feature(ask.feature, version: version))
        return [
            .send(.featureAnswer(FeatureAnswer(askID: ask.askID, decision: .grant))),
            .report(.featureGranted(ask.feature)),
        ]
    }

    private func refuseAsk(_ ask: FeatureAsk, reason: ReasonCode) -> [Action] {
        [
            .send(.featureAnswer(FeatureAnswer(askID: ask.askID, decision: .refuse, reason: reason))),
            .report(.featureRefused(ask.feature, reason: reason)),
        ]
    }

    /// The user's answer to a feature ask (``DeviceSessionEvent/featureRequested(_:)``). Counts once; an answer to an
    /// ask that is no longer pending returns nothing.
    public mutating func answerFeature(askID: UInt32, grant: Bool) -> [Action] {
        answerFeature(askID: askID, grant: grant, reason: .rejectedByUser)
    }

    private mutating func answerFeature(askID: UInt32, grant: Bool, reason: ReasonCode) -> [Action] {
        guard let entry = featureAsks.removeValue(forKey: askID), case .active = state, !isReconnecting else {
            return []
        }
        if grant, let version = capabilities.version(of: entry.ask.feature) {
            return grantAsk(entry.ask, version: version)
        }
        return refuseAsk(entry.ask, reason: reason)
    }

    /// Revokes a grant (SPEC §15.3): refused when nothing is granted under that id or no link carries the revoke.
    public mutating func revoke(_ feature: Feature.ID, text: String? = nil) throws(Refusal) -> [Action] {
        guard case .active = state, extensions.contains(.accessControl), !isReconnecting else {
            throw Refusal(.wrongState, "no active session with access control to revoke a feature in")
        }
        guard granted.contains(feature) else { throw Refusal(.denied, "\(feature) is not granted") }
        let message = Message.featureRevoke(FeatureRevoke(feature: feature, text: text))
        guard message.encodesWithinDefaultLimit else { throw Refusal(.invalidArgument, "a text needs 1–256 bytes") }
        granted = FeatureSet(granted.filter { $0.id != feature })
        var actions: [Action] = [.send(message), .report(.featureRevoked(feature))]
        let withdrawn = channel.withdraw(needing: feature)
        if !withdrawn.isEmpty { actions.append(.report(.messagesUndelivered(withdrawn))) }
        return actions
    }

    /// Sends a chat line, an application message or a file (SPEC §15.4); refused unless a session is active with
    /// session messages in effect and the kind's feature granted. Returns a file's transfer id with the actions.
    public mutating func send(
        _ outgoing: MessageChannel.Outgoing
    ) throws(Refusal) -> (transferID: UInt32?, actions: [Action]) {
        guard case .active = state, extensions.contains(.sessionMessages) else {
            throw Refusal(.wrongState, "messages need an active session with session_messages in effect")
        }
        guard !isReconnecting else { throw Refusal(.reconnecting, "the link is being re-established; try again") }
        do throws(MessageChannel.Refusal) {
            let (id, messages) = try channel.send(outgoing, granted: granted)
            return (id, messages.map { .send(.sessionMessage($0)) })
        } catch { throw Refusal(error.kind, error.message, underlying: error) }
    }

    /// ``send(_:)`` of chat text.
    public mutating func sendChat(_ text: String) throws(Refusal) -> [Action] { try send(.chat(text)).actions }

    /// A channel step as this machine's actions.
    private func actions(_ steps: [MessageChannel.Step]) -> [Action] {
        steps.compactMap { step -> Action? in
            switch step {
            case .send(let message): .send(message)
            case .deliver(let delivery): .report(.messageReceived(delivery))
            case .delivered(let id): .report(.messageDelivered(id: id))
            case .refused(let id, let reason, let text): .report(.messageRefused(id: id, reason: reason, text: text))
            case .violation(let text): .protocolViolation(text)
            // The app learns of its file through each part's delivery (`messageDelivered`) as before.
            case .transferDelivered, .transferRefused: nil
            }
        }
    }

    /// RESUME_RESULT on the new link (SPEC §15.5).
    private mutating func resumed(_ result: ResumeResult) -> [Action] {
        guard isReconnecting else {
            return [.protocolViolation("RESUME_RESULT without a RESUME (SPEC §15.5)")]
        }
        if result.reason == .rateLimited || result.reason == .internalError {
            // Transient at the node: dial again within the grace period (SPEC §15.5).
            return [.resumeLater(milliseconds: result.retryAfterMilliseconds ?? 1_000)]
        }
        guard result.reason == .success, let secret = result.resumeSecret else {
            var actions = endSession()
            let failure = DeviceSessionFailure(
                reason: result.reason == .success ? .resumeRejected : result.reason,
                message: "the session could not be resumed" + (result.text.map { ": \($0)" } ?? ""),
                retryAfterMilliseconds: result.retryAfterMilliseconds)
            actions.append(.report(.error(failure)))
            return actions
        }
        isReconnecting = false
        resumeSecret = secret
        let steps = channel.resumed(peerLast: result.lastMessageID)
        return [.report(.resumed)] + actions(steps)
    }

    /// SESSION_ERRORs for what the request wants and this device lacks (SPEC §8), sent and reported.
    private func featureMismatches(for request: ConnectionRequest) -> [Action] {
        var wanted = request.requestedFeatures
        if !wanted.contains(request.connectionType.requiredFeature) {
            wanted.insert(Feature(request.connectionType.requiredFeature))
        }
        var actions: [Action] = []
        for feature in wanted {
            let error: SessionError
            if let ours = capabilities.version(of: feature.id) {
                guard ours != feature.version else { continue }
                error = SessionError(
                    reason: .featureVersionMismatch, feature: feature.id,
                    text: "\(feature.id) version \(feature.version) requested, the device has version \(ours)")
            } else {
                error = SessionError(
                    reason: .unsupportedFeature, feature: feature.id, text: "the device does not support \(feature.id)")
            }
            actions.append(.send(.sessionError(error)))
            actions.append(.report(.sessionError(reason: error.reason, feature: error.feature, text: error.text)))
        }
        return actions
    }

    static func describe(_ result: RegisterResult) -> String {
        let base: String
        switch result.reason {
        case .invalidSessionCode: base = "the session code is not valid"
        case .invalidAPIToken: base = "the API token is not valid"
        case .sessionCodeExpired: base = "the session code has expired"
        case .sessionCodeClosed: base = "the session code is closed"
        case .sessionCodeInUse: base = "the session code is in use by another device"
        case .rateLimited:
            base = "too many failed attempts; retry in \(result.retryAfterMilliseconds.map { "\($0) ms" } ?? "a while")"
        default: base = "registration refused (\(result.reason))"
        }
        return result.text.map { "\(base): \($0)" } ?? base
    }

    static func describe(_ end: SessionEnd) -> String {
        let base =
            switch end.reason {
            case .sessionCodeClosed: "the session code was closed"
            case .sessionCodeExpired: "the session code expired"
            default: "the supporter node ended the session (\(end.reason))"
            }
        return end.text.map { "\(base): \($0)" } ?? base
    }

    static func describe(_ voip: VoIPCallState) -> String {
        switch voip {
        case .started: "VoIP started"
        case .notStartedOtherCallActive: "VoIP not started: another call is running that is not the app's own"
        case .ended: "VoIP ended"
        case .notStartedUnsupported: "VoIP not started: the device or the supporter does not support it"
        }
    }
}

extension DeviceSessionMachine.State {
    /// The SPEC §8 name of the state.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .registering: "registering"
        case .online: "online"
        case .requestPending: "request_pending"
        case .awaitingStart: "awaiting_start"
        case .active: "active"
        }
    }
}
