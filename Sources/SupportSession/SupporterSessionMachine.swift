/// The supporter node's session state machine for one device connection (SPEC §9). Sans-I/O; time is an input.
///
/// Which codes exist and who may join is the node's policy: REGISTER is answered through the `authorize` function the
/// caller passes with each frame, so the machine stays a value with no registry inside.
public struct SupporterSessionMachine: Sendable {
    public enum State: Sendable, Hashable {
        case idle
        case online(code: String)
        case requestPending(code: String, request: ConnectionRequest, deadline: Duration)
        case active(code: String, request: ConnectionRequest)
    }

    public enum Action: Sendable, Hashable {
        case send(Message)
        case report(SupporterSessionEvent)
        /// The device broke SPEC §9: close its link with GOAWAY `protocol_error` and this text.
        case protocolViolation(String)
    }

    /// A local command the current state does not allow; nothing was sent.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    public private(set) var state: State = .idle
    /// What the device said it can do, from REGISTER.
    public private(set) var deviceCapabilities: FeatureSet = []
    /// How long a request waits for the device's answer before it is aborted.
    public let requestTimeout: Duration
    private var lastRequestID: UInt32 = 0
    /// The device sent SESSION_END on this connection: it must not register on it again (SPEC §5.11).
    public private(set) var deviceSentSessionEnd = false

    public init(requestTimeout: Duration = .seconds(90)) {
        self.requestTimeout = requestTimeout
    }

    /// The joined code, if any.
    public var code: String? {
        switch state {
        case .idle: nil
        case .online(let code), .requestPending(let code, _, _), .active(let code, _): code
        }
    }

    /// When ``tick(now:)`` should run next.
    public var nextDeadline: Duration? {
        if case .requestPending(_, _, let deadline) = state { return deadline }
        return nil
    }

    // MARK: local commands

    /// Sends a connection request as `supporterName`.
    public mutating func requestConnection(
        supporterName: String, type: ConnectionType, features: FeatureSet = [], now: Duration
    ) throws(Refusal) -> [Action] {
        guard case .online(let code) = state else {
            switch state {
            case .idle: throw Refusal(description: "no device has this code online")
            case .requestPending: throw Refusal(description: "a request is already pending for this code")
            default: throw Refusal(description: "a session is already active for this code")
            }
        }
        guard lastRequestID < UInt32.max else { throw Refusal(description: "request ids exhausted on this connection") }
        let request = ConnectionRequest(
            requestID: lastRequestID + 1, supporterName: supporterName, connectionType: type,
            requestedFeatures: features)
        guard Message.connectionRequest(request).encodesWithinDefaultLimit else {
            throw Refusal(
                description: "CONNECTION_REQUEST would not encode: the supporter name needs 1–64 bytes, and every "
                    + "feature a version of 1 or more")
        }
        lastRequestID += 1
        state = .requestPending(code: code, request: request, deadline: now.saturatingAdding(requestTimeout))
        return [.send(.connectionRequest(request))]
    }

    /// Withdraws the pending request.
    public mutating func abortRequest() throws(Refusal) -> [Action] {
        guard case .requestPending(let code, let request, _) = state else {
            throw Refusal(description: "no request is pending")
        }
        state = .online(code: code)
        return [.send(.requestAbort(RequestAbort(requestID: request.requestID, reason: .abortedBySupporter)))]
    }

    /// Ends the registration (or the session) with `reason`: `ended_by_supporter`, `session_code_closed`, ….
    public mutating func end(reason: ReasonCode = .endedBySupporter, text: String? = nil) throws(Refusal) -> [Action] {
        guard state != .idle else { throw Refusal(description: "no device has this code online") }
        guard Message.sessionEnd(SessionEnd(reason: reason, text: text)).encodesWithinDefaultLimit else {
            throw Refusal(description: "SESSION_END would not encode: a text needs 1–256 bytes")
        }
        state = .idle
        return [.send(.sessionEnd(SessionEnd(reason: reason, text: text))), .report(.ended(reason: reason, text: text))]
    }

    /// Time passed: the pending request may time out.
    public mutating func tick(now: Duration) -> [Action] {
        guard case .requestPending(let code, let request, let deadline) = state, now >= deadline else { return [] }
        state = .online(code: code)
        return [
            .send(.requestAbort(RequestAbort(requestID: request.requestID, reason: .requestTimedOut))),
            .report(.requestTimedOut(requestID: request.requestID)),
        ]
    }

    /// The device's link closed: the registration ends.
    public mutating func linkClosed(reason: ReasonCode, text: String?) -> [Action] {
        guard state != .idle else { return [] }
        state = .idle
        return [.report(.ended(reason: reason, text: text))]
    }

    // MARK: frames

    /// A session frame from the device. `authorize` decides a REGISTER (the node's registry).
    ///
    /// Total over `Message`: connection-level frames get §7's rule for an open connection (HELLO / HELLO_ACK are a
    /// protocol error in every session state; PING, PONG, GOAWAY give no session action).
    public mutating func received(
        _ message: Message, now: Duration, authorize: (Register) -> RegistrationDecision
    ) -> [Action] {
        switch FrameRouting(message) {
        case .session: break
        case .connectionOnly: return []
        case .violation(let text): return [.protocolViolation(text)]
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
            switch authorize(register) {
            case .accept(let codeType, let waitingMessage):
                state = .online(code: register.sessionCode)
                deviceCapabilities = register.capabilities
                let text = waitingMessage.flatMap(Self.wireText)
                return [
                    .send(.registerResult(RegisterResult(reason: .success, text: text, codeType: codeType))),
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
        case (.idle, .sessionEnd):
            deviceSentSessionEnd = true
            return []  // crossed our SESSION_END
        case (.idle, .connectionResponse), (.idle, .sessionError), (.idle, .voipState):
            return []  // crossed our SESSION_END
        case (.requestPending(let code, let request, _), .connectionResponse(let response))
        where response.requestID == request.requestID:
            if response.decision == .allow {
                state = .active(code: code, request: request)
                return [
                    .send(.sessionStarted(SessionStarted(requestID: request.requestID))),
                    .report(.connected(requestID: request.requestID)),
                ]
            }
            // Errata 1.0.1 no. 7: `decision` alone decides; a reject that says `success` is a plain user rejection.
            state = .online(code: code)
            let reason = response.reason == .success ? ReasonCode.rejectedByUser : response.reason
            return [.report(.rejected(requestID: request.requestID, reason: reason))]
        case (_, .connectionResponse):
            return []  // an answer to a request we already aborted or timed out
        case (_, .sessionEnd(let end)):
            state = .idle
            deviceSentSessionEnd = true
            return [.report(.ended(reason: end.reason, text: end.text))]
        case (_, .sessionError(let error)):
            return [.report(.sessionError(reason: error.reason, feature: error.feature, text: error.text))]
        case (.active, .voipState(let voip)):
            return [.report(.voipState(voip.state, text: voip.text))]
        default:
            return [.protocolViolation("\(message.frameType.specName) is not allowed in supporter state \(state.name)")]
        }
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
