// Whole flows: a device machine and a supporter machine talking through real frames (FrameEncoder → FrameDecoder).
import Testing

@testable import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary

/// Two machines joined by a pair of in-memory frame pipes. Every `.send` is encoded, decoded and delivered in order,
/// after the sender's other actions of the same step (as a link would: the frame is in flight).
struct SessionPair {
    var device = DeviceSessionMachine(capabilities: [Feature(.screenShare), Feature(.voip)])
    var supporter = SupporterSessionMachine()
    var deviceReports: [DeviceSessionEvent] = []
    var supporterReports: [SupporterSessionEvent] = []
    var deviceEffects: [DeviceSessionMachine.Action] = []
    var violations: [String] = []
    var now = t0
    var call = SystemCallStatus.idle
    var authorize: @Sendable (Register) -> RegistrationDecision = { _ in .accept(codeType: .remoteSupport) }
    /// Frames in flight: (to the device?, message).
    var inFlight: [(toDevice: Bool, message: Message)] = []
    var pumping = false

    mutating func fromDevice(_ actions: [DeviceSessionMachine.Action]) {
        for action in actions {
            switch action {
            case .send(let message): inFlight.append((false, message))
            case .report(let event): deviceReports.append(event)
            case .protocolViolation(let text): violations.append("device: \(text)")
            case .startVoIP, .stopVoIP, .resumeLater: deviceEffects.append(action)
            }
        }
        pump()
    }

    /// Delivers frames in flight until none is left.
    mutating func pump() {
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while !inFlight.isEmpty {
            let (toDevice, message) = inFlight.removeFirst()
            if toDevice { self.toDevice(message) } else { toSupporter(message) }
        }
    }

    mutating func fromSupporter(_ actions: [SupporterSessionMachine.Action]) {
        for action in actions {
            switch action {
            case .send(let message): inFlight.append((true, message))
            case .report(let event): supporterReports.append(event)
            case .protocolViolation(let text): violations.append("supporter: \(text)")
            case .authorize(let register): violations.append("supporter: REGISTER \(register) left undecided")
            }
        }
        pump()
    }

    static func overTheWire(_ message: Message) -> Message? {
        guard let bytes = try? FrameEncoder().encode(message),
            let decoded = try? FrameDecoder.decodeAll(bytes), decoded.count == 1
        else { return nil }
        return decoded[0]
    }

    mutating func toSupporter(_ message: Message) {
        guard let message = Self.overTheWire(message) else {
            Issue.record("the device sent an unencodable \(message)")
            return
        }
        fromSupporter(supporter.received(message, now: now, authorize: authorize))
    }

    mutating func toDevice(_ message: Message) {
        guard let message = Self.overTheWire(message) else {
            Issue.record("the supporter sent an unencodable \(message)")
            return
        }
        fromDevice(device.received(message, now: now, call: call))
    }
}

@Suite struct SessionFlowTests {
    @Test func registerRequestAllowStartThenSupporterEnds() throws {
        var pair = SessionPair()
        pair.fromDevice(try pair.device.register(code: "s12-345", token: "tok"))
        #expect(pair.device.state == .online)
        #expect(pair.supporter.state == .online(code: "s12-345"))
        #expect(pair.deviceReports == [.sessionCodeOnline(codeType: .remoteSupport, waitingMessage: nil)])

        pair.fromSupporter(
            try pair.supporter.requestConnection(
                supporterName: "Alice", type: .screenShare, features: [Feature(.voip)], now: pair.now))
        let info = ConnectionRequestInfo(
            requestID: 1, supporterName: "Alice", connectionType: .screenShare, requestedFeatures: [Feature(.voip)])
        #expect(pair.device.state == .requestPending(info, deadline: t0 + .seconds(60)))
        #expect(pair.deviceReports.last == .connectionRequest(info))

        pair.fromDevice(pair.device.answer(requestID: 1, allow: true))
        #expect(pair.device.state == .active(info))
        #expect(pair.deviceEffects == [.startVoIP])
        #expect(pair.supporterReports.suffix(2) == [.connected(requestID: 1), .voipState(.started, text: "VoIP started")])
        guard case .active(_, let request) = pair.supporter.state else {
            Issue.record("supporter not active: \(pair.supporter.state)")
            return
        }
        #expect(request.requestID == 1)

        pair.fromSupporter(try pair.supporter.end())
        #expect(pair.supporter.state == .idle)
        #expect(pair.device.state == .idle)
        #expect(!pair.device.isJoined)
        #expect(pair.deviceEffects == [.startVoIP, .stopVoIP])
        #expect(pair.deviceReports.last == .supporterDisconnected(reason: .endedBySupporter, text: nil))
        #expect(pair.violations.isEmpty)
    }

    @Test func rejectThenPromptTimeoutThenSupporterTimeoutThenDeviceLeaves() throws {
        var pair = SessionPair()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        pair.fromDevice(pair.device.answer(requestID: 1, allow: false))
        #expect(pair.supporterReports.last == .rejected(requestID: 1, reason: .rejectedByUser))
        #expect(pair.device.state == .online)

        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        pair.now = t0 + .seconds(60)
        pair.fromDevice(pair.device.tick(now: pair.now))
        #expect(pair.deviceReports.last == .connectionRequestTimedOut(requestID: 2))
        #expect(pair.supporterReports.last == .rejected(requestID: 2, reason: .requestTimedOut))
        #expect(pair.supporter.state == .online(code: "c"))

        // The supporter's own timer fires first this time: REQUEST_ABORT reaches the device's prompt.
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        pair.fromSupporter(pair.supporter.tick(now: pair.now + .seconds(90)))
        #expect(pair.deviceReports.last == .connectionRequestAborted(requestID: 3, reason: .requestTimedOut))
        #expect(pair.device.state == .online)
        #expect(pair.device.answer(requestID: 3, allow: true).isEmpty)

        pair.fromDevice(pair.device.leave())
        #expect(pair.device.state == .idle)
        #expect(pair.supporter.state == .idle)
        #expect(pair.supporterReports.last == .ended(reason: .endedByDevice, text: nil))
        #expect(pair.violations.isEmpty)
    }

    @Test func crossingAbortAndAllowAreBothDiscarded() throws {
        // Both frames are in flight at once: the device's allow, then the supporter's abort overtakes it.
        var pair = SessionPair()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        // Both act before either frame arrives.
        let allow = pair.device.answer(requestID: 1, allow: true)
        let abort = try pair.supporter.abortRequest()
        pair.fromSupporter(abort)  // REQUEST_ABORT(1) reaches awaiting_start(1): back online
        pair.fromDevice(allow)  // CONNECTION_RESPONSE(1) reaches online: discarded
        #expect(pair.device.state == .online)
        #expect(pair.supporter.state == .online(code: "c"))
        #expect(pair.violations.isEmpty)
    }

    @Test func registrationRefusedThenAcceptedOnTheSameConnection() throws {
        var pair = SessionPair()
        pair.authorize = { _ in .refuse(.invalidSessionCode) }
        pair.fromDevice(try pair.device.register(code: "bad", token: "t"))
        #expect(pair.device.state == .idle)
        guard case .error(let failure) = pair.deviceReports.last else {
            Issue.record("no failure reported: \(pair.deviceReports)")
            return
        }
        #expect(failure.reason == .invalidSessionCode)
        pair.authorize = { _ in .accept(codeType: .assistAR) }
        pair.fromDevice(try pair.device.register(code: "good", token: "t"))
        #expect(pair.device.state == .online)
        #expect(pair.deviceReports.last == .sessionCodeOnline(codeType: .assistAR, waitingMessage: nil))
    }

    @Test func featureMismatchesReachTheSupporterAsInformativeErrors() throws {
        var pair = SessionPair()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(
            try pair.supporter.requestConnection(
                supporterName: "A", type: .assistAR, features: [Feature(.remoteControl)], now: pair.now))
        let errors = pair.supporterReports.compactMap { event -> Feature.ID? in
            if case .sessionError(.unsupportedFeature, let feature, _) = event { return feature }
            return nil
        }
        #expect(errors == [.assistAR, .remoteControl])
        guard case .requestPending = pair.supporter.state else {
            Issue.record("the session should go on: \(pair.supporter.state)")
            return
        }
    }

    /// A device that registers again on the connection where it sent SESSION_END could take the old registration's
    /// frames, still in flight, for answers to the new one (SPEC §5.11 forbids it). Errata 1.0.1 no. 9: the supporter
    /// answers that REGISTER with GOAWAY `protocol_error` instead of a second REGISTER_RESULT, so no stale answer can
    /// be mistaken for a new one.
    @Test func reRegisteringOnTheConnectionAfterLeavingIsAProtocolError() throws {
        var device = DeviceSessionMachine(capabilities: [])
        var supporter = SupporterSessionMachine()
        let accept: (Register) -> RegistrationDecision = { _ in .accept(codeType: .remoteSupport) }
        var toSupporter: [Message] = []
        for action in try device.register(code: "c", token: "t") { if case .send(let m) = action { toSupporter.append(m) } }
        for action in device.leave() { if case .send(let m) = action { toSupporter.append(m) } }
        for action in try device.register(code: "c", token: "t") { if case .send(let m) = action { toSupporter.append(m) } }
        var toDevice: [Message] = []
        var violations = 0
        for message in toSupporter {
            for action in supporter.received(message, now: t0, authorize: accept) {
                if case .send(let m) = action { toDevice.append(m) }
                if action.isProtocolViolation { violations += 1 }
            }
        }
        #expect(toDevice == [.registerResult(RegisterResult(reason: .success, codeType: .remoteSupport))])
        #expect(violations == 1, "the second REGISTER closes the connection with GOAWAY protocol_error")
        #expect(supporter.state == .idle)
    }
}
