/// The device's session state machine of SPEC §8. Sans-I/O: events in, actions out; time is an input.
///
/// One machine serves one joined code at a time. It never throws and never traps on what a peer sends: an
/// out-of-state frame becomes the spec'd discard or a `protocolViolation` action.
public struct DeviceSessionMachine: Sendable {
    public enum State: Sendable, Hashable {
        case idle
        case registering
        case online
        case requestPending(ConnectionRequestInfo, deadline: Duration)
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
    }

    /// Something the app asked that the current state does not allow; nothing was sent.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
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

    public init(capabilities: FeatureSet, promptTimeout: Duration = .seconds(60)) {
        self.capabilities = capabilities
        self.promptTimeout = promptTimeout
    }

    /// When ``tick(now:)`` should run next: the prompt deadline, as time since an arbitrary origin the caller uses.
    public var nextDeadline: Duration? {
        if case .requestPending(_, let deadline) = state { return deadline }
        return nil
    }

    /// Whether a code is joined (registering, waiting, prompt shown, or active).
    public var isJoined: Bool { state != .idle }

    // MARK: local events

    /// Joins `code` with `token`. Refused (nothing sent) when a code is joined, or when the REGISTER would not
    /// encode: a code of 1–64 bytes, a token of 1–256, capabilities with versions ≥ 1 that fit a 16 KiB frame.
    public mutating func register(code: String, token: String) throws(Refusal) -> [Action] {
        guard state == .idle else {
            throw Refusal(description: "a session code is already joined; leave it before joining another")
        }
        let message = Message.register(Register(sessionCode: code, apiToken: token, capabilities: capabilities))
        guard message.encodesWithinDefaultLimit else {
            throw Refusal(
                description: "REGISTER would not encode: the code needs 1–64 bytes, the token 1–256, "
                    + "and every capability a version of 1 or more")
        }
        state = .registering
        return [.send(message)]
    }

    /// The user's answer to the pending request. An answer counts once: any other is ignored (and returns nothing).
    public mutating func answer(requestID: UInt32, allow: Bool) -> [Action] {
        guard case .requestPending(let request, _) = state, request.requestID == requestID else { return [] }
        if allow {
            state = .awaitingStart(request)
            return [.send(.connectionResponse(ConnectionResponse(requestID: requestID, decision: .allow)))]
        }
        state = .online
        return [.send(.connectionResponse(ConnectionResponse(requestID: requestID, decision: .reject)))]
    }

    /// The user leaves, in any joined state: SESSION_END `ended_by_device`, and the app hears it too.
    public mutating func leave() -> [Action] {
        guard state != .idle else { return [] }
        var actions: [Action] = [.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))]
        actions += stopVoIPIfRunning()
        state = .idle
        actions.append(.report(.supporterDisconnected(reason: .endedByDevice, text: nil)))
        return actions
    }

    /// The app hands over its own call (setupCallUUID): VoIP may run alongside it.
    public mutating func setCallID(_ id: String) -> [Action] {
        handedOverCallID = id
        return []
    }

    /// The app clears its call hand-over (clearCallUUID): our VoIP ends.
    public mutating func clearCallID() -> [Action] {
        handedOverCallID = nil
        guard voipRunning, case .active = state else { return [] }
        voipRunning = false
        return [.stopVoIP, .send(.voipState(VoIPState(state: .ended))), .report(.voipStateChanged(.ended))]
    }

    /// Time passed (`now` on the caller's monotonic origin): the prompt may time out.
    public mutating func tick(now: Duration) -> [Action] {
        guard case .requestPending(let request, let deadline) = state, now >= deadline else { return [] }
        state = .online
        return [
            .send(
                .connectionResponse(
                    ConnectionResponse(requestID: request.requestID, decision: .reject, reason: .requestTimedOut))),
            .report(.connectionRequestTimedOut(requestID: request.requestID)),
        ]
    }

    /// The link under the session closed: the session is over.
    public mutating func linkClosed(reason: ReasonCode, message: String) -> [Action] {
        let previous = state
        guard previous != .idle else { return [] }
        var actions = stopVoIPIfRunning()
        state = .idle
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
    public mutating func received(_ message: Message, now: Duration, call: SystemCallStatus) -> [Action] {
        switch FrameRouting(message) {
        case .session: break
        case .connectionOnly: return []
        case .violation(let text): return [.protocolViolation(text)]
        }
        switch (state, message) {
        case (.idle, _):
            return []  // crossed our SESSION_END
        case (.registering, .registerResult(let result)):
            if result.reason == .success {
                state = .online
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
            let info = ConnectionRequestInfo(
                requestID: request.requestID, supporterName: request.supporterName,
                connectionType: request.connectionType, requestedFeatures: request.requestedFeatures)
            state = .requestPending(info, deadline: now.saturatingAdding(promptTimeout))
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
            var actions: [Action] = [
                .report(.supporterConnected(supporterName: pending.supporterName, connectionType: pending.connectionType))
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
            var actions = stopVoIPIfRunning()
            state = .idle
            if end.reason.isError {
                actions.append(.report(.error(DeviceSessionFailure(reason: end.reason, message: Self.describe(end)))))
            } else {
                actions.append(.report(.supporterDisconnected(reason: end.reason, text: end.text)))
            }
            return actions
        case (_, .sessionError(let error)):
            return [.report(.sessionError(reason: error.reason, feature: error.feature, text: error.text))]
        default:
            return [.protocolViolation("\(message.frameType.specName) is not allowed in device state \(state.name)")]
        }
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
