// Drives DeviceSessionMachine and SupporterSessionMachine (SPEC §8, §9, §15) with an arbitrary event sequence read
// from the fuzz input, and traps (FuzzCommon.fail) when an invariant breaks.
//
// The two machines are the two ends of one link. Every frame a machine sends is queued for its peer (the link's
// frames in flight, in order) and reaches it only through event 21, encoded with FrameEncoder and decoded again with a
// FrameDecoder; frames in flight are lost when the link closes. Frames from the input (0x01) are fed to both machines
// at once, as a hostile or confused peer would send them.
//
// Input format, read left to right until the bytes run out (a missing argument byte reads as 0):
//
//   0x01 …          a frame: this byte is the frame header's version byte, so the frame (8-byte header, then the
//                   payload its length field announces, cut short at the end of the input) starts here. It goes
//                   through one FrameDecoder (so wire.dict entries are real events) and every decoded message is fed
//                   to both machines. A decoding error closes both links (`malformed_frame`) and starts a new decoder.
//   other byte b,   by b % 25:
//     0  device register(code, token)      two argument bytes choose from short lists, valid and not
//     1  device answer(id, allow)           argument byte: bit 0 → the pending id (else the byte), bit 1 → allow,
//                                           bit 2 → grant only the first feature to confirm (else all of them)
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
//   protocol 1.1 (SPEC §15):
//     14 a new link with extensions         argument: bits 0-2 = access_control, session_messages, session_resume
//                                           asked for (session_messages only in effect with access_control, §15.1);
//                                           both links close and both machines get the same set (`.none` = 1.0).
//                                           Until the first such event the link is 1.0 (no extension).
//     15 supporter askFeature               argument: bits 0-3 feature, bit 4 → the code rule made `confirm` for
//                                           this ask, bits 5-6 the text
//     16 device answerFeature               argument: bit 0 → the oldest pending ask (else the byte >> 2), bit 1 → grant
//     17 device revoke                      argument: bits 0-3 feature, bits 4-5 the text
//     18 device send                        argument: bits 0-1 chat / application / file / chat of a bad length,
//                                           bits 2-4 the size (files: up to 3 parts)
//     19 supporter send                     the same
//     20 link lost (both sides)             with session_resume both may keep the session, reconnecting
//     21 deliver frames in flight           argument: bit 0 → to the supporter (else to the device), bits 1-3 how
//                                           many (0: all)
//     22 the code's rules                   argument chooses one of `codeRuleSets`; takes effect on an idle supporter
//     23 device resume on a new link        after 20: RESUME (argument bit 0 → with a wrong secret) to the
//                                           supporter's machine; an accepted one replaces the supporter, its actions
//                                           reach the device through the wire at once
//     24 supporter request with code rules  name, type + features over `features11` (bits 1-7), media descriptor
//                                           (nil, valid, empty, too long)
//
// The device's capabilities (over `features11`) and its access rules come from a hash of the input. Invariants
// checked: no trap; `.protocolViolation` exactly when SPEC §7–§9 and §15.1–§15.5 call the message illegal in the state
// (written out below, independently of the machines: a §15 frame without its extension is an error in every state;
// FEATURE_REQUEST legal at the device only in active, discarded in idle; SESSION_MESSAGE / MESSAGE_ACK legal in
// active, discarded in idle, errors in the other states; an id that skips, an ack for nothing sent), as the only
// action, with the state unchanged, after which the link closes; discards change nothing; local commands are refused
// exactly when the spec or the wire says so; the device is not joined after leave / link closed; supporter request
// ids and ask ids strictly increase per connection; SESSION_MESSAGE ids of each sender go up by exactly 1 (resends after
// a resume excepted); never more than 16 unacknowledged; a message goes out only with its feature granted; grants
// exist only in active, lie within the device's capabilities and never hold a feature the device's or the code's rule
// denies; FEATURE_REQUEST answered by rule; every `.send` encodes with FrameEncoder (16 KiB); prompt / request / ask
// deadlines are exactly the pending ones; VoIP runs only in `active`; while both ends have seen only each other's
// frames (no input frame, no one-sided close) a frame from the peer is never a protocol violation; a RESUME with a
// wrong secret is rejected and ends nothing; after an accepted RESUME both sides hold the same new secret and
// compatible states (device active ⇔ supporter active, the same request).
#if canImport(Glibc)
import Glibc
#endif
import FuzzCommon
import Synchronization
import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

/// Resume secrets the supporter machines make: 32+ printable bytes, a different one each time (SPEC §15.2), so that a
/// rotation is visible and a stale secret never matches.
private let secretCounter = Atomic<UInt64>(0)

public struct SessionDriver {
    /// libFuzzer's buffer, read in place: the driver lives only for one call of `run`.
    let input: UnsafeRawBufferPointer
    var position = 0
    var device: DeviceSessionMachine
    var supporter: SupporterSessionMachine
    var decoder = FrameDecoder()
    var now: Deadline = .zero
    var call = SystemCallStatus.idle
    var decision = RegistrationDecision.accept(codeType: .remoteSupport)
    /// The supporter connection's last request id (0: none yet).
    var lastRequestID: UInt32 = 0
    /// Where `checkEncodes` encodes each sent message: one buffer reused, not an array per message.
    var scratch: [UInt8] = []

    // Protocol 1.1 bookkeeping, kept from what the machines send and receive (never read from their insides).
    /// The extensions in effect on the current link (the same on both ends).
    var linkExtensions: ProtocolExtensions = .none
    /// The device's access rules (from the input hash) and the code's (event 22).
    let deviceRules: FeatureRules
    var codeRules = FeatureRules.codeDefault
    /// Frames in flight on the link, oldest first.
    var toDevice: [Message] = []
    var toSupporter: [Message] = []
    /// Both ends have seen only each other's frames since the link opened: a peer frame is never a violation.
    var pristine = true
    /// The link is lost and the device has not resumed yet: what either machine sends goes nowhere.
    var linkDown = false
    /// Inside a resume's reconciliation: resent messages and a resent CONNECTION_REQUEST repeat ids.
    var resuming = false
    /// The supporter's resume secrets as they changed after each event, newest last (at most 4 kept).
    var issuedSecrets: [String] = []
    /// SESSION_MESSAGE ids each side sent last, and received last, in the current registration (0: none).
    var deviceLastSent: UInt32 = 0
    var supporterLastSent: UInt32 = 0
    var deviceLastReceived: UInt32 = 0
    var supporterLastReceived: UInt32 = 0
    /// Feature asks: sent by the supporter and unanswered; shown to the device's user (with deadlines).
    var supporterAsks: [UInt32: Feature.ID] = [:]
    var lastAskID: UInt32 = 0
    var deviceAsks: [UInt32: (feature: Feature.ID, deadline: Deadline)] = [:]
    /// The last ask id the device accepted in the current registration (they increase, §15.3).
    var deviceLastAskID: UInt32 = 0
    /// The device sent SESSION_END on the current link (it must not REGISTER on it again, SPEC §5.11).
    var deviceEndedOnLink = false

    static let codes = ["s12-345", "", String(repeating: "c", count: 64), String(repeating: "c", count: 65), "é"]
    static let tokens = ["tok", "", String(repeating: "t", count: 256), String(repeating: "t", count: 257)]
    static let names = ["Alice", "", String(repeating: "n", count: 64), String(repeating: "n", count: 65), "Jürgen 🛠"]
    static let texts: [String?] = [nil, "bye", "", String(repeating: "x", count: 256), String(repeating: "x", count: 257)]
    static let askTexts: [String?] = [nil, "may I?", "", String(repeating: "x", count: 257)]
    static let callIDs = ["E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "other", ""]
    static let reasons: [ReasonCode] =
        (0...7).map { ReasonCode(rawValue: $0) } + (0x80...0x90).map { ReasonCode(rawValue: $0) }
        + [ReasonCode(rawValue: 0x42), ReasonCode(rawValue: 0xC3)]
    static let features: [Feature.ID] = [.screenShare, .assistAR, .voip, .remoteControl, Feature.ID(rawValue: 0x0042)]
    /// SPEC §4.3 and §15.2 features, and one undefined id.
    static let features11: [Feature.ID] = [
        .screenShare, .assistAR, .voip, .remoteControl, .fileShare, .chat, .arPointer, .appMessages,
        Feature.ID(rawValue: 0x0042),
    ]
    /// The code rules event 22 chooses from.
    static let codeRuleSets: [FeatureRules] = [
        .codeDefault,
        FeatureRules(default: .allow, rules: [.chat: .confirm, .fileShare: .confirm]),
        FeatureRules(default: .allow, rules: [.remoteControl: .deny, .appMessages: .deny, .chat: .confirm]),
        FeatureRules(default: .confirm),
        FeatureRules(default: .deny, rules: [.screenShare: .allow, .assistAR: .allow]),
        FeatureRules(default: .allow, rules: [.screenShare: .deny]),
        FeatureRules(default: .allow, rules: [.chat: .deny, .appMessages: .confirm, .fileShare: .confirm]),
    ]
    static let chatTexts = ["hi", "", String(repeating: "c", count: 4096), String(repeating: "c", count: 4097), "é🛠"]
    static let contentTypes = ["application/json", "", String(repeating: "t", count: 128), String(repeating: "t", count: 129)]
    /// Body and file sizes around the part size for a 16 KiB peer (16 384 − 512) and the file limit.
    static let bodySizes = [1, 0, 100, 15_872, 15_873, 2, 40_000, 31_745]
    static let fileNames = ["a.txt", "", String(repeating: "f", count: 255), String(repeating: "f", count: 256)]
    static let mediaDescriptors: [[UInt8]?] = [nil, Array("room=1".utf8), [], [UInt8](repeating: 7, count: 4097)]
    /// A time far beyond any clock, where a careless `now + timeout` overflows.
    static let farFuture = Deadline(nanoseconds: .max)
    static let featurePromptTimeout = Duration.seconds(30)

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        var driver = SessionDriver(bytes)
        driver.runAll()
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        input = bytes
        scratch.reserveCapacity(512)
        let hash = inputHash(bytes)
        var capabilities = FeatureSet()
        var rules = FeatureRules.deviceDefault
        for (bit, id) in Self.features11.enumerated() {
            if hash >> UInt64(bit) & 1 == 1 {
                capabilities.insert(Feature(id, version: hash >> UInt64(12 + bit) & 1 == 1 ? 2 : 1))
            }
            switch hash >> UInt64(24 + 2 * bit) & 3 {
            case 1: rules.set(.allow, for: id)
            case 2: rules.set(.deny, for: id)
            default: break
            }
        }
        deviceRules = rules
        device = DeviceSessionMachine(
            capabilities: capabilities, rules: rules, featurePromptTimeout: Self.featurePromptTimeout)
        supporter = Self.newSupporter(.none)
    }

    static func newSupporter(_ extensions: ProtocolExtensions) -> SupporterSessionMachine {
        var machine = SupporterSessionMachine(secretSource: {
            "resume-secret-" + String(repeating: "k", count: 18) + "-"
                + String(secretCounter.add(1, ordering: .relaxed).newValue)
        })
        machine.linkOpened(extensions: extensions, peerMaxFrameSize: 16_384)
        return machine
    }

    mutating func byte() -> UInt8 {
        guard position < input.count else { return 0 }
        defer { position += 1 }
        return input[position]
    }

    func pick<T>(_ list: [T], _ byte: UInt8) -> T { list[Int(byte) % list.count] }

    func fail(_ what: String) -> Never {
        FuzzCommon.fail(
            "\(what)\n  device: \(device.state)\n  supporter: \(supporter.state)\n  extensions: \(linkExtensions)"
                + "\n  at input offset \(position)",
            input: input)
    }

    mutating func runAll() {
        while position < input.count {
            let selector = byte()
            if getenv("SESSION_FUZZ_TRACE") != nil {
                traceLine("event \(selector == 0x01 ? "frame" : String(selector % 25)) device=\(device.state.name) reconnecting=\(device.isReconnecting) granted=\(device.granted) supporter=\(supporter.state.name)")
            }
            if selector == 0x01 {
                frame(headerAt: position - 1)
            } else {
                switch selector % 25 {
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
                case 13: chooseCall()
                case 14: newLink()
                case 15: supporterAsk()
                case 16: deviceAnswerFeature()
                case 17: deviceRevoke()
                case 18: deviceSend()
                case 19: supporterSend()
                case 20: linkLost()
                case 21: deliverInFlight()
                case 22: chooseCodeRules()
                case 23: deviceResume()
                default: supporterRequest11()
                }
            }
            checkStaticInvariants()
        }
    }

    // MARK: invariants on every action list and after every event

    /// Sends encode and are queued for the supporter; returns whether there was a protocol violation.
    /// `expectNone`: the event must give no action.
    mutating func checkDevice(_ actions: [DeviceSessionMachine.Action], expectNone: Bool = false) -> Bool {
        if expectNone && !actions.isEmpty { fail("expected no device action, got \(actions)") }
        var violation = false
        for action in actions {
            switch action {
            case .send(let message):
                checkEncodes(message, from: "device")
                if case .sessionMessage(let sent) = message {
                    checkMessageID(sent, last: &deviceLastSent, side: "device", granted: device.granted)
                }
                if case .sessionEnd = message { deviceEndedOnLink = true }
                if !linkDown { toSupporter.append(message) }
            case .protocolViolation: violation = true
            case .report(.featureRequested(let ask)):
                deviceAsks[ask.askID] = (ask.feature, Self.adding(now, Self.featurePromptTimeout))
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
                switch message {
                case .connectionRequest(let request):
                    if request.requestID < lastRequestID || (request.requestID == lastRequestID && !resuming) {
                        fail("request id \(request.requestID) after \(lastRequestID)")
                    }
                    lastRequestID = request.requestID
                case .featureRequest(let ask):
                    if ask.askID <= lastAskID { fail("ask id \(ask.askID) after \(lastAskID)") }
                    lastAskID = ask.askID
                    supporterAsks[ask.askID] = ask.feature
                    if getenv("SESSION_FUZZ_TRACE") != nil { traceLine("  supporter asks \(ask.askID) for \(ask.feature)") }
                case .sessionMessage(let sent):
                    checkMessageID(sent, last: &supporterLastSent, side: "supporter", granted: supporter.granted)
                case .registerResult(let result) where result.reason == .success:
                    // A new registration: a new channel on both ends (the device made its own at register).
                    supporterLastSent = 0
                    supporterLastReceived = 0
                default: break
                }
                if !linkDown { toDevice.append(message) }
            case .protocolViolation: violation = true
            case .report: break
            case .authorize: fail("an authorize action left undecided: \(action)")
            }
        }
        return violation
    }

    /// SPEC §15.4: a sender's ids go up by exactly 1 (a resume resends unacknowledged ones, at or below the last), and
    /// a message goes out only with its kind's feature granted.
    func checkMessageID(_ message: SessionMessage, last: inout UInt32, side: String, granted: FeatureSet) {
        let isNew = message.messageID == last &+ 1
        if isNew {
            last = message.messageID
        } else if !(resuming && message.messageID <= last && message.messageID > 0) {
            fail("the \(side) sent message id \(message.messageID) after \(last)")
        }
        // A resend after a resume repeats a message sent while its feature was granted (SPEC §15.4, revocation): the
        // receiver judges it by its own grant. Only a new message needs the grant now.
        if isNew && !granted.contains(message.kind.requiredFeature) && !KnownFindings.masked(.sendsUngrantedMessage) {
            fail("the \(side) sent a \(message.kind) message (id \(message.messageID)) without \(message.kind.requiredFeature) granted (\(granted))")
        }
    }

    mutating func checkEncodes(_ message: Message, from side: String) {
        scratch.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try FrameEncoder().encode(message, into: &scratch)
        } catch {
            fail("the \(side) sends \(message), which does not encode: \(error)")
        }
    }

    /// `time` moved by `step`, saturating (what the machines do with `Deadline + Duration`).
    static func adding(_ time: Deadline, _ step: Duration) -> Deadline { time + step }

    mutating func checkStaticInvariants() {
        if let secret = supporter.resumeSecret, issuedSecrets.last != secret {
            issuedSecrets.append(secret)
            if issuedSecrets.count > 4 { issuedSecrets.removeFirst() }
        }
        var deadlines = deviceAsks.values.map(\.deadline)
        if case .requestPending(_, let deadline) = device.state { deadlines.append(deadline) }
        if device.nextDeadline != deadlines.min() {
            fail("device deadline \(String(describing: device.nextDeadline)), expected \(String(describing: deadlines.min()))")
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
        if device.extensions != linkExtensions || supporter.extensions != linkExtensions {
            fail("extensions \(device.extensions) / \(supporter.extensions), link has \(linkExtensions)")
        }
        // SPEC §15.3: grants only in an active session with access control, within the device's capabilities, never
        // a feature a rule denies.
        var deviceActive = false
        if case .active = device.state { deviceActive = true }
        var supporterActive = false
        if case .active = supporter.state { supporterActive = true }
        if !device.granted.isEmpty && (!deviceActive || !linkExtensions.contains(.accessControl)) {
            fail("device grant \(device.granted) outside an active session with access control")
        }
        if !supporter.granted.isEmpty && (!supporterActive || !linkExtensions.contains(.accessControl)) {
            fail("supporter grant \(supporter.granted) outside an active session with access control")
        }
        if !KnownFindings.masked(.deviceTakesNodeGrant) {
            for feature in device.granted
            where !device.capabilities.contains(feature.id) || deviceRules.rule(for: feature.id) == .deny {
                fail("device grant \(device.granted) holds \(feature.id): lacked or denied by the device's rule")
            }
        }
        for feature in supporter.granted {
            if codeRules.rule(for: feature.id) == .deny { fail("supporter grant holds \(feature.id), code-denied") }
            if !supporter.deviceCapabilities.contains(feature.id) && !KnownFindings.masked(.nodeGrantsLackedFeature) {
                fail("supporter grant \(supporter.granted) holds \(feature.id), which the device lacks")
            }
            // Not checked here: the device's own rules. The node cannot know them, and SPEC §15.5's reconciliation of
            // a lost allow grants every requested feature the code allows; the device must not take more than it
            // granted (checked on the device's side above).
        }
        // SPEC §15.4: at most 16 unacknowledged per sender.
        if device.channel.unacknowledged.count > 16 || supporter.channel.unacknowledged.count > 16 {
            fail("more than 16 unacknowledged messages")
        }
        if device.isReconnecting && !linkExtensions.contains(.sessionResume) { fail("device reconnecting without resume") }
        if supporter.isReconnecting && !linkExtensions.contains(.sessionResume) {
            fail("supporter reconnecting without resume")
        }
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

    static func isActive(_ state: DeviceSessionMachine.State) -> Bool {
        if case .active = state { return true }
        return false
    }

    static func isActive(_ state: SupporterSessionMachine.State) -> Bool {
        if case .active = state { return true }
        return false
    }

    /// Forgets what the device's session kept (it went idle): asks shown, the channel's numbering on its next register.
    mutating func deviceSessionEnded() {
        if Self.isIdle(device.state) { deviceAsks = [:] }
    }

    mutating func supporterSessionEnded() {
        if Self.isIdle(supporter.state) { supporterAsks = [:] }
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
            // A REGISTER after the device's own SESSION_END on this link is the device's mistake (SPEC §5.11).
            if deviceEndedOnLink { pristine = false }
            deviceLastSent = 0
            deviceLastReceived = 0
            deviceLastAskID = 0
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
        var pending: ConnectionRequestInfo?
        if case .requestPending(let request, _) = before {
            pendingID = request.requestID
            pending = request
        }
        let id = argument & 1 == 1 ? (pendingID ?? 1) : UInt32(argument)
        var grant: FeatureSet?
        if argument & 4 == 4, let pending { grant = FeatureSet(pending.featuresToConfirm.prefix(1)) }
        let reconnecting = device.isReconnecting
        let actions = device.answer(requestID: id, allow: argument & 2 == 2, grant: grant)
        if id == pendingID {
            if actions.count != (reconnecting ? 0 : 1) { fail("answer to the pending request gave \(actions)") }
            if device.state == before { fail("answer to the pending request kept the state") }
            if case .send(.connectionResponse(let response)) = actions.first, let pending {
                checkResponseGrant(response, pending)
            }
        } else if !actions.isEmpty || device.state != before {
            fail("an answer that does not count acted: \(actions)")
        }
        _ = checkDevice(actions)
    }

    /// SPEC §15.3: an allow grants the request's features the device has and no rule denies, nothing else.
    func checkResponseGrant(_ response: ConnectionResponse, _ request: ConnectionRequestInfo) {
        guard response.decision == .allow else { return }
        guard linkExtensions.contains(.accessControl) else {
            if response.grantedFeatures != nil { fail("granted_features without access control") }
            return
        }
        guard let grant = response.grantedFeatures else { fail("an allow without granted_features") }
        let wanted = request.requestedFeatures.map(\.id) + [request.connectionType.requiredFeature]
        for feature in grant {
            if !wanted.contains(feature.id) || !device.capabilities.contains(feature.id)
                || deviceRules.rule(for: feature.id) == .deny
            {
                fail("the allow grants \(feature.id) (requested \(wanted), capabilities \(device.capabilities))")
            }
            if feature.version != device.capabilities.version(of: feature.id) { fail("grant version of \(feature.id)") }
        }
    }

    mutating func deviceLeave() {
        let wasIdle = Self.isIdle(device.state)
        let actions = device.leave()
        if wasIdle != actions.isEmpty { fail("leave in \(wasIdle ? "idle" : "a joined state") gave \(actions)") }
        if device.isJoined || !Self.isIdle(device.state) || device.voipRunning { fail("still joined after leave") }
        if device.isReconnecting || !device.granted.isEmpty { fail("reconnecting or granted after leave") }
        _ = checkDevice(actions)
        deviceSessionEnded()
    }

    mutating func advanceClock() {
        let step = byte()
        switch step {
        case 0xFF: now = Self.farFuture
        case 0xFE, 0xFD: now = .zero  // the clock's origin (a monotonic clock has no time before it)
        default:
            // Up to 127 s in half-second steps: both default timeouts (60 s, 90 s) are reachable.
            now = now + .milliseconds(Int(step) * 500)
        }
    }

    mutating func deviceTick() {
        advanceClock()
        let before = device.state
        let reconnecting = device.isReconnecting
        let expired = deviceAsks.filter { now >= $0.value.deadline }
        let actions = device.tick(now: now)
        // SPEC §15.3: an ask unanswered by its deadline is refused `request_timed_out` (a FEATURE_ANSWER and a report).
        var answers = 0
        for case .send(.featureAnswer(let answer)) in actions {
            answers += 1
            guard expired[answer.askID] != nil, answer.decision == .refuse, answer.reason == .requestTimedOut else {
                fail("tick answered ask \(answer.askID) with \(answer)")
            }
            deviceAsks[answer.askID] = nil
        }
        if answers != expired.count { fail("tick answered \(answers) of \(expired.count) expired asks: \(actions)") }
        let requestActions = actions.count - 2 * answers
        if case .requestPending(_, let deadline) = before, now >= deadline {
            if requestActions != (reconnecting ? 1 : 2) || device.state != .online { fail("prompt timeout gave \(actions)") }
        } else if requestActions != 0 || device.state != before {
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

    /// The device's link closes (alone): frames in flight are lost; the supporter does not know yet.
    mutating func deviceLinkClosed(reason: ReasonCode) {
        let wasIdle = Self.isIdle(device.state)
        let actions = device.linkClosed(reason: reason, message: "link closed")
        if wasIdle != actions.isEmpty { fail("linkClosed gave \(actions)") }
        if device.isJoined || !Self.isIdle(device.state) || device.voipRunning { fail("still joined after linkClosed") }
        if checkDevice(actions) { fail("linkClosed gave a protocol violation") }
        deviceSessionEnded()
        dropInFlight()
        pristine = false
    }

    mutating func dropInFlight() {
        toDevice.removeAll(keepingCapacity: true)
        toSupporter.removeAll(keepingCapacity: true)
        deviceEndedOnLink = false
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
        request(name: name, type: shape & 1 == 1 ? .assistAR : .screenShare, features: features,
                versionZero: shape & 0x80 != 0, media: nil)
    }

    /// Event 24: a request over every feature, with the code's rules and a media descriptor (SPEC §15.2, §15.3).
    mutating func supporterRequest11() {
        let name = pick(Self.names, byte())
        let shape = byte()
        let media = pick(Self.mediaDescriptors, byte())
        var features = FeatureSet()
        for (bit, id) in Self.features11.dropFirst(2).enumerated() where shape >> UInt8(bit + 1) & 1 == 1 {
            features.insert(Feature(id))
        }
        request(name: name, type: shape & 1 == 1 ? .assistAR : .screenShare, features: features, versionZero: false,
                media: media)
    }

    mutating func request(name: String, type: ConnectionType, features: FeatureSet, versionZero: Bool, media: [UInt8]?) {
        let accessControl = linkExtensions.contains(.accessControl)
        // A feature at version 0 does not encode, unless the code's rules deny it and it is dropped (§15.3 step 1).
        let dropsVersionZero = accessControl && codeRules.rule(for: .remoteControl) == .deny
        var valid = (1...64).contains(name.utf8.count) && (!versionZero || dropsVersionZero)
        if accessControl && codeRules.rule(for: type.requiredFeature) == .deny { valid = false }
        if let media, !(1...4096).contains(media.count) { valid = false }
        let before = supporter.state
        var wasOnline = false
        if case .online = before { wasOnline = true }
        let reconnecting = supporter.isReconnecting
        do {
            let actions = try supporter.requestConnection(
                supporterName: name, type: type, features: features, now: now, codeRules: codeRules,
                mediaDescriptor: media)
            if !wasOnline || !valid || reconnecting {
                fail("request accepted (online: \(wasOnline), valid: \(valid), reconnecting: \(reconnecting))")
            }
            guard case .send(.connectionRequest(let sent))? = actions.first else { fail("request gave \(actions)") }
            // SPEC §15.3 step 1: code-denied features are dropped (and reported), `confirm` ones are listed.
            let denied = features.filter { accessControl && codeRules.rule(for: $0.id) == .deny }
            if actions.count != (denied.isEmpty ? 1 : 2) { fail("request gave \(actions)") }
            for feature in features {
                let dropped = accessControl && codeRules.rule(for: feature.id) == .deny
                if sent.requestedFeatures.contains(feature.id) == dropped { fail("request lists \(sent.requestedFeatures)") }
            }
            if sent.requestedFeatures.count > features.count { fail("request adds features: \(sent.requestedFeatures)") }
            for feature in sent.confirmFeatures ?? [] {
                if !accessControl || codeRules.rule(for: feature.id) != .confirm
                    || !(sent.requestedFeatures.contains(feature.id) || feature.id == type.requiredFeature)
                {
                    fail("confirm_features \(String(describing: sent.confirmFeatures))")
                }
            }
            if sent.confirmFeatures?.isEmpty == true { fail("confirm_features sent empty (SPEC §15.2)") }
            _ = checkSupporter(actions)
        } catch {
            if wasOnline && valid && !reconnecting && lastRequestID < UInt32.max {
                fail("request refused while online: \(error)")
            }
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
            guard case .send(.sessionEnd) = actions.first, Self.isIdle(supporter.state) else {
                fail("end gave \(actions)")
            }
            if !supporter.granted.isEmpty || supporter.isReconnecting { fail("grant or reconnecting after end") }
            _ = checkSupporter(actions)
            supporterSessionEnded()
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
        replaceSupporter()
        dropInFlight()
        pristine = false
    }

    mutating func replaceSupporter() {
        supporter = Self.newSupporter(linkExtensions)
        lastRequestID = 0
        lastAskID = 0
        supporterAsks = [:]
        supporterLastSent = 0
        supporterLastReceived = 0
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

    mutating func chooseCodeRules() {
        let rules = pick(Self.codeRuleSets, byte())
        // The code's rules in effect for a registration stay as they were when it began (the invariants check grants
        // against them); a change reaches the next registration.
        if Self.isIdle(supporter.state) { codeRules = rules }
    }

    // MARK: protocol 1.1 local events

    /// Event 14: both links close; a new link opens with the extensions HELLO / HELLO_ACK put in effect (SPEC §15.1).
    mutating func newLink() {
        let argument = byte()
        var extensions = ProtocolExtensions(rawValue: argument & 7)
        if !extensions.contains(.accessControl) { extensions.remove(.sessionMessages) }  // requires access_control
        let actions = device.linkClosed(reason: .connectionLost, message: "new link")
        if checkDevice(actions) { fail("linkClosed gave a protocol violation") }
        deviceSessionEnded()
        linkExtensions = extensions
        device.linkOpened(extensions: extensions, peerMaxFrameSize: 16_384)
        replaceSupporter()
        dropInFlight()
        decoder = FrameDecoder()
        pristine = true
        linkDown = false
    }

    mutating func supporterAsk() {
        let argument = byte()
        let feature = pick(Self.features11, argument & 15)
        var rules = codeRules
        if argument & 16 == 16, rules.rule(for: feature) == .allow { rules.set(.confirm, for: feature) }
        let text = pick(Self.askTexts, argument >> 5)
        let before = supporter.state
        let grantBefore = supporter.granted
        let valid =
            Self.isActive(before) && linkExtensions.contains(.accessControl) && !supporter.isReconnecting
            && !supporter.granted.contains(feature) && !supporterAsks.values.contains(feature)
            && rules.rule(for: feature) != .deny && text.map { (1...256).contains($0.utf8.count) } ?? true
            && lastAskID < UInt32.max
        do {
            let actions = try supporter.askFeature(feature, text: text, codeRules: rules)
            if !valid { fail("askFeature(\(feature)) accepted") }
            guard actions.count == 1, case .send(.featureRequest(let ask)) = actions[0], ask.feature == feature,
                ask.confirm == (rules.rule(for: feature) == .confirm), ask.text == text
            else { fail("askFeature gave \(actions)") }
            _ = checkSupporter(actions)
        } catch {
            if valid { fail("askFeature(\(feature)) refused: \(error)") }
        }
        if supporter.state != before || supporter.granted != grantBefore { fail("askFeature changed the session") }
    }

    mutating func deviceAnswerFeature() {
        let argument = byte()
        let id = argument & 1 == 1 ? (deviceAsks.keys.min() ?? 1) : UInt32(argument >> 2)
        let grant = argument & 2 == 2
        let shown = deviceAsks[id]
        let counts = shown != nil && Self.isActive(device.state) && !device.isReconnecting
        let actions = device.answerFeature(askID: id, grant: grant)
        deviceAsks[id] = nil
        if !counts {
            if !actions.isEmpty { fail("an answer to ask \(id), not shown, acted: \(actions)") }
            return
        }
        guard let shown, actions.count == 2, case .send(.featureAnswer(let answer)) = actions[0], answer.askID == id
        else { fail("answerFeature gave \(actions)") }
        let granted = grant && device.capabilities.contains(shown.feature)
        if (answer.decision == .grant) != granted || (!granted && answer.reason != .rejectedByUser)
            || device.granted.contains(shown.feature) != granted
        {
            fail("answerFeature(\(grant)) for \(shown.feature) gave \(answer)")
        }
        _ = checkDevice(actions)
    }

    mutating func deviceRevoke() {
        let argument = byte()
        let feature = pick(Self.features11, argument & 15)
        let text = pick(Self.askTexts, argument >> 4)
        let valid =
            Self.isActive(device.state) && linkExtensions.contains(.accessControl) && !device.isReconnecting
            && device.granted.contains(feature) && text.map { (1...256).contains($0.utf8.count) } ?? true
        let before = device.state
        do {
            let actions = try device.revoke(feature, text: text)
            if !valid { fail("revoke(\(feature)) accepted") }
            // SPEC §15.4: queued messages of the revoked kind are withdrawn (reported undelivered) as the grant ends.
            let withdrawalOnly = actions.dropFirst(2).allSatisfy {
                if case .report(.messagesUndelivered) = $0 { true } else { false }
            }
            guard (2...3).contains(actions.count), withdrawalOnly, case .send(.featureRevoke(let revoke)) = actions[0],
                revoke.feature == feature
            else { fail("revoke gave \(actions)") }
            if device.granted.contains(feature) { fail("still granted after revoke") }
            _ = checkDevice(actions)
        } catch {
            if valid { fail("revoke(\(feature)) refused: \(error)") }
        }
        if device.state != before { fail("revoke changed the state") }
    }

    /// One message to send, from an argument byte.
    enum Outgoing {
        case chat(String)
        case application(String, [UInt8])
        case file(String, String?, [UInt8])

        var feature: Feature.ID {
            switch self {
            case .chat: .chat
            case .application: .appMessages
            case .file: .fileShare
            }
        }

        /// Whether SPEC §15.4's limits allow it (for a 16 KiB peer: 15 872-byte parts).
        var valid: Bool {
            switch self {
            case .chat(let text): (1...4096).contains(text.utf8.count)
            case .application(let type, let body): (1...128).contains(type.utf8.count) && (1...15_872).contains(body.count)
            case .file(let name, let type, let bytes):
                (1...255).contains(name.utf8.count) && !bytes.isEmpty
                    && type.map { (1...128).contains($0.utf8.count) } ?? true
            }
        }
    }

    mutating func outgoing() -> Outgoing {
        let argument = byte()
        let size = Int(argument >> 2) & 7
        switch argument & 3 {
        case 0: return .chat(pick(Self.chatTexts, argument >> 2))
        case 1:
            return .application(pick(Self.contentTypes, argument >> 5), [UInt8](repeating: 0x41, count: Self.bodySizes[size]))
        case 2:
            let name = pick(Self.fileNames, argument >> 5)
            let type: String? = argument & 0x80 != 0 ? "text/plain" : nil
            return .file(name, type, [UInt8](repeating: 0x46, count: Self.bodySizes[size]))
        default: return .chat(size & 1 == 0 ? "" : String(repeating: "c", count: 4097))
        }
    }

    mutating func deviceSend() {
        let message = outgoing()
        let allowed =
            Self.isActive(device.state) && linkExtensions.contains(.sessionMessages) && !device.isReconnecting
            && device.granted.contains(message.feature) && message.valid
        let open = 16 - device.channel.unacknowledged.count
        let before = device.state
        do {
            let actions: [DeviceSessionMachine.Action]
            switch message {
            case .chat(let text): actions = try device.sendChat(text)
            case .application(let type, let body):
                actions = try device.send(.application(contentType: type, body: body)).actions
            case .file(let name, let type, let bytes):
                actions = try device.send(.file(name: name, contentType: type, bytes: bytes)).actions
            }
            if !allowed { fail("the device's \(message) was accepted") }
            if actions.count > open { fail("the device sent \(actions.count) with \(open) open in the window") }
            _ = checkDevice(actions)
        } catch {
            // The local queue (64 messages, 4 files) may be full only when the window is.
            let queueMayBeFull = open == 0 || { if case .file = message { return true } else { return false } }()
            if allowed && !queueMayBeFull { fail("the device's \(message) was refused: \(error)") }
        }
        if device.state != before { fail("a send changed the state") }
    }

    mutating func supporterSend() {
        let message = outgoing()
        let allowed =
            Self.isActive(supporter.state) && linkExtensions.contains(.sessionMessages) && !supporter.isReconnecting
            && supporter.granted.contains(message.feature) && message.valid
        let open = 16 - supporter.channel.unacknowledged.count
        let before = supporter.state
        do {
            let actions: [SupporterSessionMachine.Action]
            switch message {
            case .chat(let text): actions = try supporter.sendChat(text)
            case .application(let type, let body):
                actions = try supporter.send(.application(contentType: type, body: body)).actions
            case .file(let name, let type, let bytes):
                actions = try supporter.send(.file(name: name, contentType: type, bytes: bytes)).actions
            }
            if !allowed { fail("the supporter's \(message) was accepted") }
            if actions.count > open { fail("the supporter sent \(actions.count) with \(open) open in the window") }
            _ = checkSupporter(actions)
        } catch {
            let queueMayBeFull = open == 0 || { if case .file = message { return true } else { return false } }()
            if allowed && !queueMayBeFull { fail("the supporter's \(message) was refused: \(error)") }
        }
        if supporter.state != before { fail("a send changed the state") }
    }

    /// Event 20: the link is lost under both ends (EOF, reset; SPEC §15.5). Frames in flight are lost.
    mutating func linkLost() {
        let deviceWasJoined = !Self.isIdle(device.state)
        let deviceActions = device.linkLost(reason: .connectionLost, message: "link lost")
        if checkDevice(deviceActions) { fail("linkLost gave a protocol violation") }
        let supporterActions = supporter.linkLost(reason: .connectionLost, text: nil)
        if checkSupporter(supporterActions) { fail("linkLost gave a protocol violation") }
        // Asks pending at the loss are withdrawn on both sides (SPEC §15.5): an answer that crossed the loss, or one
        // the input replays later, finds no ask at the supporter and grants nothing.
        deviceAsks = [:]
        supporterAsks = [:]
        if device.nextDeadline != nil, case .requestPending = device.state {} else if device.nextDeadline != nil {
            fail("an ask survived the link loss")
        }
        if !linkExtensions.contains(.sessionResume) && (device.isJoined || !Self.isIdle(supporter.state)) {
            fail("a session outlived a link loss without session_resume")
        }
        if deviceWasJoined && !device.isReconnecting && device.isJoined { fail("device joined, not reconnecting") }
        dropInFlight()
        linkDown = device.isReconnecting
        if !device.isReconnecting {
            // Nothing to resume from the device's side: the supporter's registration (if it waits) is another
            // connection's, ended by its grace period; this link's next connection gets a new machine.
            if supporter.isReconnecting {
                let ended = supporter.linkClosed(reason: .connectionLost, text: "grace period over")
                if checkSupporter(ended) { fail("linkClosed gave a protocol violation") }
            }
            replaceSupporter()
            pristine = !device.isJoined
        }
        supporterSessionEnded()
        deviceSessionEnded()
    }

    /// Event 23: the reconnecting device presents RESUME on a new link; the supporter's machine answers (SPEC §15.5).
    mutating func deviceResume() {
        let argument = byte()
        guard device.isReconnecting else {
            if device.resumeMessage() != nil { fail("a RESUME without reconnecting") }
            return
        }
        guard var resume = device.resumeMessage() else { fail("reconnecting without a RESUME") }
        let wrong = argument & 1 == 1
        if wrong { resume.resumeSecret = resume.resumeSecret == "wrong" ? "wrong!" : "wrong" }
        let deviceSecret = device.resumeSecret
        device.linkOpened(extensions: linkExtensions, peerMaxFrameSize: 16_384)
        linkDown = false
        let before = supporter
        let outcome = supporter.resumed(by: resume, extensions: linkExtensions, peerMaxFrameSize: 16_384, now: now)
        if supporter.state != before.state || supporter.resumeSecret != before.resumeSecret
            || supporter.isReconnecting != before.isReconnecting || supporter.granted != before.granted
        {
            fail("resumed(by:) changed the machine it was asked on")
        }
        switch outcome {
        case .accepted(let next, let actions):
            if wrong { fail("a RESUME with a wrong secret was accepted") }
            // SPEC §15.5: the current secret, or the one it replaced (a frame carrying the new one may be lost).
            if before.resumeSecret != deviceSecret && !issuedSecrets.suffix(2).contains(deviceSecret ?? "") {
                fail("a RESUME was accepted with another secret")
            }
            supporter = next
            supporterAsks = [:]  // withdrawn at the loss
            resuming = true
            if checkSupporter(actions) { fail("resume gave a protocol violation") }
            guard case .send(.resumeResult(let result))? = actions.first, result.reason == .success,
                let newSecret = result.resumeSecret, newSecret != deviceSecret
            else { fail("an accepted resume gave \(actions)") }
            let wasPristine = pristine
            deliverInFlight(toSupporter: false, count: Int.max, reconciling: true)
            resuming = false
            if !wasPristine { return }
            // SPEC §15.5: both sides hold the same new secret and compatible states.
            if device.isReconnecting || supporter.isReconnecting { fail("still reconnecting after a resume") }
            if device.resumeSecret == nil || device.resumeSecret != supporter.resumeSecret {
                fail("secrets differ after a resume: \(String(describing: device.resumeSecret)) / \(String(describing: supporter.resumeSecret))")
            }
            switch (device.state, supporter.state) {
            case (.online, .online): break
            case (.requestPending(let d, _), .requestPending(_, let s, _)) where d.requestID == s.requestID: break
            case (.active(let d), .active(_, let s)) where d.requestID == s.requestID: break
            default: fail("incompatible states after a resume")
            }
        case .rejected(let result, let endsRegistration):
            if result.reason != .resumeRejected { fail("a rejected resume says \(result.reason)") }
            if wrong && endsRegistration { fail("a RESUME with a wrong secret ended the registration") }
            if !wrong && before.resumeSecret == deviceSecret && !endsRegistration {
                fail("a RESUME with the right secret was rejected without a state mismatch")
            }
            // The device hears it; its session is over. The old registration ends now or with its grace period; the new
            // connection has a machine of its own.
            toDevice = [.resumeResult(result)]
            deliverInFlight(toSupporter: false, count: Int.max, reconciling: true)
            if device.isJoined || device.isReconnecting { fail("the device kept its session after resume_rejected") }
            let ended = supporter.linkClosed(reason: .connectionLost, text: nil)
            if checkSupporter(ended) { fail("linkClosed gave a protocol violation") }
            replaceSupporter()
            dropInFlight()
            pristine = true
        }
    }

    // MARK: frames

    /// Event 21: frames in flight reach the other end, through an encoder and a decoder.
    mutating func deliverInFlight() {
        let argument = byte()
        let count = Int(argument >> 1) & 7
        deliverInFlight(toSupporter: argument & 1 == 1, count: count == 0 ? Int.max : count, reconciling: false)
    }

    mutating func deliverInFlight(toSupporter: Bool, count: Int, reconciling: Bool) {
        var left = count
        while left > 0 {
            let message: Message
            if toSupporter {
                guard !self.toSupporter.isEmpty else { return }
                message = self.toSupporter.removeFirst()
            } else {
                guard !toDevice.isEmpty else { return }
                message = toDevice.removeFirst()
            }
            left -= 1
            let wire = throughWire(message)
            let wasPristine = pristine
            let violation = toSupporter ? deliverToSupporter(wire) : deliverToDevice(wire)
            if violation && wasPristine && !KnownFindings.masked(.peerFrameViolation) {
                fail("a frame from the peer, \(wire), was a protocol violation at the \(toSupporter ? "supporter" : "device")")
            }
            checkStaticInvariants()
        }
    }

    /// `message` as the peer decodes it.
    mutating func throughWire(_ message: Message) -> Message {
        scratch.removeAll(keepingCapacity: true)
        var wire = FrameDecoder()
        do throws(WireError) {
            try FrameEncoder().encode(message, into: &scratch)
            wire.append(scratch)
            guard let decoded = try wire.nextMessage() else { fail("\(message) did not decode whole") }
            return decoded
        } catch {
            fail("\(message) did not go through the wire: \(error)")
        }
    }

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
            pristine = false
            _ = deliverToDevice(message)
            if case .resume(let resume) = message {
                injectedResume(resume)
            } else {
                _ = deliverToSupporter(message)
            }
            checkStaticInvariants()
        }
    }

    /// A RESUME from the input (SPEC §15.5): on a new connection it goes to the registration's machine (the supporter,
    /// when it waits reconnecting), never to `received`; on a connection where the device registered it is an error.
    mutating func injectedResume(_ resume: Resume) {
        guard linkExtensions.contains(.sessionResume), Self.isIdle(supporter.state) || supporter.isReconnecting else {
            _ = deliverToSupporter(.resume(resume))
            return
        }
        let before = supporter
        let outcome = supporter.resumed(by: resume, extensions: linkExtensions, peerMaxFrameSize: 16_384, now: now)
        if supporter.state != before.state || supporter.resumeSecret != before.resumeSecret {
            fail("resumed(by:) changed the machine it was asked on")
        }
        let rightSecret = before.resumeSecret != nil && before.resumeSecret == resume.resumeSecret
        switch outcome {
        case .accepted(let next, let actions):
            if !rightSecret || !before.isReconnecting { fail("RESUME \(resume) accepted") }
            supporter = next
            linkDown = false
            supporterAsks = [:]
            resuming = true
            if checkSupporter(actions) { fail("resume gave a protocol violation") }
            resuming = false
        case .rejected(let result, let endsRegistration):
            if result.reason != .resumeRejected { fail("a rejected resume says \(result.reason)") }
            if !rightSecret && endsRegistration { fail("a RESUME with a wrong secret ended the registration") }
            if endsRegistration {
                let ended = supporter.linkClosed(reason: .connectionLost, text: nil)
                if checkSupporter(ended) { fail("linkClosed gave a protocol violation") }
                replaceSupporter()
            }
        }
    }

    /// SPEC §8, §15.1, §15.3–§15.5 (and §7 on an open connection): whether `message` is illegal at the device now.
    func deviceIllegal(_ message: Message) -> Bool {
        // SPEC §15.1: a 1.1 frame on a connection without its extension is an error in every state.
        if let needed = message.frameType.requiredExtension, !linkExtensions.contains(needed) { return true }
        switch message {
        case .hello, .helloAck: return true
        case .ping, .pong, .goAway: return false
        default: break
        }
        let state = device.state
        // SPEC §8 (and the idle rows of §15.3, §15.4): in idle every session frame crossed the device's SESSION_END.
        if Self.isIdle(state) {
            if case .resumeResult = message, KnownFindings.masked(.resumeResultInIdle) { return true }
            return false
        }
        switch (state, message) {
        case (.registering, .registerResult): return false
        case (.online, .connectionRequest): return false
        case (.registering, .requestAbort): return true
        case (_, .requestAbort): return false
        case (.awaitingStart(let pending), .sessionStarted(let started)): return pending.requestID != started.requestID
        case (.registering, .sessionEnd): return true
        case (_, .sessionEnd): return false
        case (_, .sessionError): return false
        // §15.3: FEATURE_REQUEST only in active. §15.4: messages only in active; an id that skips is an error, a
        // repeat is acknowledged again; an acknowledgement of nothing the device sent is an error.
        case (.active, .featureRequest(let ask)):
            // §15.3: ask ids increase per registration; one ask per feature at a time; at most 8 wait.
            return ask.askID <= deviceLastAskID || deviceAsks.values.contains { $0.feature == ask.feature }
                || deviceAsks.count >= 8
        case (.active, .sessionMessage(let incoming)): return UInt64(incoming.messageID) > UInt64(deviceLastReceived) + 1
        case (.active, .messageAck(let ack)): return ack.messageID == 0 || ack.messageID > deviceLastSent
        // §15.5: RESUME_RESULT answers the RESUME of a reconnecting device.
        case (_, .resumeResult): return !device.isReconnecting
        default: return true
        }
    }

    /// SPEC §9 (with errata 1.0.1 no. 9: REGISTER after the device's own SESSION_END is a protocol error), §15.1,
    /// §15.3–§15.5: whether `message` is illegal at the supporter now.
    func supporterIllegal(_ message: Message) -> Bool {
        if let needed = message.frameType.requiredExtension, !linkExtensions.contains(needed) { return true }
        let state = supporter.state
        switch message {
        case .hello, .helloAck: return true
        case .ping, .pong, .goAway: return false
        case .register: return !Self.isIdle(state) || supporter.deviceSentSessionEnd
        case .registerResult, .connectionRequest, .requestAbort, .sessionStarted: return true
        case .connectionResponse, .sessionEnd, .sessionError: return false
        case .voipState: return !Self.isIdle(state) && !Self.isActive(state)
        // §15.3: only a node sends FEATURE_REQUEST and FEATURE_WITHDRAW; a FEATURE_ANSWER for no pending ask and a
        // FEATURE_REVOKE outside active are discarded.
        case .featureRequest, .featureWithdraw: return true
        case .featureAnswer, .featureRevoke: return false
        // §15.4
        case .sessionMessage(let incoming):
            if Self.isIdle(state) { return false }
            return !Self.isActive(state) || UInt64(incoming.messageID) > UInt64(supporterLastReceived) + 1
        case .messageAck(let ack):
            if Self.isIdle(state) { return false }
            return !Self.isActive(state) || ack.messageID == 0 || ack.messageID > supporterLastSent
        // §15.5: RESUME only instead of REGISTER on a new connection (the driver hands those to resumed(by:));
        // RESUME_RESULT only a node sends.
        case .resume, .resumeResult: return true
        }
    }

    /// Returns whether the device saw a protocol violation (its link is then closed).
    mutating func deliverToDevice(_ message: Message) -> Bool {
        if getenv("SESSION_FUZZ_TRACE") != nil { traceLine("  to device: \(message)".prefix(200), "granted:", device.granted) }
        // A RESUME_RESULT `success` for a reconnecting device (also one from the input) makes it resend (§15.5).
        let wasResuming = resuming
        if case .resumeResult(let result) = message, result.reason == .success, device.isReconnecting { resuming = true }
        defer { resuming = wasResuming }
        let before = device.state
        let illegal = deviceIllegal(message)
        let grantBefore = device.granted
        let actions = device.received(message, now: now, call: call)
        let violation = checkDevice(actions)
        if illegal {
            guard violation, actions.count == 1, device.state == before else {
                fail("device: \(message) is illegal in \(before.name), got \(actions)")
            }
            deviceLinkClosed(reason: .protocolError)  // the link closes; the app may connect and register again
            return true
        }
        if violation { fail("device: protocol violation for \(message), legal in \(before.name): \(actions)") }
        if Self.isIdle(before) && (!actions.isEmpty || !Self.isIdle(device.state)) {
            fail("device in idle acted on \(message)")
        }
        switch message {
        case .ping:
            if !actions.isEmpty || device.state != before { fail("device acted on PING") }
        case .sessionMessage(let incoming) where Self.isActive(before):
            if incoming.messageID == deviceLastReceived &+ 1 { deviceLastReceived = incoming.messageID }
            guard case .send(.messageAck(let ack))? = actions.last, ack.messageID == incoming.messageID else {
                fail("SESSION_MESSAGE \(incoming.messageID) not acknowledged: \(actions)")
            }
        case .featureRequest(let ask) where Self.isActive(before):
            deviceLastAskID = ask.askID
            checkFeatureAnswer(ask, actions, grantBefore: grantBefore)
        default: break
        }
        deviceSessionEnded()
        return false
    }

    /// SPEC §15.3: the device answers an ask at once by rule (lacks → `unsupported_feature`, deny → `feature_denied`,
    /// allow → grant) or prompts its user (confirm).
    func checkFeatureAnswer(_ ask: FeatureRequest, _ actions: [DeviceSessionMachine.Action], grantBefore: FeatureSet) {
        let answer: FeatureAnswer? = {
            if case .send(.featureAnswer(let answer))? = actions.first { return answer }
            return nil
        }()
        if let answer, answer.askID != ask.askID { fail("FEATURE_REQUEST \(ask.askID) answered as \(answer.askID)") }
        let rule = deviceRules.rule(for: ask.feature).stricter(ask.confirm ? .confirm : .allow)
        if !device.capabilities.contains(ask.feature) {
            guard let answer, answer.decision == .refuse, answer.reason == .unsupportedFeature else {
                fail("an ask for \(ask.feature), which the device lacks, gave \(actions)")
            }
        } else if grantBefore.contains(ask.feature) {
            return  // the node never asks for a granted feature (§15.3); what the device makes of it is its own
        } else if rule == .deny {
            guard let answer, answer.decision == .refuse, answer.reason == .featureDenied else {
                fail("an ask for \(ask.feature), denied by rule, gave \(actions)")
            }
        } else if rule == .allow {
            guard let answer, answer.decision == .grant, device.granted.contains(ask.feature) else {
                fail("an ask for \(ask.feature), allowed by rule, gave \(actions)")
            }
        } else if answer != nil || actions.count != 1 {
            fail("an ask for \(ask.feature) to confirm gave \(actions)")
        }
    }

    /// Returns whether the supporter saw a protocol violation (its connection is then replaced).
    mutating func deliverToSupporter(_ message: Message) -> Bool {
        if getenv("SESSION_FUZZ_TRACE") != nil {
            traceLine("  to supporter: \(message)".prefix(200), "asks:", supporterAsks, "granted:", supporter.granted)
        }
        let before = supporter.state
        let ended = supporter.deviceSentSessionEnd
        let illegal = supporterIllegal(message)
        let grantBefore = supporter.granted
        var asked = 0
        let decision = decision
        // The machine asks (an `authorize` action) and the driver answers at once, as the node's glue does.
        let actions = supporter.received(message, now: now).flatMap { action -> [SupporterSessionMachine.Action] in
            guard case .authorize = action else { return [action] }
            asked += 1
            return supporter.registrationDecided(decision)
        }
        var isRegisterInIdle = false
        if case .register = message, Self.isIdle(before), !ended { isRegisterInIdle = true }
        if asked != (isRegisterInIdle && !illegal ? 1 : 0) { fail("authorize asked \(asked) times for \(message)") }
        let violation = checkSupporter(actions)
        if illegal {
            guard violation, actions.count == 1, supporter.state == before else {
                fail("supporter: \(message) is illegal in \(before.name), got \(actions)")
            }
            supporterLinkClosed(reason: .protocolError)
            return true
        }
        if violation { fail("supporter: protocol violation for \(message), legal in \(before.name): \(actions)") }
        switch message {
        case .register(let register) where isRegisterInIdle:
            guard case .send(.registerResult(let result)) = actions.first else { fail("REGISTER unanswered: \(actions)") }
            switch decision {
            case .accept:
                if result.reason != .success || supporter.state != .online(code: register.sessionCode) {
                    fail("accepted REGISTER gave \(actions)")
                }
                let secret = result.resumeSecret
                if linkExtensions.contains(.sessionResume) != (secret != nil) || secret != supporter.resumeSecret {
                    fail("REGISTER_RESULT resume_secret \(String(describing: secret)) with \(linkExtensions)")
                }
            case .refuse:
                if result.reason == .success || !Self.isIdle(supporter.state) { fail("refused REGISTER gave \(actions)") }
            }
        case .connectionResponse(let response):
            var resolves = false
            if case .requestPending(_, let request, _) = before, request.requestID == response.requestID {
                resolves = true
            }
            if !resolves && (!actions.isEmpty || supporter.state != before) {
                fail("a CONNECTION_RESPONSE for no pending request acted: \(actions)")
            }
            if resolves, case .send(.sessionStarted(let started))? = actions.first {
                // SPEC §15.2: SESSION_STARTED carries the grant (with access control) and a new secret (with resume).
                if linkExtensions.contains(.accessControl) != (started.grantedFeatures != nil) {
                    fail("SESSION_STARTED granted_features with \(linkExtensions)")
                }
                if linkExtensions.contains(.sessionResume) != (started.resumeSecret != nil)
                    || started.resumeSecret != supporter.resumeSecret
                {
                    fail("SESSION_STARTED resume_secret with \(linkExtensions)")
                }
            }
        case .featureAnswer(let answer):
            let feature = supporterAsks.removeValue(forKey: answer.askID)
            if feature == nil || !Self.isActive(before) {
                if !actions.isEmpty || supporter.granted != grantBefore {
                    fail("a FEATURE_ANSWER for no pending ask acted: \(actions)")
                }
            } else if let feature,
                (answer.decision == .grant && supporter.deviceCapabilities.contains(feature))
                    != supporter.granted.contains(feature)
            {
                // SPEC §15.3: a grant of a capability the device never declared grants nothing.
                fail("FEATURE_ANSWER \(answer) for \(feature): grant now \(supporter.granted)")
            }
        case .featureRevoke(let revoke):
            if supporter.granted.contains(revoke.feature) { fail("\(revoke.feature) still granted after FEATURE_REVOKE") }
            if !Self.isActive(before) && !actions.isEmpty { fail("a FEATURE_REVOKE outside active acted") }
        case .sessionMessage(let incoming) where Self.isActive(before):
            if incoming.messageID == supporterLastReceived &+ 1 { supporterLastReceived = incoming.messageID }
            guard case .send(.messageAck(let ack))? = actions.last, ack.messageID == incoming.messageID else {
                fail("SESSION_MESSAGE \(incoming.messageID) not acknowledged: \(actions)")
            }
        default: break
        }
        if Self.isIdle(before) && !isRegisterInIdle && (!actions.isEmpty || supporter.state != before) {
            fail("supporter in idle acted on \(message)")
        }
        supporterSessionEnded()
        return false
    }
}

/// Product findings this target traps on while they are open, each masked by name in `SESSION_FUZZ_MASK`
/// (comma-separated) so that a campaign can go on past them. Unset (the default, and `run.sh --regress`), every check
/// is on. See FuzzTesting/README.md, "Findings".
enum KnownFindings: String {
    /// The device takes SESSION_STARTED `granted_features` as they come (features it lacks or its rule denies).
    case deviceTakesNodeGrant = "device-takes-node-grant"
    /// The supporter adds a FEATURE_ANSWER grant for a feature the device's REGISTER did not list.
    case nodeGrantsLackedFeature = "node-grants-lacked-feature"
    /// A queued message leaves after its feature was revoked.
    case sendsUngrantedMessage = "sends-ungranted-message"
    /// A frame from a conformant peer is a protocol violation.
    case peerFrameViolation = "peer-frame-violation"
    /// RESUME_RESULT at an idle device is a protocol violation, not a discard.
    case resumeResultInIdle = "resume-result-in-idle"

    private static let maskedNames: [String] = {
        guard let value = getenv("SESSION_FUZZ_MASK") else { return [] }
        return String(cString: value).split(separator: ",").map(String.init)
    }()
    private static let maskedFlags: [Bool] = {
        let all: [KnownFindings] = [
            .deviceTakesNodeGrant, .nodeGrantsLackedFeature, .sendsUngrantedMessage, .peerFrameViolation,
            .resumeResultInIdle,
        ]
        return all.map { maskedNames.contains($0.rawValue) }
    }()

    static func masked(_ finding: KnownFindings) -> Bool {
        switch finding {
        case .deviceTakesNodeGrant: maskedFlags[0]
        case .nodeGrantsLackedFeature: maskedFlags[1]
        case .sendsUngrantedMessage: maskedFlags[2]
        case .peerFrameViolation: maskedFlags[3]
        case .resumeResultInIdle: maskedFlags[4]
        }
    }
}

/// One line on stderr, unbuffered (a trap must not swallow it): the `SESSION_FUZZ_TRACE` output.
func traceLine(_ items: Any...) {
    let text = items.map { "\($0)" }.joined(separator: " ") + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}
