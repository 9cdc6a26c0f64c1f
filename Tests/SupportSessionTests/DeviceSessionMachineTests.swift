// The device session state machine against SPEC §8: every state × every message type, every local event in every
// state, feature mismatches, and whole flows.
import Testing

@testable import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

/// The device's states, reached through public events only. The pending request is id 7 from "Alice" (screen share,
/// wants voip), received at `t0`; the device has screen_share and voip at version 1, and no call runs.
enum DeviceFixture: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case idle, registering, online, requestPending, awaitingStart, active

    var testDescription: String { rawValue }

    static let pendingID: UInt32 = 7
    static let capabilities: FeatureSet = [Feature(.screenShare), Feature(.voip)]
    static let request = ConnectionRequest(
        requestID: pendingID, supporterName: "Alice", connectionType: .screenShare, requestedFeatures: [Feature(.voip)])
    static let info = ConnectionRequestInfo(
        requestID: pendingID, supporterName: "Alice", connectionType: .screenShare, requestedFeatures: [Feature(.voip)])
    static let deadline = t0 + .seconds(60)

    func make() -> DeviceSessionMachine {
        var machine = DeviceSessionMachine(capabilities: Self.capabilities)
        if self == .idle { return machine }
        _ = try! machine.register(code: "s12-345", token: "tok")
        if self == .registering { return machine }
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        if self == .online { return machine }
        _ = machine.received(.connectionRequest(Self.request), now: t0, call: .idle)
        if self == .requestPending { return machine }
        _ = machine.answer(requestID: Self.pendingID, allow: true)
        if self == .awaitingStart { return machine }
        _ = machine.received(.sessionStarted(SessionStarted(requestID: Self.pendingID)), now: t0, call: .idle)
        return machine
    }

    var state: DeviceSessionMachine.State {
        switch self {
        case .idle: .idle
        case .registering: .registering
        case .online: .online
        case .requestPending: .requestPending(Self.info, deadline: Self.deadline)
        case .awaitingStart: .awaitingStart(Self.info)
        case .active: .active(Self.info)
        }
    }
}

/// What SPEC §8 (and §7 for connection-level frames on an open connection) says a frame gets.
enum DeviceExpectation: Equatable {
    /// Same state, no action.
    case discard
    /// Exactly one `.protocolViolation`, state unchanged (the link closes).
    case violation
    case next(DeviceSessionMachine.State, [DeviceSessionMachine.Action])
}

@Suite struct DeviceSessionMachineTests {
    typealias Action = DeviceSessionMachine.Action

    // MARK: the frame table, every state × every message type

    /// SPEC §8 "Frames received", written out independently of the implementation.
    static func expectation(_ fixture: DeviceFixture, _ sample: Sample) -> DeviceExpectation {
        let id = DeviceFixture.pendingID
        switch sample {
        case .hello, .helloAck: return .violation  // §7: open | HELLO or HELLO_ACK | closed
        case .ping, .pong, .goAway: return .discard  // §7's business; no session action
        default: break
        }
        if fixture == .idle { return .discard }  // idle | any session frame | discard
        switch (fixture, sample) {
        case (.registering, .registerResultSuccess):
            return .next(.online, [.report(.sessionCodeOnline(codeType: .remoteSupport, waitingMessage: nil))])
        case (.registering, .registerResultRefused):
            return .next(
                .idle,
                [
                    .report(
                        .error(
                            DeviceSessionFailure(
                                reason: .rateLimited, message: "too many failed attempts; retry in 4000 ms: slow down",
                                retryAfterMilliseconds: 4000)))
                ])
        case (.online, .connectionRequest):
            let info = ConnectionRequestInfo(
                requestID: id + 1, supporterName: "Bob", connectionType: .screenShare,
                requestedFeatures: [Feature(.screenShare)])
            return .next(.requestPending(info, deadline: t0 + .seconds(60)), [.report(.connectionRequest(info))])
        case (.online, .requestAbortPending), (.online, .requestAbortOtherID):
            return .discard  // crossed the device's answer
        case (.requestPending, .requestAbortPending), (.awaitingStart, .requestAbortPending):
            return .next(.online, [.report(.connectionRequestAborted(requestID: id, reason: .abortedBySupporter))])
        case (.requestPending, .requestAbortOtherID), (.awaitingStart, .requestAbortOtherID):
            return .discard
        case (.awaitingStart, .sessionStartedPending):
            return .next(
                .active(DeviceFixture.info),
                [
                    .report(.supporterConnected(supporterName: "Alice", connectionType: .screenShare, details: SessionDetails())),
                    .startVoIP,
                    .send(.voipState(VoIPState(state: .started, text: "VoIP started"))),
                    .report(.voipStateChanged(.started)),
                ])
        case (.active, .requestAbortPending), (.active, .requestAbortOtherID):
            return .discard
        case (.online, .sessionEnd), (.requestPending, .sessionEnd), (.awaitingStart, .sessionEnd):
            return .next(.idle, [.report(.supporterDisconnected(reason: .endedBySupporter, text: "bye"))])
        case (.active, .sessionEnd):
            return .next(.idle, [.stopVoIP, .report(.supporterDisconnected(reason: .endedBySupporter, text: "bye"))])
        case (_, .sessionError):
            return .next(
                fixture.state, [.report(.sessionError(reason: .unsupportedFeature, feature: .assistAR, text: "no AR"))])
        default:
            // REGISTER_RESULT outside registering, CONNECTION_REQUEST outside online, SESSION_STARTED outside
            // awaiting_start or with another id, SESSION_END in registering, and what only a device sends.
            return .violation
        }
    }

    @Test(arguments: DeviceFixture.allCases, Sample.allCases)
    func frameGetsWhatTheSpecTableSays(fixture: DeviceFixture, sample: Sample) {
        var machine = fixture.make()
        #expect(machine.state == fixture.state)
        let actions = machine.received(sample.message(pendingID: DeviceFixture.pendingID), now: t0, call: .idle)
        switch Self.expectation(fixture, sample) {
        case .discard:
            #expect(actions.isEmpty)
            #expect(machine.state == fixture.state)
        case .violation:
            #expect(isSingleViolation(actions) { $0.isProtocolViolation }, "\(actions)")
            #expect(machine.state == fixture.state)
        case .next(let state, let expected):
            #expect(actions == expected)
            #expect(machine.state == state)
        }
    }

    @Test func sessionEndWithAnErrorReasonIsReportedAsAFailure() {
        var machine = DeviceFixture.online.make()
        let actions = machine.received(
            .sessionEnd(SessionEnd(reason: .sessionCodeClosed)), now: t0, call: .idle)
        #expect(actions == [.report(.error(DeviceSessionFailure(reason: .sessionCodeClosed, message: "the session code was closed")))])
        #expect(machine.state == .idle)
        #expect(!machine.isJoined)
    }

    @Test func supporterEndingAnActiveSessionStopsVoIPWithoutSendingVoIPState() {
        var machine = DeviceFixture.active.make()
        #expect(machine.voipRunning)
        let actions = machine.received(.sessionEnd(SessionEnd(reason: .endedBySupporter)), now: t0, call: .idle)
        #expect(actions == [.stopVoIP, .report(.supporterDisconnected(reason: .endedBySupporter, text: nil))])
        #expect(!machine.voipRunning)
    }

    // MARK: local events in every state

    @Test(arguments: DeviceFixture.allCases)
    func registerIsAcceptedOnlyWhenIdle(fixture: DeviceFixture) {
        var machine = fixture.make()
        if fixture == .idle {
            let actions = try? machine.register(code: "c", token: "t")
            #expect(
                actions == [.send(.register(Register(sessionCode: "c", apiToken: "t", capabilities: DeviceFixture.capabilities)))])
            #expect(machine.state == .registering)
            #expect(machine.isJoined)
        } else {
            #expect(throws: DeviceSessionMachine.Refusal.self) { try machine.register(code: "c", token: "t") }
            #expect(machine.state == fixture.state)
        }
    }

    @Test func registeringTwiceIsRefused() throws {
        var machine = DeviceSessionMachine(capabilities: [])
        _ = try machine.register(code: "a", token: "t")
        #expect(throws: DeviceSessionMachine.Refusal.self) { try machine.register(code: "b", token: "t") }
        #expect(machine.state == .registering)
    }

    @Test(arguments: [
        ("", "tok"), (String(repeating: "c", count: 65), "tok"), ("code", ""), ("code", String(repeating: "t", count: 257)),
    ])
    func registerWithAnUnencodableCodeOrTokenIsRefused(code: String, token: String) {
        var machine = DeviceSessionMachine(capabilities: [])
        #expect(throws: DeviceSessionMachine.Refusal.self) { try machine.register(code: code, token: token) }
        #expect(machine.state == .idle)
    }

    @Test func registerWithACapabilityOfVersionZeroIsRefused() {
        var machine = DeviceSessionMachine(capabilities: [Feature(.voip, version: 0)])
        #expect(throws: DeviceSessionMachine.Refusal.self) { try machine.register(code: "c", token: "t") }
    }

    @Test(arguments: DeviceFixture.allCases, [true, false])
    func answerActsOnlyOnThePendingRequest(fixture: DeviceFixture, allow: Bool) {
        var machine = fixture.make()
        let actions = machine.answer(requestID: DeviceFixture.pendingID, allow: allow)
        guard fixture == .requestPending else {
            #expect(actions.isEmpty)
            #expect(machine.state == fixture.state)
            return
        }
        if allow {
            #expect(actions == [.send(.connectionResponse(ConnectionResponse(requestID: 7, decision: .allow, reason: .success)))])
            #expect(machine.state == .awaitingStart(DeviceFixture.info))
        } else {
            #expect(
                actions == [
                    .send(.connectionResponse(ConnectionResponse(requestID: 7, decision: .reject, reason: .rejectedByUser)))
                ])
            #expect(machine.state == .online)
        }
        #expect(machine.nextDeadline == nil)
    }

    @Test(arguments: [true, false])
    func answerForAnotherRequestIDIsIgnored(allow: Bool) {
        var machine = DeviceFixture.requestPending.make()
        #expect(machine.answer(requestID: 8, allow: allow).isEmpty)
        #expect(machine.state == DeviceFixture.requestPending.state)
    }

    @Test(arguments: [true, false], [true, false])
    func secondAnswerIsIgnored(first: Bool, second: Bool) {
        var machine = DeviceFixture.requestPending.make()
        _ = machine.answer(requestID: 7, allow: first)
        let state = machine.state
        #expect(machine.answer(requestID: 7, allow: second).isEmpty)
        #expect(machine.state == state)
    }

    @Test(arguments: [true, false])
    func rejectsAnswerAfterAbort(allow: Bool) {
        var machine = DeviceFixture.requestPending.make()
        _ = machine.received(.requestAbort(RequestAbort(requestID: 7)), now: t0, call: .idle)
        #expect(machine.answer(requestID: 7, allow: allow).isEmpty)
        #expect(machine.state == .online)
    }

    @Test(arguments: [true, false])
    func rejectsAnswerAfterPromptTimeout(allow: Bool) {
        var machine = DeviceFixture.requestPending.make()
        _ = machine.tick(now: DeviceFixture.deadline)
        #expect(machine.answer(requestID: 7, allow: allow).isEmpty)
        #expect(machine.state == .online)
    }

    @Test func promptTimesOutExactlyAtTheDeadlineAndNotBefore() {
        var machine = DeviceFixture.requestPending.make()
        #expect(machine.nextDeadline == DeviceFixture.deadline)
        #expect(machine.tick(now: DeviceFixture.deadline - .nanoseconds(1)).isEmpty)
        #expect(machine.state == DeviceFixture.requestPending.state)
        let actions = machine.tick(now: DeviceFixture.deadline)
        #expect(
            actions == [
                .send(.connectionResponse(ConnectionResponse(requestID: 7, decision: .reject, reason: .requestTimedOut))),
                .report(.connectionRequestTimedOut(requestID: 7)),
            ])
        #expect(machine.state == .online)
        #expect(machine.nextDeadline == nil)
        #expect(machine.tick(now: DeviceFixture.deadline + .seconds(1000)).isEmpty)
    }

    @Test func promptTimeoutIsConfigurable() {
        var machine = DeviceSessionMachine(capabilities: DeviceFixture.capabilities, promptTimeout: .seconds(5))
        _ = try? machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: .zero, call: .idle)
        _ = machine.received(.connectionRequest(DeviceFixture.request), now: .seconds(100), call: .idle)
        #expect(machine.nextDeadline == .seconds(105))
    }

    @Test(arguments: DeviceFixture.allCases)
    func promptTimerOutsideRequestPendingDoesNothing(fixture: DeviceFixture) {
        guard fixture != .requestPending else { return }
        var machine = fixture.make()
        #expect(machine.nextDeadline == nil)
        #expect(machine.tick(now: .seconds(1_000_000)).isEmpty)
        #expect(machine.state == fixture.state)
    }

    @Test(arguments: DeviceFixture.allCases)
    func leaveEndsEveryJoinedState(fixture: DeviceFixture) {
        var machine = fixture.make()
        let actions = machine.leave()
        switch fixture {
        case .idle:
            #expect(actions.isEmpty)
        case .active:
            #expect(
                actions == [
                    .send(.sessionEnd(SessionEnd(reason: .endedByDevice))), .stopVoIP,
                    .report(.supporterDisconnected(reason: .endedByDevice, text: nil)),
                ])
        default:
            #expect(
                actions == [
                    .send(.sessionEnd(SessionEnd(reason: .endedByDevice))),
                    .report(.supporterDisconnected(reason: .endedByDevice, text: nil)),
                ])
        }
        #expect(machine.state == .idle)
        #expect(!machine.isJoined)
        #expect(!machine.voipRunning)
        #expect(machine.nextDeadline == nil)
    }

    @Test(arguments: DeviceFixture.allCases)
    func linkClosedEndsEveryJoinedState(fixture: DeviceFixture) {
        var machine = fixture.make()
        let actions = machine.linkClosed(reason: .connectionLost, message: "gone")
        switch fixture {
        case .idle:
            #expect(actions.isEmpty)
        case .active:
            #expect(actions == [.stopVoIP, .report(.supporterDisconnected(reason: .connectionLost, text: "gone"))])
        default:
            #expect(actions == [.report(.error(DeviceSessionFailure(reason: .connectionLost, message: "gone")))])
        }
        #expect(machine.state == .idle)
        #expect(!machine.isJoined)
        #expect(!machine.voipRunning)
    }

    @Test(arguments: DeviceFixture.allCases)
    func framesAfterLeaveAreDiscarded(fixture: DeviceFixture) {
        var machine = fixture.make()
        _ = machine.leave()
        for sample in Sample.allCases where sample != .hello && sample != .helloAck {
            #expect(machine.received(sample.message(pendingID: 7), now: t0, call: .idle).isEmpty)
        }
        #expect(machine.state == .idle)
    }

    @Test func deviceCanRegisterAgainAfterLeaving() throws {
        var machine = DeviceFixture.active.make()
        _ = machine.leave()
        _ = try machine.register(code: "again", token: "t")
        #expect(machine.state == .registering)
    }

    // MARK: feature mismatches

    struct MismatchCase: Sendable, CustomTestStringConvertible {
        var name: String
        var capabilities: FeatureSet
        var type: ConnectionType
        var requested: FeatureSet
        var errors: [(ReasonCode, Feature.ID)]
        var testDescription: String { name }
    }

    static let mismatchCases: [MismatchCase] = [
        MismatchCase(
            name: "everything present", capabilities: [Feature(.screenShare), Feature(.voip)], type: .screenShare,
            requested: [Feature(.voip)], errors: []),
        MismatchCase(
            name: "missing requested feature", capabilities: [Feature(.screenShare)], type: .screenShare,
            requested: [Feature(.voip)], errors: [(.unsupportedFeature, .voip)]),
        MismatchCase(
            name: "version mismatch", capabilities: [Feature(.screenShare), Feature(.voip, version: 2)],
            type: .screenShare, requested: [Feature(.voip)], errors: [(.featureVersionMismatch, .voip)]),
        MismatchCase(
            name: "connection type needs assist_ar", capabilities: [Feature(.screenShare)], type: .assistAR,
            requested: [], errors: [(.unsupportedFeature, .assistAR)]),
        MismatchCase(
            name: "connection type needs screen_share", capabilities: [Feature(.voip)], type: .screenShare,
            requested: [], errors: [(.unsupportedFeature, .screenShare)]),
        MismatchCase(
            name: "implied feature at another version", capabilities: [Feature(.assistAR, version: 3)],
            type: .assistAR, requested: [], errors: [(.featureVersionMismatch, .assistAR)]),
        MismatchCase(
            name: "implied feature requested explicitly at the device's version",
            capabilities: [Feature(.assistAR, version: 3)], type: .assistAR, requested: [Feature(.assistAR, version: 3)],
            errors: []),
        MismatchCase(
            name: "several, in feature order", capabilities: [Feature(.remoteControl, version: 2)], type: .screenShare,
            requested: [Feature(.voip), Feature(.remoteControl), Feature(.init(rawValue: 0x0042))],
            errors: [
                (.unsupportedFeature, .screenShare), (.unsupportedFeature, .voip),
                (.featureVersionMismatch, .remoteControl), (.unsupportedFeature, .init(rawValue: 0x0042)),
            ]),
    ]

    @Test(arguments: mismatchCases)
    func connectionRequestSendsASessionErrorPerFeatureMismatch(testCase: MismatchCase) throws {
        var machine = DeviceSessionMachine(capabilities: testCase.capabilities)
        _ = try machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        let request = ConnectionRequest(
            requestID: 3, supporterName: "Eve", connectionType: testCase.type, requestedFeatures: testCase.requested)
        let actions = machine.received(.connectionRequest(request), now: t0, call: .idle)
        let info = ConnectionRequestInfo(
            requestID: 3, supporterName: "Eve", connectionType: testCase.type, requestedFeatures: testCase.requested)
        #expect(machine.state == .requestPending(info, deadline: t0 + .seconds(60)))
        #expect(actions.first == .report(.connectionRequest(info)))
        // Each mismatch is sent, then reported locally with the same reason, feature and text.
        let rest = Array(actions.dropFirst())
        #expect(rest.count == testCase.errors.count * 2)
        for (index, (reason, feature)) in testCase.errors.enumerated() where rest.count > index * 2 + 1 {
            guard case .send(.sessionError(let error)) = rest[index * 2] else {
                Issue.record("expected a SESSION_ERROR send, got \(rest[index * 2])")
                continue
            }
            #expect(error.reason == reason)
            #expect(error.feature == feature)
            #expect(error.text != nil)
            #expect(rest[index * 2 + 1] == .report(.sessionError(reason: reason, feature: feature, text: error.text)))
            #expect(Message.sessionError(error).encodesWithinDefaultLimit)
        }
    }

    // MARK: VoIP at session start and on hand-over changes

    @Test func clearingTheHandOverWhileVoIPRunsStopsItAndTellsTheSupporter() {
        var machine = DeviceFixture.awaitingStart.make()
        _ = machine.setCallID("ABCD-1234")
        let started = machine.received(
            .sessionStarted(SessionStarted(requestID: 7)), now: t0,
            call: SystemCallStatus(isCallRunning: true, runningCallID: "abcd-1234"))
        #expect(started.contains(.startVoIP))
        #expect(machine.voipRunning)
        let actions = machine.clearCallID()
        #expect(actions == [.stopVoIP, .send(.voipState(VoIPState(state: .ended))), .report(.voipStateChanged(.ended))])
        #expect(!machine.voipRunning)
        #expect(machine.handedOverCallID == nil)
        #expect(machine.clearCallID().isEmpty)  // only once
        #expect(machine.state == .active(DeviceFixture.info))
    }

    @Test(arguments: DeviceFixture.allCases)
    func clearingTheHandOverWithoutRunningVoIPSendsNothing(fixture: DeviceFixture) {
        guard fixture != .active else { return }
        var machine = fixture.make()
        #expect(machine.setCallID("x").isEmpty)
        #expect(machine.clearCallID().isEmpty)
        #expect(machine.state == fixture.state)
    }

    @Test func voipDecisionAtSessionStartUsesTheCallObserverReport() {
        var machine = DeviceFixture.awaitingStart.make()
        let actions = machine.received(
            .sessionStarted(SessionStarted(requestID: 7)), now: t0,
            call: SystemCallStatus(isCallRunning: true, runningCallID: "someone-else"))
        #expect(!actions.contains(.startVoIP))
        #expect(actions.contains(.report(.voipStateChanged(.notStartedOtherCallActive))))
        #expect(!machine.voipRunning)
        #expect(machine.clearCallID().isEmpty)
    }

    @Test func voipIsUnsupportedWhenTheSupporterDidNotAskForIt() throws {
        var machine = DeviceSessionMachine(capabilities: DeviceFixture.capabilities)
        _ = try machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        _ = machine.received(
            .connectionRequest(ConnectionRequest(requestID: 1, supporterName: "A", connectionType: .screenShare)),
            now: t0, call: .idle)
        _ = machine.answer(requestID: 1, allow: true)
        let actions = machine.received(.sessionStarted(SessionStarted(requestID: 1)), now: t0, call: .idle)
        #expect(
            actions.contains(
                .send(
                    .voipState(
                        VoIPState(
                            state: .notStartedUnsupported,
                            text: "VoIP not started: the device or the supporter does not support it")))))
        #expect(!machine.voipRunning)
    }

    /// Errata 1.0.1 no. 10: the supporter node's shutdown (SESSION_END `going_away`, a non-error reason) is "supporter
    /// disconnected", in every joined state, not a failure.
    @Test(arguments: [DeviceFixture.online, .requestPending, .awaitingStart, .active])
    func supporterNodeShutdownIsReportedAsDisconnectedGoingAway(fixture: DeviceFixture) {
        var machine = fixture.make()
        let actions = machine.received(
            .sessionEnd(SessionEnd(reason: .goingAway, text: "the supporter node shuts down")), now: t0, call: .idle)
        let report = Action.report(.supporterDisconnected(reason: .goingAway, text: "the supporter node shuts down"))
        #expect(actions == (fixture == .active ? [.stopVoIP, report] : [report]))
        #expect(machine.state == .idle)
    }

    /// Errata 1.0.1 no. 4: "the supporter lacks voip" reads the CONNECTION_REQUEST's `requested_features`, "the
    /// device lacks voip" the device's own capabilities; an entry of another version still counts as present.
    @Test(arguments: [
        ([Feature(.screenShare), Feature(.voip)], [Feature(.voip)], VoIPCallState.started),
        ([Feature(.screenShare), Feature(.voip)], [Feature(.voip, version: 2)], .started),
        ([Feature(.screenShare), Feature(.voip, version: 3)], [Feature(.voip)], .started),
        ([Feature(.screenShare), Feature(.voip)], [Feature(.screenShare), Feature(.remoteControl)], .notStartedUnsupported),
        ([Feature(.screenShare), Feature(.voip)], [], .notStartedUnsupported),
        ([Feature(.screenShare)], [Feature(.voip)], .notStartedUnsupported),
    ] as [(FeatureSet, FeatureSet, VoIPCallState)])
    func voipDecisionReadsRequestedFeaturesAndOwnCapabilities(
        capabilities: FeatureSet, requested: FeatureSet, expected: VoIPCallState
    ) throws {
        var machine = DeviceSessionMachine(capabilities: capabilities)
        _ = try machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        _ = machine.received(
            .connectionRequest(
                ConnectionRequest(requestID: 1, supporterName: "A", connectionType: .screenShare, requestedFeatures: requested)),
            now: t0, call: .idle)
        _ = machine.answer(requestID: 1, allow: true)
        let actions = machine.received(.sessionStarted(SessionStarted(requestID: 1)), now: t0, call: .idle)
        #expect(actions.contains(.report(.voipStateChanged(expected))), "\(actions)")
        #expect(machine.voipRunning == (expected == .started))
    }

    // MARK: robustness

    @Test func absurdClockValuesDoNotTrap() throws {
        var machine = DeviceSessionMachine(capabilities: [], promptTimeout: .seconds(Int64.max) * 18)
        _ = try machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        let now = Deadline(nanoseconds: .max)
        _ = machine.received(
            .connectionRequest(ConnectionRequest(requestID: 1, supporterName: "A", connectionType: .screenShare)),
            now: now, call: .idle)
        #expect(machine.nextDeadline == Deadline(nanoseconds: .max))  // saturated, not wrapped to the past
        _ = machine.tick(now: now)
    }
}
