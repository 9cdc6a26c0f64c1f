public import SupportUtilities
public import SupportWire
public import SupportVocabulary

/// The supporter node's session state machine for one device connection (SPEC §9). Sans-I/O; time is an input.
///
/// Which codes exist and who may join is the node's policy: a REGISTER gives the action ``Action/authorize(_:)``, and
/// the caller answers it with its registry's decision as the next event (``registrationDecided(_:)``). The machine
/// never calls back into its caller and holds no registry.
public struct SupporterSessionMachine: Sendable {
    public enum State: Sendable, Hashable {
        case idle
        case online(code: String)
        case requestPending(code: String, request: ConnectionRequest, deadline: Deadline)
        case active(code: String, request: ConnectionRequest)
    }

    public enum Action: Sendable, Hashable {
        case send(Message)
        case report(SupporterSessionEvent)
        /// The device broke SPEC §9: close its link with GOAWAY `protocol_error` and this text.
        case protocolViolation(String)
        /// The device asks to join with this REGISTER: decide it (which codes exist and who may join is the node's
        /// policy) and pass the decision to ``registrationDecided(_:)`` before the next frame. Nothing is sent until
        /// then.
        case authorize(Register)
    }

    public private(set) var state: State = .idle
    /// What the device said it can do, from REGISTER.
    public private(set) var deviceCapabilities: FeatureSet = []
    /// How long a request waits for the device's answer before it is aborted.
    public let requestTimeout: Duration
    private var lastRequestID: UInt32 = 0
    /// The device sent SESSION_END on this connection: it must not register on it again (SPEC §5.11).
    public private(set) var deviceSentSessionEnd = false
    /// The extensions in effect on the device's current link (SPEC §15.1).
    public private(set) var extensions: ProtocolExtensions = .none
    /// With access control: the features granted in the active session.
    public private(set) var granted: FeatureSet = []
    /// The in-session message channel of the registration (SPEC §15.4).
    public private(set) var channel = MessageChannel()
    /// Feature asks sent and not answered, by ask id.
    public private(set) var pendingAsks: [UInt32: Feature.ID] = [:]
    /// Pending asks the supporter withdrew (FEATURE_WITHDRAW sent): pending until the device's answer.
    public private(set) var withdrawnAsks: Set<UInt32> = []
    private var lastAskID: UInt32 = 0
    /// With session resume: the secret that resumes this registration; nil when it cannot be resumed.
    public private(set) var resumeSecret: String? {
        didSet { previousResumeSecret = resumeSecret == nil ? nil : oldValue }
    }
    /// The secret the current one replaced: still accepted once, since the frame that carried the new one may have
    /// been lost with the link (SPEC §15.5).
    private var previousResumeSecret: String?
    /// The extensions in effect when the registration began: a resume must keep them (SPEC §15.5).
    private var registrationExtensions: ProtocolExtensions = .none
    /// Whether the device's link is lost and the session waits for its RESUME (SPEC §15.5).
    public private(set) var isReconnecting = false
    /// The media descriptor for the pending request's SESSION_STARTED.
    private var mediaDescriptor: [UInt8]?
    /// The last request that ended without a session (id, the REQUEST_ABORT reason), for a resume's reconciliation.
    private var lastEndedRequest: (id: UInt32, reason: ReasonCode)?
    private let secretSource: @Sendable () -> String
    private var peerMaxFrameSize = WireLimits.defaultMaxFrameSize
    /// The REGISTER given to the caller to decide (``Action/authorize(_:)``), until ``registrationDecided(_:)``.
    public private(set) var registrationAwaitingDecision: Register?

    /// `secretSource` makes resume secrets (SPEC §15.2: at least 128 random bits, printable ASCII, 32–64 bytes); the
    /// node passes a cryptographic one, tests a predictable one.
    public init(
        requestTimeout: Duration = .seconds(90),
        secretSource: @escaping @Sendable () -> String = ResumeSecret.make
    ) {
        self.requestTimeout = requestTimeout
        self.secretSource = secretSource
    }

    /// The device's link opened with these extensions in effect and a device receiving `peerMaxFrameSize` bytes.
    public mutating func linkOpened(extensions: ProtocolExtensions, peerMaxFrameSize: Int) {
        self.extensions = extensions
        self.peerMaxFrameSize = peerMaxFrameSize
        channel.partSize = MessageChannel.partSize(forPeerMaxFrameSize: peerMaxFrameSize)
    }

    /// The joined code, if any.
    public var code: String? {
        switch state {
        case .idle: nil
        case .online(let code), .requestPending(let code, _, _), .active(let code, _): code
        }
    }

    // Read and set by the snapshot (SupporterSessionMachine+Snapshot.swift), which lives in its own file.
    var lastRequestIDValue: UInt32 { lastRequestID }
    var registrationExtensionsValue: ProtocolExtensions { registrationExtensions }
    var lastEndedRequestValue: (id: UInt32, reason: ReasonCode)? { lastEndedRequest }
    var previousResumeSecretValue: String? { previousResumeSecret }

    mutating func restore(
        state: State, capabilities: FeatureSet, lastRequestID: UInt32, granted: FeatureSet, registrationExtensions: ProtocolExtensions,
        lastEnded: (UInt32, ReasonCode)?, secret: String
    ) {
        self.state = state
        deviceCapabilities = capabilities
        self.lastRequestID = lastRequestID
        self.granted = granted
        self.registrationExtensions = registrationExtensions
        extensions = registrationExtensions
        lastEndedRequest = lastEnded.map { (id: $0.0, reason: $0.1) }
        resumeSecret = secret
        previousResumeSecret = nil
        isReconnecting = true
        channel = MessageChannel()
        channel.continueAfterNodeLoss()
    }

    /// When ``tick(now:)`` should run next.
    public var nextDeadline: Deadline? {
        if case .requestPending(_, _, let deadline) = state { return deadline }
        return nil
    }

    // MARK: local commands

    /// Sends a connection request as `supporterName`. With access control, `codeRules` (the code's, SPEC §15.3)
    /// drop denied features (reported) and mark those to confirm; `mediaDescriptor` goes out with SESSION_STARTED
    /// when session messages are in effect.
    public mutating func requestConnection(
        supporterName: String, type: ConnectionType, features: FeatureSet = [], now: Deadline,
        codeRules: FeatureRules = .codeDefault, mediaDescriptor: [UInt8]? = nil
    ) throws(Refusal) -> [Action] {
        guard !isReconnecting else { throw Refusal(.reconnecting, "the device is reconnecting; try again shortly") }
        guard case .online(let code) = state else {
            switch state {
            case .idle: throw Refusal(.wrongState, "no device has this code online")
            case .requestPending: throw Refusal(.wrongState, "a request is already pending for this code")
            default: throw Refusal(.wrongState, "a session is already active for this code")
            }
        }
        guard lastRequestID < UInt32.max else { throw Refusal(.limitReached, "request ids exhausted on this connection") }
        var request = ConnectionRequest(
            requestID: lastRequestID + 1, supporterName: supporterName, connectionType: type,
            requestedFeatures: features)
        var denied: [Feature] = []
        if extensions.contains(.accessControl) {
            denied = features.filter { codeRules.rule(for: $0.id) == .deny }
            guard codeRules.rule(for: type.requiredFeature) != .deny else {
                throw Refusal(.denied, "the code's rules deny \(type.requiredFeature), which this connection type needs")
            }
            request.requestedFeatures = FeatureSet(features.filter { codeRules.rule(for: $0.id) != .deny })
            var confirm = request.requestedFeatures.filter { codeRules.rule(for: $0.id) == .confirm }
            if codeRules.rule(for: type.requiredFeature) == .confirm, !confirm.contains(where: { $0.id == type.requiredFeature }) {
                confirm.append(Feature(type.requiredFeature))
            }
            request.confirmFeatures = confirm.isEmpty ? nil : FeatureSet(confirm)
        }
        guard Message.connectionRequest(request).encodesWithinDefaultLimit else {
            throw Refusal(
                .invalidArgument, "CONNECTION_REQUEST would not encode: the supporter name needs 1–64 bytes, and every "
                    + "feature a version of 1 or more")
        }
        if let mediaDescriptor, !(1...WireLimits.mediaDescriptorLength).contains(mediaDescriptor.count) {
            throw Refusal(.invalidArgument, "a media descriptor needs 1–\(WireLimits.mediaDescriptorLength) bytes")
        }
        lastRequestID += 1
        self.mediaDescriptor = extensions.contains(.sessionMessages) ? mediaDescriptor : nil
        state = .requestPending(code: code, request: request, deadline: now + requestTimeout)
        var actions: [Action] = [.send(.connectionRequest(request))]
        if !denied.isEmpty { actions.append(.report(.featuresDenied(FeatureSet(denied)))) }
        return actions
    }

    /// Withdraws the pending request.
    public mutating func abortRequest() throws(Refusal) -> [Action] {
        guard case .requestPending(let code, let request, _) = state else {
            throw Refusal(.wrongState, "no request is pending")
        }
        state = .online(code: code)
        lastEndedRequest = (request.requestID, .abortedBySupporter)
        return [.send(.requestAbort(RequestAbort(requestID: request.requestID, reason: .abortedBySupporter)))]
    }

    /// Ends the registration (or the session) with `reason`: `ended_by_supporter`, `session_code_closed`, ….
    public mutating func end(reason: ReasonCode = .endedBySupporter, text: String? = nil) throws(Refusal) -> [Action] {
        guard state != .idle else { throw Refusal(.wrongState, "no device has this code online") }
        guard Message.sessionEnd(SessionEnd(reason: reason, text: text)).encodesWithinDefaultLimit else {
            throw Refusal(.invalidArgument, "SESSION_END would not encode: a text needs 1–256 bytes")
        }
        return [.send(.sessionEnd(SessionEnd(reason: reason, text: text)))] + endRegistration()
            + [.report(.ended(reason: reason, text: text))]
    }

    /// Leaves every registration state: grants, asks and secret go; the channel reports what it could not deliver.
    private mutating func endRegistration() -> [Action] {
        state = .idle
        granted = []
        pendingAsks = [:]
        withdrawnAsks = []
        resumeSecret = nil
        isReconnecting = false
        mediaDescriptor = nil
        lastEndedRequest = nil
        let undelivered = channel.close()
        return undelivered.isEmpty ? [] : [.report(.messagesUndelivered(undelivered))]
    }

    /// Time passed: the pending request may time out.
    public mutating func tick(now: Deadline) -> [Action] {
        guard case .requestPending(let code, let request, let deadline) = state, now >= deadline else { return [] }
        state = .online(code: code)
        lastEndedRequest = (request.requestID, .requestTimedOut)
        return [
            .send(.requestAbort(RequestAbort(requestID: request.requestID, reason: .requestTimedOut))),
            .report(.requestTimedOut(requestID: request.requestID)),
        ]
    }

    /// The device's link closed: the registration ends.
    public mutating func linkClosed(reason: ReasonCode, text: String?) -> [Action] {
        guard state != .idle else { return [] }
        return endRegistration() + [.report(.ended(reason: reason, text: text))]
    }

    /// Whether a lost link keeps the session for a RESUME (SPEC §15.5).
    public var canResume: Bool { extensions.contains(.sessionResume) && resumeSecret != nil && state != .idle }

    /// The device's link was lost (EOF, reset, keepalive; not a GOAWAY from it, not a protocol error). With
    /// ``canResume`` the session is kept, reconnecting; otherwise this is ``linkClosed(reason:text:)``.
    public mutating func linkLost(reason: ReasonCode, text: String?) -> [Action] {
        guard canResume else { return linkClosed(reason: reason, text: text) }
        guard !isReconnecting else { return [] }
        isReconnecting = true
        // Asks pending at a link loss are withdrawn on both sides (SPEC §15.5).
        let withdrawn: [Action] = pendingAsks.sorted { $0.key < $1.key }.map {
            .report(.featureRefused($0.value, reason: .connectionLost))
        }
        pendingAsks = [:]
        withdrawnAsks = []
        return [.report(.reconnecting)] + withdrawn
    }

    /// Asks the device for a feature during the active session (SPEC §15.3). Refused locally for a feature already
    /// granted or asked for, and for one the code's rules deny (reported as denied).
    public mutating func askFeature(
        _ feature: Feature.ID, text: String? = nil, codeRules: FeatureRules = .codeDefault
    ) throws(Refusal) -> [Action] {
        guard case .active = state, extensions.contains(.accessControl) else {
            throw Refusal(.wrongState, "no active session with access control to ask a feature in")
        }
        guard !isReconnecting else { throw Refusal(.reconnecting, "the device is reconnecting; try again shortly") }
        guard !granted.contains(feature) else { throw Refusal(.wrongState, "\(feature) is already granted") }
        guard !pendingAsks.values.contains(feature) else {
            throw Refusal(.wrongState, "\(feature) was already asked for; wait for the answer")
        }
        let rule = codeRules.rule(for: feature)
        guard rule != .deny else {
            throw Refusal(.denied, "the code's rules deny \(feature)")
        }
        guard lastAskID < UInt32.max else { throw Refusal(.limitReached, "ask ids exhausted on this connection") }
        let request = FeatureRequest(askID: lastAskID + 1, feature: feature, confirm: rule == .confirm, text: text)
        guard Message.featureRequest(request).encodesWithinDefaultLimit else {
            throw Refusal(.invalidArgument, "a text needs 1–256 bytes")
        }
        lastAskID += 1
        pendingAsks[request.askID] = feature
        return [.send(.featureRequest(request))]
    }

    /// Withdraws the pending ask for `feature` (SPEC §15.3, FEATURE_WITHDRAW): the device drops it and answers it
    /// refused (`aborted_by_supporter`), unless its user's answer crossed the withdrawal — then that answer stands.
    /// Refused when nothing is asked for `feature`, it was withdrawn already, or the device's protocol has no
    /// withdrawal (extension ask_withdraw not in effect: its answer comes within its own prompt timer).
    public mutating func withdrawAsk(_ feature: Feature.ID) throws(Refusal) -> (askID: UInt32, actions: [Action]) {
        guard case .active = state, extensions.contains(.accessControl) else {
            throw Refusal(.wrongState, "no active session with access control to withdraw an ask in")
        }
        guard !isReconnecting else { throw Refusal(.reconnecting, "the device is reconnecting; try again shortly") }
        guard let askID = pendingAsks.first(where: { $0.value == feature })?.key else {
            throw Refusal(.wrongState, "\(feature) is not asked for: there is no pending ask to withdraw")
        }
        guard !withdrawnAsks.contains(askID) else {
            throw Refusal(.wrongState, "the ask for \(feature) was withdrawn already; the device's answer follows")
        }
        guard extensions.contains(.askWithdraw) else {
            throw Refusal(
                .wrongState,
                "the device's protocol cannot withdraw an ask (no ask_withdraw); it answers within its own prompt time")
        }
        withdrawnAsks.insert(askID)
        return (askID, [.send(.featureWithdraw(FeatureWithdraw(askID: askID)))])
    }

    /// Sends a chat line, an application message or a file to the device (SPEC §15.4); refused unless the session
    /// is active with session messages in effect and the kind's feature granted.
    public mutating func send(
        _ outgoing: MessageChannel.Outgoing
    ) throws(Refusal) -> (transferID: UInt32?, actions: [Action]) {
        guard case .active = state, extensions.contains(.sessionMessages) else {
            throw Refusal(.wrongState, "messages need an active session with session_messages in effect")
        }
        guard !isReconnecting else { throw Refusal(.reconnecting, "the device is reconnecting; try again shortly") }
        do throws(MessageChannel.Refusal) {
            let (id, messages) = try channel.send(outgoing, granted: granted)
            return (id, messages.map { .send(.sessionMessage($0)) })
        } catch { throw Refusal(error.kind, error.message, underlying: error) }
    }

    /// ``send(_:)`` of a chat line or application message that goes out at once or not at all: refused with
    /// `limit_reached` while 16 messages wait for the device's acknowledgement (or more wait to go out), so that the
    /// caller learns the message's id now (what its delivery will name).
    public mutating func sendAtOnce(_ outgoing: MessageChannel.Outgoing) throws(Refusal) -> (messageID: UInt32, actions: [Action]) {
        if case .file = outgoing { throw Refusal(.invalidArgument, "a file goes out in parts: send it with send(_:)") }
        if case .active = state, extensions.contains(.sessionMessages), !isReconnecting, !channel.sendsAtOnce {
            throw Refusal(
                .full, "\(WireLimits.messageWindow) messages wait for the device's acknowledgement; try again shortly")
        }
        let (_, actions) = try send(outgoing)
        // Nothing waited before it, so it is the last session message of this step.
        var id: UInt32 = 0
        for case .send(.sessionMessage(let message)) in actions where message.kind != .filePart { id = message.messageID }
        return (id, actions)
    }

    /// ``send(_:)`` of chat text.
    public mutating func sendChat(_ text: String) throws(Refusal) -> [Action] { try send(.chat(text)).actions }

    /// A channel step as this machine's actions.
    private func actions(_ steps: [MessageChannel.Step]) -> [Action] {
        steps.map { step in
            switch step {
            case .send(let message): .send(message)
            case .deliver(let delivery): .report(.messageReceived(delivery))
            case .delivered(let id): .report(.messageDelivered(id: id))
            case .refused(let id, let reason, let text): .report(.messageRefused(id: id, reason: reason, text: text))
            case .violation(let text): .protocolViolation(text)
            case .transferDelivered(let transfer): .report(.fileDelivered(transferID: transfer))
            case .transferRefused(let transfer, let reason): .report(.fileRefused(transferID: transfer, reason: reason))
            }
        }
    }

    /// The caller's decision on the REGISTER of ``Action/authorize(_:)``: the answer to send and what to report. A
    /// decision with no REGISTER waiting changes nothing.
    public mutating func registrationDecided(_ decision: RegistrationDecision) -> [Action] {
        guard let register = registrationAwaitingDecision, state == .idle else {
            registrationAwaitingDecision = nil
            return []
        }
        registrationAwaitingDecision = nil
        switch decision {
        case .accept(let codeType, let waitingMessage):
            state = .online(code: register.sessionCode)
            deviceCapabilities = register.capabilities
            channel = MessageChannel(peerMaxFrameSize: peerMaxFrameSize)
            registrationExtensions = extensions
            let text = waitingMessage.flatMap(Self.wireText)
            var result = RegisterResult(reason: .success, text: text, codeType: codeType)
            if extensions.contains(.sessionResume) {
                resumeSecret = secretSource()
                result.resumeSecret = resumeSecret
            }
            return [
                .send(.registerResult(result)),
                .report(.deviceOnline(code: register.sessionCode, capabilities: register.capabilities)),
            ]
        case .refuse(var reason, let text, let retryAfter):
            // A refusal never says `success` (the device would go online while this side stays idle), and a text
            // the wire cannot carry (empty, over 256 bytes) is dropped rather than sending an unencodable frame.
            if reason == .success { reason = .internalError }
            var result = RegisterResult(reason: reason, text: text, retryAfterMilliseconds: retryAfter)
            if !Message.registerResult(result).encodesWithinDefaultLimit { result.text = nil }
            return [
                .send(.registerResult(result)),
                .report(.registrationRefused(code: register.sessionCode, reason: reason)),
            ]
        }
    }

    // MARK: frames

    /// A session frame from the device. A REGISTER in `idle` gives ``Action/authorize(_:)``, answered with
    /// ``registrationDecided(_:)``.
    ///
    /// Total over `Message`: connection-level frames get §7's rule for an open connection (HELLO / HELLO_ACK are a
    /// protocol error in every session state; PING, PONG, GOAWAY give no session action).
    public mutating func received(_ message: Message, now: Deadline) -> [Action] {
        switch FrameRouting(message) {
        case .session: break
        case .connectionOnly: return []
        case .violation(let text): return [.protocolViolation(text)]
        }
        if let extensionNeeded = message.frameType.requiredExtension, !extensions.contains(extensionNeeded) {
            return [.protocolViolation("\(message.frameType.specName) needs \(extensionNeeded), not in effect (SPEC §15.1)")]
        }
        switch (state, message) {
        case (.idle, .register) where deviceSentSessionEnd:
            // Errata 1.0.1 no. 9: answers to the old registration may still be in flight to the device, which would
            // take them for answers to the new one; a device joins again on a new connection.
            return [
                .protocolViolation(
                    "REGISTER after the device's own SESSION_END on this connection: join again on a new connection "
                        + "(SPEC §5.11)")
            ]
        case (.idle, .register(let register)):
            guard registrationAwaitingDecision == nil else {
                return [.protocolViolation("a second REGISTER before the first was answered (SPEC §9)")]
            }
            registrationAwaitingDecision = register
            return [.authorize(register)]
        case (.idle, .sessionEnd):
            deviceSentSessionEnd = true
            return []  // crossed our SESSION_END
        case (.idle, .connectionResponse), (.idle, .sessionError), (.idle, .voipState):
            return []  // crossed our SESSION_END
        case (.requestPending(let code, let request, _), .connectionResponse(let response))
        where response.requestID == request.requestID:
            if response.decision == .allow {
                return start(code: code, request: request, grant: response.grantedFeatures ?? [])
            }
            // Errata 1.0.1 no. 7: `decision` alone decides; a reject that says `success` is a plain user rejection.
            state = .online(code: code)
            lastEndedRequest = (request.requestID, .rejectedByUser)
            let reason = response.reason == .success ? ReasonCode.rejectedByUser : response.reason
            return [.report(.rejected(requestID: request.requestID, reason: reason))]
        case (_, .connectionResponse):
            return []  // an answer to a request we already aborted or timed out
        case (_, .sessionEnd(let end)):
            deviceSentSessionEnd = true
            return endRegistration() + [.report(.ended(reason: end.reason, text: end.text))]
        case (.idle, .featureAnswer), (.idle, .featureRevoke), (.idle, .sessionMessage), (.idle, .messageAck):
            return []  // crossed our SESSION_END
        case (_, .featureAnswer(let answer)):
            guard let feature = pendingAsks.removeValue(forKey: answer.askID), case .active = state else { return [] }
            withdrawnAsks.remove(answer.askID)
            if answer.decision == .grant {
                // A grant of a capability the device never declared grants nothing (SPEC §15.3).
                guard let version = deviceCapabilities.version(of: feature) else {
                    return [.report(.featureRefused(feature, reason: .unsupportedFeature))]
                }
                granted.insert(Feature(feature, version: version))
                return [.report(.featureGranted(feature))]
            }
            return [.report(.featureRefused(feature, reason: answer.reason == .success ? .rejectedByUser : answer.reason))]
        case (.active, .featureRevoke(let revoke)):
            guard granted.contains(revoke.feature) else { return [] }
            granted = FeatureSet(granted.filter { $0.id != revoke.feature })
            var actions: [Action] = [.report(.featureRevoked(revoke.feature))]
            let withdrawn = channel.withdraw(needing: revoke.feature)
            if !withdrawn.isEmpty { actions.append(.report(.messagesUndelivered(withdrawn))) }
            return actions
        case (.online, .featureRevoke), (.requestPending, .featureRevoke):
            return []
        case (.active, .sessionMessage), (.active, .messageAck):
            // The channel's step first, then the method on self: `actions(channel.handle(…))` would take a copy
            // of self for the call before the argument mutates the channel, so every file part would copy the
            // whole file received so far (copy on write of a shared buffer).
            let steps = channel.handle(message, granted: granted)
            return actions(steps)
        case (_, .sessionError(let error)):
            return [.report(.sessionError(reason: error.reason, feature: error.feature, text: error.text))]
        case (.active, .voipState(let voip)):
            return [.report(.voipState(voip.state, text: voip.text))]
        default:
            return [.protocolViolation("\(message.frameType.specName) is not allowed in supporter state \(state.name)")]
        }
    }
}

extension SupporterSessionMachine {
    /// The allowed request starts: the grant in effect is what the device granted of what was asked (and the
    /// connection type's own feature), never anything else (SPEC §15.3).
    private mutating func start(code: String, request: ConnectionRequest, grant: FeatureSet) -> [Action] {
        state = .active(code: code, request: request)
        var started = SessionStarted(requestID: request.requestID)
        var actions: [Action] = []
        if extensions.contains(.accessControl) {
            let asked = Set(request.requestedFeatures.map(\.id) + [request.connectionType.requiredFeature])
            granted = FeatureSet(
                grant.filter { asked.contains($0.id) && deviceCapabilities.contains($0.id) }
                    .map { Feature($0.id, version: deviceCapabilities.version(of: $0.id) ?? $0.version) })
            started.grantedFeatures = granted
        }
        if extensions.contains(.sessionMessages) { started.mediaDescriptor = mediaDescriptor }
        if extensions.contains(.sessionResume), resumeSecret != nil {
            resumeSecret = secretSource()
            started.resumeSecret = resumeSecret
        }
        actions.append(.send(.sessionStarted(started)))
        actions.append(.report(.connected(requestID: request.requestID)))
        if extensions.contains(.accessControl) { actions.append(.report(.grantInEffect(granted))) }
        return actions
    }

    /// How a RESUME for this machine's registration went (SPEC §15.5).
    public enum ResumeOutcome: Sendable {
        /// The registration continues on the new link: the machine to use there, and what to do first (RESUME_RESULT
        /// `success`, the reconciliation, resent messages).
        case accepted(SupporterSessionMachine, [Action])
        /// Refused (`resume_rejected`); `endsRegistration` when the states disagree and the registration must end.
        case rejected(ResumeResult, endsRegistration: Bool)
    }

    /// A device presents `resume` on a new link with `extensions` in effect there. Pure: the caller moves the
    /// returned machine to the new connection and closes the old link (GOAWAY `session_moved`) if it is still open.
    public func resumed(
        by resume: Resume, extensions newExtensions: ProtocolExtensions, peerMaxFrameSize: Int, now: Deadline
    ) -> ResumeOutcome {
        let secretMatches = [resumeSecret, previousResumeSecret].contains { known in
            known.map { ConstantTime.equal($0, resume.resumeSecret) } ?? false
        }
        guard resumeSecret != nil, secretMatches, newExtensions.contains(.sessionResume) else {
            return .rejected(
                ResumeResult(reason: .resumeRejected, text: "no resumable session for that code and secret"),
                endsRegistration: false)
        }
        guard newExtensions.isSuperset(of: registrationExtensions) else {
            return .rejected(
                ResumeResult(
                    reason: .resumeRejected,
                    text: "extensions changed: the session began with \(registrationExtensions)"),
                endsRegistration: false)
        }
        var next = self
        next.linkOpened(extensions: newExtensions, peerMaxFrameSize: peerMaxFrameSize)
        next.isReconnecting = false
        next.deviceSentSessionEnd = false
        var afterward: [Action] = []
        // The new secret first: a SESSION_STARTED the reconciliation sends rotates it again, and the device keeps the
        // last one it receives.
        next.resumeSecret = next.secretSource()
        let result = ResumeResult(
            reason: .success, resumeSecret: next.resumeSecret,
            lastMessageID: next.channel.lastReceivedID == 0 ? nil : next.channel.lastReceivedID)
        switch (state, resume.state) {
        case (.online, .online):
            break
        case (.online, .requestPending), (.online, .awaitingStart):
            guard let id = resume.requestID, id <= lastRequestID else { return stateMismatch() }
            do {
                let reason = lastEndedRequest.flatMap { $0.id == id ? $0.reason : nil } ?? .abortedBySupporter
                afterward.append(.send(.requestAbort(RequestAbort(requestID: id, reason: reason))))
            }
        case (.requestPending(_, let request, _), .online):
            if resume.requestID == request.requestID {
                next.state = .online(code: resume.sessionCode)
                next.lastEndedRequest = (request.requestID, .rejectedByUser)
                afterward.append(.report(.rejected(requestID: request.requestID, reason: .rejectedByUser)))
            } else if (resume.requestID ?? 0) < request.requestID {
                afterward.append(.send(.connectionRequest(request)))
            } else {
                return stateMismatch()
            }
        case (.requestPending(_, let request, _), .requestPending) where resume.requestID == request.requestID:
            break
        case (.requestPending(_, let request, _), .requestPending) where (resume.requestID ?? .max) < request.requestID,
            (.requestPending(_, let request, _), .awaitingStart) where (resume.requestID ?? .max) < request.requestID:
            // The device still answers an older request that ended here (timed out or aborted) while the next one
            // went out: that abort and the current request were lost.
            guard let old = resume.requestID else { return stateMismatch() }
            let reason = lastEndedRequest.flatMap { $0.id == old ? $0.reason : nil } ?? .abortedBySupporter
            afterward.append(.send(.requestAbort(RequestAbort(requestID: old, reason: reason))))
            afterward.append(.send(.connectionRequest(request)))
        case (.requestPending(let code, let request, _), .awaitingStart) where resume.requestID == request.requestID:
            // The allow was lost: the RESUME carries its grant (start() keeps only what was asked for).
            afterward += next.start(code: code, request: request, grant: resume.grantedFeatures ?? [])
        case (.active(_, let request), .awaitingStart) where resume.requestID == request.requestID:
            var started = SessionStarted(requestID: request.requestID, resumeSecret: next.resumeSecret)
            if next.extensions.contains(.accessControl) { started.grantedFeatures = next.granted }
            if next.extensions.contains(.sessionMessages) { started.mediaDescriptor = next.mediaDescriptor }
            afterward.append(.send(.sessionStarted(started)))
        case (.active(_, let request), .active) where resume.requestID == request.requestID:
            break
        default:
            return stateMismatch()
        }
        var actions: [Action] = [.send(.resumeResult(result)), .report(.resumed)]
        actions += afterward
        let steps = next.channel.resumed(peerLast: resume.lastMessageID)
        actions += next.actions(steps)
        return .accepted(next, actions)
    }

    private func stateMismatch() -> ResumeOutcome {
        .rejected(ResumeResult(reason: .resumeRejected, text: "state mismatch"), endsRegistration: true)
    }
}

extension SupporterSessionMachine.State {
    /// The SPEC §9 name of the state.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .online: "online"
        case .requestPending: "request_pending"
        case .active: "active"
        }
    }
}
