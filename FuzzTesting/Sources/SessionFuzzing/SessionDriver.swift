// Drives DeviceSessionMachine and SupporterSessionMachine (SPEC §8, §9) with an arbitrary event sequence read from
// the fuzz input, and traps (FuzzCommon.fail) when an invariant breaks.
//
// Input format, read left to right until the bytes run out (a missing argument byte reads as 0):
//
//   0x01 …          a frame: this byte is the frame header's version byte, so the frame (8-byte header, then the
//                   payload its length field announces, cut short at the end of the input) starts here. It goes
//                   through one FrameDecoder (so wire.dict entries are real events) and every decoded message is fed
//                   to both machines. A decoding error closes both links (`malformed_frame`) and starts a new decoder.
//   other byte b,   by b % 14:
//     0  device register(code, token)      two argument bytes choose from short lists, valid and not
//     1  device answer(id, allow)           argument byte: bit 0 → the pending id (else the byte), bit 1 → allow
//     2  device leave
//     3  device tick                        argument byte: time step (see `advanceClock`)
//     4  device setCallID                   argument byte chooses the id
//     5  device clearCallID
//     6  device link closed
//     7  supporter request                  name, type+features (a bitmask; bit 7: a feature at version 0)
//     8  supporter abort
//     9  supporter end(reason, text)
//     10 supporter tick                     time step
//     11 supporter link closed              (a new connection: a new machine, request ids restart)
//     12 the node's next REGISTER decision  accept with a code type, or refuse with a reason and a text
//     13 the call observer's report         running or not, and which id
//
// The device's capabilities come from a hash of the input. Invariants checked: no trap; `.protocolViolation` exactly
// when SPEC §7–§9 call the message illegal in the state (written out below, independently of the machines), as the
// only action, with the state unchanged, after which the link closes (the device gets `linkClosed`; the supporter is
// replaced, a new connection); discards change nothing; local commands are refused exactly when the spec or the wire
// says so; the device is not joined after leave / link closed; supporter request ids strictly increase per connection;
// every `.send` encodes with FrameEncoder (16 KiB); prompt / request deadlines exist exactly in the pending states;
// VoIP runs only in `active`.
import FuzzCommon
import SupportSession

public struct SessionDriver {
    /// libFuzzer's buffer, read in place: the driver lives only for one call of `run`.
    let input: UnsafeRawBufferPointer
    var position = 0
    var device: DeviceSessionMachine
    var supporter = SupporterSessionMachine()
    var decoder = FrameDecoder()
    var now: Duration = .zero
    var call = SystemCallStatus.idle
    var decision = RegistrationDecision.accept(codeType: .remoteSupport)
    /// The supporter connection's last request id (0: none yet).
    var lastRequestID: UInt32 = 0
    /// Where `checkEncodes` encodes each sent message: one buffer reused, not an array per message.
    var scratch: [UInt8] = []

    static let codes = ["s12-345", "", String(repeating: "c", count: 64), String(repeating: "c", count: 65), "é"]
    static let tokens = ["tok", "", String(repeating: "t", count: 256), String(repeating: "t", count: 257)]
    static let names = ["Alice", "", String(repeating: "n", count: 64), String(repeating: "n", count: 65), "Jürgen 🛠"]
    static let texts: [String?] = [nil, "bye", "", String(repeating: "x", count: 256), String(repeating: "x", count: 257)]
    static let callIDs = ["E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "other", ""]
    static let reasons: [ReasonCode] =
        (0...7).map { ReasonCode(rawValue: $0) } + (0x80...0x90).map { ReasonCode(rawValue: $0) }
        + [ReasonCode(rawValue: 0x42), ReasonCode(rawValue: 0xC3)]
    static let features: [Feature.ID] = [.screenShare, .assistAR, .voip, .remoteControl, Feature.ID(rawValue: 0x0042)]
    /// A time far beyond any clock, where a careless `now + timeout` overflows.
    static let farFuture = Duration.seconds(Int64.max) * 18

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        var driver = SessionDriver(bytes)
        driver.runAll()
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        input = bytes
        scratch.reserveCapacity(512)
        let hash = inputHash(bytes)
        var capabilities = FeatureSet()
        for (bit, id) in Self.features.enumerated() where hash >> UInt64(bit) & 1 == 1 {
            capabilities.insert(Feature(id, version: hash >> UInt64(8 + bit) & 1 == 1 ? 2 : 1))
        }
        device = DeviceSessionMachine(capabilities: capabilities)
    }

    mutating func byte() -> UInt8 {
        guard position < input.count else { return 0 }
        defer { position += 1 }
        return input[position]
    }

    func pick<T>(_ list: [T], _ byte: UInt8) -> T { list[Int(byte) % list.count] }

    func fail(_ what: String) -> Never {
        FuzzCommon.fail(
            "\(what)\n  device: \(device.state)\n  supporter: \(supporter.state)\n  at input offset \(position)",
            input: input)
    }

    mutating func runAll() {
        while position < input.count {
            let selector = byte()
            if selector == 0x01 {
                frame(headerAt: position - 1)
            } else {
                switch selector % 14 {
                case 0: deviceRegister()
                case 1: deviceAnswer()
                case 2: deviceLeave()
                case 3: deviceTick()
                case 4: _ = checkDevice(device.setCallID(pick(Self.callIDs, byte())), expectNone: true)
                case 5: deviceClearCallID()
                case 6: deviceLinkClosed(reason: .connectionLost)
                case 7: supporterRequest()
                case 8: supporterAbort()
                case 9: supporterEnd()
                case 10: supporterTick()
                case 11: supporterLinkClosed(reason: .connectionLost)
                case 12: chooseDecision()
                default: chooseCall()
                }
            }
            checkStaticInvariants()
        }
    }

    // MARK: invariants on every action list and after every event

    /// Sends encode; returns whether there was a protocol violation. `expectNone`: the event must give no action.
    mutating func checkDevice(_ actions: [DeviceSessionMachine.Action], expectNone: Bool = false) -> Bool {
        if expectNone && !actions.isEmpty { fail("expected no device action, got \(actions)") }
        var violation = false
        for action in actions {
            switch action {
            case .send(let message): checkEncodes(message, from: "device")
            case .protocolViolation: violation = true
            case .report, .startVoIP, .stopVoIP, .resumeLater: break
            }
        }
        return violation
    }

    mutating func checkSupporter(_ actions: [SupporterSessionMachine.Action]) -> Bool {
        var violation = false
        for action in actions {
            switch action {
            case .send(let message):
                checkEncodes(message, from: "supporter")
                if case .connectionRequest(let request) = message {
                    if request.requestID <= lastRequestID {
                        fail("request id \(request.requestID) after \(lastRequestID)")
                    }
                    lastRequestID = request.requestID
                }
            case .protocolViolation: violation = true
            case .report: break
            }
        }
        return violation
    }

    mutating func checkEncodes(_ message: Message, from side: String) {
        scratch.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try FrameEncoder().encode(message, into: &scratch)
        } catch {
            fail("the \(side) sends \(message), which does not encode: \(error)")
        }
    }

    func checkStaticInvariants() {
        if case .requestPending(_, let deadline) = device.state {
            if device.nextDeadline != deadline { fail("device deadline \(String(describing: device.nextDeadline))") }
        } else if device.nextDeadline != nil {
            fail("device has a prompt deadline outside request_pending")
        }
        if case .requestPending(_, _, let deadline) = supporter.state {
            if supporter.nextDeadline != deadline { fail("supporter deadline \(String(describing: supporter.nextDeadline))") }
        } else if supporter.nextDeadline != nil {
            fail("supporter has a request deadline outside request_pending")
        }
        if device.voipRunning, case .active = device.state {} else if device.voipRunning {
            fail("VoIP runs outside active")
        }
        if device.isJoined == Self.isIdle(device.state) { fail("isJoined disagrees with the state") }
        if (supporter.code == nil) != Self.isIdle(supporter.state) { fail("supporter code disagrees with the state") }
    }

    // Pattern matches rather than `== .idle`: the derived `==` of these enums is a measurable share of every event.
    static func isIdle(_ state: DeviceSessionMachine.State) -> Bool {
        if case .idle = state { return true }
        return false
    }

    static func isIdle(_ state: SupporterSessionMachine.State) -> Bool {
        if case .idle = state { return true }
        return false
    }

    // MARK: device local events

    mutating func deviceRegister() {
        let code = pick(Self.codes, byte())
        let token = pick(Self.tokens, byte())
        let wasIdle = Self.isIdle(device.state)
        let valid = (1...64).contains(code.utf8.count) && (1...256).contains(token.utf8.count)
        let before = device.state
        do {
            let actions = try device.register(code: code, token: token)
            if !wasIdle || !valid { fail("register accepted (idle: \(wasIdle), valid: \(valid))") }
            let expected = Message.register(Register(sessionCode: code, apiToken: token, capabilities: device.capabilities))
            guard actions.count == 1, case .send(let sent) = actions[0], sent == expected,
                case .registering = device.state
            else { fail("register gave \(actions)") }
            _ = checkDevice(actions)
        } catch {
            if wasIdle && valid { fail("register refused in idle with a valid code and token: \(error)") }
            if device.state != before { fail("a refused register changed the state") }
        }
    }

    mutating func deviceAnswer() {
        let argument = byte()
        let before = device.state
        var pendingID: UInt32?
        if case .requestPending(let request, _) = before { pendingID = request.requestID }
        let id = argument & 1 == 1 ? (pendingID ?? 1) : UInt32(argument)
        let actions = device.answer(requestID: id, allow: argument & 2 == 2)
        if id == pendingID {
            if actions.count != 1 { fail("answer to the pending request gave \(actions)") }
            if device.state == before { fail("answer to the pending request kept the state") }
        } else if !actions.isEmpty || device.state != before {
            fail("an answer that does not count acted: \(actions)")
        }
        _ = checkDevice(actions)
    }

    mutating func deviceLeave() {
        let wasIdle = Self.isIdle(device.state)
        let actions = device.leave()
        if wasIdle != actions.isEmpty { fail("leave in \(wasIdle ? "idle" : "a joined state") gave \(actions)") }
        if device.isJoined || !Self.isIdle(device.state) || device.voipRunning { fail("still joined after leave") }
        _ = checkDevice(actions)
    }

    mutating func advanceClock() {
        let step = byte()
        switch step {
        case 0xFF: now = Self.farFuture
        case 0xFE: now = .zero - Self.farFuture
        case 0xFD: now = .zero
        default:
            // Up to 127 s in half-second steps: both default timeouts (60 s, 90 s) are reachable.
            let (sum, overflow) = now.attoseconds.addingReportingOverflow(Duration.milliseconds(Int(step) * 500).attoseconds)
            now = overflow ? Self.farFuture : Duration(attoseconds: sum)
        }
    }

    mutating func deviceTick() {
        advanceClock()
        let before = device.state
        let actions = device.tick(now: now)
        if case .requestPending(_, let deadline) = before, now >= deadline {
            if actions.count != 2 || device.state != .online { fail("prompt timeout gave \(actions)") }
        } else if !actions.isEmpty || device.state != before {
            fail("tick before the deadline acted: \(actions)")
        }
        _ = checkDevice(actions)
    }

    mutating func deviceClearCallID() {
        var shouldStop = false
        if device.voipRunning, case .active = device.state { shouldStop = true }
        let actions = device.clearCallID()
        let expected: [DeviceSessionMachine.Action] =
            shouldStop ? [.stopVoIP, .send(.voipState(VoIPState(state: .ended))), .report(.voipStateChanged(.ended))] : []
        if actions != expected { fail("clearCallID gave \(actions)") }
        if device.voipRunning || device.handedOverCallID != nil { fail("hand-over not cleared") }
        _ = checkDevice(actions)
    }

    mutating func deviceLinkClosed(reason: ReasonCode) {
        let wasIdle = Self.isIdle(device.state)
        let actions = device.linkClosed(reason: reason, message: "link closed")
        if wasIdle != actions.isEmpty { fail("linkClosed gave \(actions)") }
        if device.isJoined || !Self.isIdle(device.state) || device.voipRunning { fail("still joined after linkClosed") }
        if checkDevice(actions) { fail("linkClosed gave a protocol violation") }
    }

    // MARK: supporter local events

    mutating func supporterRequest() {
        let name = pick(Self.names, byte())
        let shape = byte()
        var features = FeatureSet()
        for (bit, id) in Self.features.enumerated() where shape >> UInt8(bit + 1) & 1 == 1 {
            features.insert(Feature(id))
        }
        if shape & 0x80 != 0 { features.insert(Feature(.remoteControl, version: 0)) }
        let valid = (1...64).contains(name.utf8.count) && shape & 0x80 == 0
        let before = supporter.state
        var wasOnline = false
        if case .online = before { wasOnline = true }
        do {
            let actions = try supporter.requestConnection(
                supporterName: name, type: shape & 1 == 1 ? .assistAR : .screenShare, features: features, now: now)
            if !wasOnline || !valid { fail("request accepted (online: \(wasOnline), valid: \(valid))") }
            if actions.count != 1 { fail("request gave \(actions)") }
            _ = checkSupporter(actions)
        } catch {
            if wasOnline && valid && lastRequestID < UInt32.max { fail("request refused while online: \(error)") }
            if supporter.state != before { fail("a refused request changed the state") }
        }
    }

    mutating func supporterAbort() {
        let before = supporter.state
        var pending = false
        if case .requestPending = before { pending = true }
        do {
            let actions = try supporter.abortRequest()
            if !pending { fail("abort accepted outside request_pending") }
            if actions.count != 1 { fail("abort gave \(actions)") }
            _ = checkSupporter(actions)
        } catch {
            if pending { fail("abort refused in request_pending") }
            if supporter.state != before { fail("a refused abort changed the state") }
        }
    }

    mutating func supporterEnd() {
        let reason = pick(Self.reasons, byte())
        let text = pick(Self.texts, byte())
        let before = supporter.state
        let valid = text.map { (1...256).contains($0.utf8.count) } ?? true
        do {
            let actions = try supporter.end(reason: reason, text: text)
            if Self.isIdle(before) || !valid {
                fail("end accepted (idle: \(Self.isIdle(before)), valid text: \(valid))")
            }
            if !Self.isIdle(supporter.state) || actions.count != 2 { fail("end gave \(actions)") }
            _ = checkSupporter(actions)
        } catch {
            if !Self.isIdle(before) && valid { fail("end refused: \(error)") }
            if supporter.state != before { fail("a refused end changed the state") }
        }
    }

    mutating func supporterTick() {
        advanceClock()
        let before = supporter.state
        let actions = supporter.tick(now: now)
        if case .requestPending(_, _, let deadline) = before, now >= deadline {
            if actions.count != 2 { fail("request timeout gave \(actions)") }
            if case .online = supporter.state {} else { fail("request timeout did not go back online") }
        } else if !actions.isEmpty || supporter.state != before {
            fail("tick before the deadline acted: \(actions)")
        }
        _ = checkSupporter(actions)
    }

    /// The supporter's connection ends; the next frames come on a new connection, with a new machine.
    mutating func supporterLinkClosed(reason: ReasonCode) {
        let wasIdle = Self.isIdle(supporter.state)
        let actions = supporter.linkClosed(reason: reason, text: nil)
        if wasIdle != actions.isEmpty || !Self.isIdle(supporter.state) { fail("supporter linkClosed gave \(actions)") }
        if checkSupporter(actions) { fail("linkClosed gave a protocol violation") }
        supporter = SupporterSessionMachine()
        lastRequestID = 0
    }

    mutating func chooseDecision() {
        let argument = byte()
        switch argument % 4 {
        case 0: decision = .accept(codeType: .remoteSupport)
        case 1: decision = .accept(codeType: .assistAR)
        default:
            decision = .refuse(
                pick(Self.reasons, byte()), text: pick(Self.texts, argument >> 2),
                retryAfterMilliseconds: argument & 0x80 != 0 ? 1000 : nil)
        }
    }

    mutating func chooseCall() {
        let argument = byte()
        call = SystemCallStatus(
            isCallRunning: argument & 1 == 1, runningCallID: argument & 2 == 2 ? pick(Self.callIDs, argument >> 2) : nil)
    }

    // MARK: frames

    mutating func frame(headerAt start: Int) {
        var end = min(input.count, start + 8)
        if end - start == 8 {
            let length = Int(input[start + 4]) << 24 | Int(input[start + 5]) << 16 | Int(input[start + 6]) << 8
                | Int(input[start + 7])
            end = start + 8 + min(length, input.count - start - 8)
        }
        position = end
        decoder.append(UnsafeRawBufferPointer(rebasing: input[start..<end]))
        while true {
            let message: Message
            do throws(WireError) {
                guard let next = try decoder.nextMessage() else { return }
                message = next
            } catch {
                // SPEC §10.1: the link closes; nothing after the bad frame is read on it.
                deviceLinkClosed(reason: error.code == .frameTooLarge ? .frameTooLarge : .malformedFrame)
                supporterLinkClosed(reason: .malformedFrame)
                decoder = FrameDecoder()
                return
            }
            deliverToDevice(message)
            deliverToSupporter(message)
            checkStaticInvariants()
        }
    }

    /// SPEC §8 (and §7 on an open connection): whether `message` is illegal in device state `state`.
    static func deviceIllegal(_ state: DeviceSessionMachine.State, _ message: Message) -> Bool {
        // SPEC §15.1: a 1.1 frame on a connection without its extension (this driver negotiates none) is an error in
        // every state.
        if message.frameType.requiredExtension != nil { return true }
        switch message {
        case .hello, .helloAck: return true
        case .ping, .pong, .goAway: return false
        default: break
        }
        switch (state, message) {
        case (.idle, _): return false
        case (.registering, .registerResult): return false
        case (.online, .connectionRequest): return false
        case (.registering, .requestAbort): return true
        case (_, .requestAbort): return false
        case (.awaitingStart(let pending), .sessionStarted(let started)): return pending.requestID != started.requestID
        case (.registering, .sessionEnd): return true
        case (_, .sessionEnd): return false
        case (_, .sessionError): return false
        default: return true
        }
    }

    /// SPEC §9 (and §7 on an open connection): whether `message` is illegal in supporter state `state`.
    /// SPEC §9 (with errata 1.0.1 no. 9: REGISTER after the device's own SESSION_END is a protocol error).
    static func supporterIllegal(
        _ state: SupporterSessionMachine.State, _ message: Message, deviceSentSessionEnd: Bool = false
    ) -> Bool {
        if message.frameType.requiredExtension != nil { return true }  // SPEC §15.1, as for the device
        switch message {
        case .hello, .helloAck: return true
        case .ping, .pong, .goAway: return false
        case .register: return !isIdle(state) || deviceSentSessionEnd
        case .registerResult, .connectionRequest, .requestAbort, .sessionStarted: return true
        case .connectionResponse, .sessionEnd, .sessionError: return false
        case .voipState:
            if case .active = state { return false }
            return !isIdle(state)
        case .featureRequest, .featureAnswer, .featureRevoke, .sessionMessage, .messageAck, .resume, .resumeResult:
            return true
        }
    }

    mutating func deliverToDevice(_ message: Message) {
        let before = device.state
        let illegal = Self.deviceIllegal(before, message)
        let actions = device.received(message, now: now, call: call)
        let violation = checkDevice(actions)
        if illegal {
            guard violation, actions.count == 1, device.state == before else {
                fail("device: \(message) is illegal in \(before.name), got \(actions)")
            }
            deviceLinkClosed(reason: .protocolError)  // the link closes; the app may connect and register again
            return
        }
        if violation { fail("device: protocol violation for \(message), legal in \(before.name): \(actions)") }
        if Self.isIdle(before) && (!actions.isEmpty || !Self.isIdle(device.state)) {
            fail("device in idle acted on \(message)")
        }
        if case .ping = message, !actions.isEmpty || device.state != before { fail("device acted on PING") }
    }

    mutating func deliverToSupporter(_ message: Message) {
        let before = supporter.state
        let ended = supporter.deviceSentSessionEnd
        let illegal = Self.supporterIllegal(before, message, deviceSentSessionEnd: ended)
        var asked = 0
        let decision = decision
        let actions = supporter.received(message, now: now) { _ in
            asked += 1
            return decision
        }
        var isRegisterInIdle = false
        if case .register = message, Self.isIdle(before), !ended { isRegisterInIdle = true }
        if asked != (isRegisterInIdle ? 1 : 0) { fail("authorize asked \(asked) times for \(message)") }
        let violation = checkSupporter(actions)
        if illegal {
            guard violation, actions.count == 1, supporter.state == before else {
                fail("supporter: \(message) is illegal in \(before.name), got \(actions)")
            }
            supporterLinkClosed(reason: .protocolError)
            return
        }
        if violation { fail("supporter: protocol violation for \(message), legal in \(before.name): \(actions)") }
        if isRegisterInIdle, case .register(let register) = message {
            guard case .send(.registerResult(let result)) = actions.first else { fail("REGISTER unanswered: \(actions)") }
            switch decision {
            case .accept:
                if result.reason != .success || supporter.state != .online(code: register.sessionCode) {
                    fail("accepted REGISTER gave \(actions)")
                }
            case .refuse:
                if result.reason == .success || !Self.isIdle(supporter.state) { fail("refused REGISTER gave \(actions)") }
            }
        }
        if case .connectionResponse(let response) = message {
            var resolves = false
            if case .requestPending(_, let request, _) = before, request.requestID == response.requestID {
                resolves = true
            }
            if !resolves && (!actions.isEmpty || supporter.state != before) {
                fail("a CONNECTION_RESPONSE for no pending request acted: \(actions)")
            }
        }
    }
}
