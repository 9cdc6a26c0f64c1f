// The supporter session state machine against SPEC §9: every state × every message type, every local event in every
// state, request ids, and whole flows with a device machine over real frames.
import Testing

@testable import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

/// The supporter's states, reached through public events only: code "s12-345" registered at `t0`, request id 1
/// ("Alice", screen share, wants voip) sent at `t0`.
enum SupporterFixture: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case idle, online, requestPending, active

    var testDescription: String { rawValue }

    static let pendingID: UInt32 = 1
    static let code = "s12-345"
    static let request = ConnectionRequest(
        requestID: pendingID, supporterName: "Alice", connectionType: .screenShare, requestedFeatures: [Feature(.voip)])
    static let deadline = t0 + .seconds(90)

    static func accept(_: Register) -> RegistrationDecision { .accept(codeType: .remoteSupport) }

    func make() -> SupporterSessionMachine {
        var machine = SupporterSessionMachine()
        if self == .idle { return machine }
        _ = machine.received(
            .register(Register(sessionCode: Self.code, apiToken: "tok", capabilities: [Feature(.voip)])), now: t0,
            authorize: Self.accept)
        if self == .online { return machine }
        _ = try! machine.requestConnection(
            supporterName: "Alice", type: .screenShare, features: [Feature(.voip)], now: t0)
        if self == .requestPending { return machine }
        _ = machine.received(
            .connectionResponse(ConnectionResponse(requestID: Self.pendingID, decision: .allow)), now: t0,
            authorize: Self.accept)
        return machine
    }

    var state: SupporterSessionMachine.State {
        switch self {
        case .idle: .idle
        case .online: .online(code: Self.code)
        case .requestPending: .requestPending(code: Self.code, request: Self.request, deadline: Self.deadline)
        case .active: .active(code: Self.code, request: Self.request)
        }
    }
}

enum SupporterExpectation: Equatable {
    case discard
    case violation
    case next(SupporterSessionMachine.State, [SupporterSessionMachine.Action])
}

@Suite struct SupporterSessionMachineTests {
    typealias Action = SupporterSessionMachine.Action

    // MARK: the frame table, every state × every message type

    /// SPEC §9 "Frames received", written out independently of the implementation.
    static func expectation(_ fixture: SupporterFixture, _ sample: Sample) -> SupporterExpectation {
        let id = SupporterFixture.pendingID
        let code = SupporterFixture.code
        switch sample {
        case .hello, .helloAck: return .violation  // §7
        case .ping, .pong, .goAway: return .discard  // §7's business
        // Frames only a supporter sends: protocol error in every state, idle included.
        case .registerResultSuccess, .registerResultRefused, .connectionRequest, .requestAbortPending,
            .requestAbortOtherID, .sessionStartedPending, .sessionStartedOtherID:
            return .violation
        default: break
        }
        switch (fixture, sample) {
        case (.idle, .register):
            return .next(
                .online(code: "s12-345"),
                [
                    .send(.registerResult(RegisterResult(reason: .success, codeType: .remoteSupport))),
                    .report(.deviceOnline(code: "s12-345", capabilities: [Feature(.voip)])),
                ])
        case (.idle, _):
            return .discard  // CONNECTION_RESPONSE, SESSION_END, SESSION_ERROR, VOIP_STATE crossed our SESSION_END
        case (_, .register):
            return .violation
        case (.requestPending, .connectionResponseAllowPending):
            return .next(
                .active(code: code, request: SupporterFixture.request),
                [.send(.sessionStarted(SessionStarted(requestID: id))), .report(.connected(requestID: id))])
        case (.requestPending, .connectionResponseRejectPending):
            return .next(.online(code: code), [.report(.rejected(requestID: id, reason: .rejectedByUser))])
        case (_, .connectionResponseAllowPending), (_, .connectionResponseRejectPending),
            (_, .connectionResponseOtherID):
            return .discard  // crossed an abort or timeout (or an id already resolved)
        case (_, .sessionEnd):
            return .next(.idle, [.report(.ended(reason: .endedBySupporter, text: "bye"))])
        case (_, .sessionError):
            return .next(
                fixture.state, [.report(.sessionError(reason: .unsupportedFeature, feature: .assistAR, text: "no AR"))])
        case (.active, .voipState):
            return .next(fixture.state, [.report(.voipState(.started, text: "on"))])
        case (_, .voipState):
            return .violation  // VOIP_STATE outside active (and not idle)
        default:
            return .violation
        }
    }

    @Test(arguments: SupporterFixture.allCases, Sample.allCases)
    func frameGetsWhatTheSpecTableSays(fixture: SupporterFixture, sample: Sample) {
        var machine = fixture.make()
        #expect(machine.state == fixture.state)
        var asked = 0
        let actions = machine.received(sample.message(pendingID: SupporterFixture.pendingID), now: t0) {
            asked += 1
            return SupporterFixture.accept($0)
        }
        #expect(asked == (fixture == .idle && sample == .register ? 1 : 0), "authorize is asked only for REGISTER in idle")
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

    @Test func refusedRegisterAnswersWithTheReasonAndStaysIdle() {
        var machine = SupporterSessionMachine()
        let actions = machine.received(.register(Register(sessionCode: "bad", apiToken: "t")), now: t0) { _ in
            .refuse(.rateLimited, text: "later", retryAfterMilliseconds: 500)
        }
        #expect(
            actions == [
                .send(.registerResult(RegisterResult(reason: .rateLimited, text: "later", retryAfterMilliseconds: 500))),
                .report(.registrationRefused(code: "bad", reason: .rateLimited)),
            ])
        #expect(machine.state == .idle)
    }

    @Test func refusalNamingSuccessIsSentAsInternalError() {
        var machine = SupporterSessionMachine()
        let actions = machine.received(.register(Register(sessionCode: "c", apiToken: "t")), now: t0) { _ in
            .refuse(.success)
        }
        #expect(
            actions == [
                .send(.registerResult(RegisterResult(reason: .internalError))),
                .report(.registrationRefused(code: "c", reason: .internalError)),
            ])
        #expect(machine.state == .idle)
    }

    @Test(arguments: ["", String(repeating: "x", count: 257)])
    func refusalTextTheWireCannotCarryIsDropped(text: String) {
        var machine = SupporterSessionMachine()
        let actions = machine.received(.register(Register(sessionCode: "c", apiToken: "t")), now: t0) { _ in
            .refuse(.invalidSessionCode, text: text)
        }
        #expect(actions.first == .send(.registerResult(RegisterResult(reason: .invalidSessionCode))))
    }

    @Test func deviceCapabilitiesComeFromRegister() {
        let machine = SupporterFixture.online.make()
        #expect(machine.deviceCapabilities == [Feature(.voip)])
        #expect(machine.code == SupporterFixture.code)
        #expect(SupporterFixture.idle.make().code == nil)
    }

    // MARK: local events in every state

    @Test(arguments: SupporterFixture.allCases)
    func requestIsAcceptedOnlyWhenOnline(fixture: SupporterFixture) {
        var machine = fixture.make()
        if fixture == .online {
            let actions = try? machine.requestConnection(supporterName: "Bob", type: .assistAR, now: .seconds(5))
            let request = ConnectionRequest(requestID: 1, supporterName: "Bob", connectionType: .assistAR)
            #expect(actions == [.send(.connectionRequest(request))])
            #expect(
                machine.state == .requestPending(code: SupporterFixture.code, request: request, deadline: .seconds(95)))
        } else {
            #expect(throws: SupporterSessionMachine.Refusal.self) {
                try machine.requestConnection(supporterName: "Bob", type: .assistAR, now: t0)
            }
            #expect(machine.state == fixture.state)
        }
    }

    @Test(arguments: ["", String(repeating: "n", count: 65)])
    func requestWithAnUnencodableSupporterNameIsRefusedWithoutUsingAnID(name: String) throws {
        var machine = SupporterFixture.online.make()
        #expect(throws: SupporterSessionMachine.Refusal.self) {
            try machine.requestConnection(supporterName: name, type: .screenShare, now: t0)
        }
        #expect(machine.state == .online(code: SupporterFixture.code))
        let actions = try machine.requestConnection(supporterName: "ok", type: .screenShare, now: t0)
        #expect(actions == [.send(.connectionRequest(ConnectionRequest(requestID: 1, supporterName: "ok", connectionType: .screenShare)))])
    }

    @Test(arguments: SupporterFixture.allCases)
    func abortIsAcceptedOnlyWhileARequestIsPending(fixture: SupporterFixture) {
        var machine = fixture.make()
        if fixture == .requestPending {
            let actions = try? machine.abortRequest()
            #expect(actions == [.send(.requestAbort(RequestAbort(requestID: 1, reason: .abortedBySupporter)))])
            #expect(machine.state == .online(code: SupporterFixture.code))
            #expect(machine.nextDeadline == nil)
        } else {
            #expect(throws: SupporterSessionMachine.Refusal.self) { try machine.abortRequest() }
            #expect(machine.state == fixture.state)
        }
    }

    @Test(arguments: SupporterFixture.allCases, [ReasonCode.endedBySupporter, .sessionCodeClosed, .sessionCodeExpired])
    func endIsAcceptedInEveryStateButIdle(fixture: SupporterFixture, reason: ReasonCode) {
        var machine = fixture.make()
        if fixture == .idle {
            #expect(throws: SupporterSessionMachine.Refusal.self) { try machine.end(reason: reason) }
            #expect(machine.state == .idle)
        } else {
            let actions = try? machine.end(reason: reason)
            #expect(actions == [.send(.sessionEnd(SessionEnd(reason: reason))), .report(.ended(reason: reason, text: nil))])
            #expect(machine.state == .idle)
            #expect(machine.nextDeadline == nil)
        }
    }

    @Test(arguments: ["", String(repeating: "x", count: 257)])
    func endWithAnUnencodableTextIsRefused(text: String) {
        var machine = SupporterFixture.active.make()
        #expect(throws: SupporterSessionMachine.Refusal.self) { try machine.end(text: text) }
        #expect(machine.state == SupporterFixture.active.state)
    }

    @Test func requestTimesOutExactlyAtTheDeadlineAndNotBefore() {
        var machine = SupporterFixture.requestPending.make()
        #expect(machine.nextDeadline == SupporterFixture.deadline)
        #expect(machine.tick(now: SupporterFixture.deadline - .nanoseconds(1)).isEmpty)
        #expect(machine.state == SupporterFixture.requestPending.state)
        let actions = machine.tick(now: SupporterFixture.deadline)
        #expect(
            actions == [
                .send(.requestAbort(RequestAbort(requestID: 1, reason: .requestTimedOut))),
                .report(.requestTimedOut(requestID: 1)),
            ])
        #expect(machine.state == .online(code: SupporterFixture.code))
        #expect(machine.nextDeadline == nil)
        #expect(machine.tick(now: .seconds(1_000_000)).isEmpty)
    }

    @Test(arguments: SupporterFixture.allCases)
    func requestTimerOutsideRequestPendingDoesNothing(fixture: SupporterFixture) {
        guard fixture != .requestPending else { return }
        var machine = fixture.make()
        #expect(machine.nextDeadline == nil)
        #expect(machine.tick(now: .seconds(1_000_000)).isEmpty)
        #expect(machine.state == fixture.state)
    }

    @Test(arguments: SupporterFixture.allCases)
    func linkClosedEndsTheRegistration(fixture: SupporterFixture) {
        var machine = fixture.make()
        let actions = machine.linkClosed(reason: .connectionLost, text: "eof")
        #expect(actions == (fixture == .idle ? [] : [.report(.ended(reason: .connectionLost, text: "eof"))]))
        #expect(machine.state == .idle)
        #expect(machine.nextDeadline == nil)
    }

    @Test func lateAnswerAfterAbortIsDiscarded() throws {
        var machine = SupporterFixture.requestPending.make()
        _ = try machine.abortRequest()
        let actions = machine.received(
            .connectionResponse(ConnectionResponse(requestID: 1, decision: .allow)), now: t0,
            authorize: SupporterFixture.accept)
        #expect(actions.isEmpty)
        #expect(machine.state == .online(code: SupporterFixture.code))
    }

    @Test func lateAnswerToAnEarlierRequestDoesNotResolveTheCurrentOne() throws {
        var machine = SupporterFixture.requestPending.make()
        _ = machine.tick(now: SupporterFixture.deadline)
        _ = try machine.requestConnection(supporterName: "Alice", type: .screenShare, now: t0)
        let actions = machine.received(
            .connectionResponse(ConnectionResponse(requestID: 1, decision: .allow)), now: t0,
            authorize: SupporterFixture.accept)
        #expect(actions.isEmpty)
        guard case .requestPending(_, let request, _) = machine.state else {
            Issue.record("expected request_pending, got \(machine.state)")
            return
        }
        #expect(request.requestID == 2)
    }

    // MARK: request ids

    @Test func requestIDsStrictlyIncreaseAcrossOutcomesAndRegistrations() throws {
        var machine = SupporterSessionMachine()
        var ids: [UInt32] = []
        func register() {
            _ = machine.received(
                .register(Register(sessionCode: "c", apiToken: "t")), now: t0, authorize: SupporterFixture.accept)
        }
        func request() throws {
            let actions = try machine.requestConnection(supporterName: "S", type: .screenShare, now: t0)
            guard case .send(.connectionRequest(let request)) = actions.first else {
                Issue.record("no CONNECTION_REQUEST in \(actions)")
                return
            }
            ids.append(request.requestID)
        }
        register()
        try request()
        _ = try machine.abortRequest()
        try request()
        _ = machine.tick(now: .seconds(10_000))
        try request()
        _ = machine.received(
            .connectionResponse(ConnectionResponse(requestID: ids.last!, decision: .reject)), now: t0,
            authorize: SupporterFixture.accept)
        try request()
        _ = machine.received(
            .connectionResponse(ConnectionResponse(requestID: ids.last!, decision: .allow)), now: t0,
            authorize: SupporterFixture.accept)
        _ = try machine.end()
        register()
        try request()
        _ = try machine.end(reason: .sessionCodeExpired)
        register()
        try request()
        #expect(ids == [1, 2, 3, 4, 5, 6])
    }

    // MARK: errata 1.0.1 (SPEC §14)

    /// No. 7: `decision` alone decides; an allow starts the session whatever reason it carries.
    @Test(arguments: [ReasonCode.success, .rejectedByUser, .requestTimedOut, .internalError, ReasonCode(rawValue: 0x42)])
    func allowStartsTheSessionWhateverItsReason(reason: ReasonCode) {
        var machine = SupporterFixture.requestPending.make()
        let actions = machine.received(
            .connectionResponse(ConnectionResponse(requestID: 1, decision: .allow, reason: reason)), now: t0,
            authorize: SupporterFixture.accept)
        #expect(actions == [.send(.sessionStarted(SessionStarted(requestID: 1))), .report(.connected(requestID: 1))])
        #expect(machine.state == SupporterFixture.active.state)
    }

    /// No. 7: a reject is a rejection whatever its reason; one that says `success` is reported as `rejected_by_user`.
    @Test(arguments: [
        (ReasonCode.success, ReasonCode.rejectedByUser), (.rejectedByUser, .rejectedByUser),
        (.requestTimedOut, .requestTimedOut), (ReasonCode(rawValue: 0x42), ReasonCode(rawValue: 0x42)),
    ])
    func rejectIsARejectionWhateverItsReason(sent: ReasonCode, reported: ReasonCode) {
        var machine = SupporterFixture.requestPending.make()
        let actions = machine.received(
            .connectionResponse(ConnectionResponse(requestID: 1, decision: .reject, reason: sent)), now: t0,
            authorize: SupporterFixture.accept)
        #expect(actions == [.report(.rejected(requestID: 1, reason: reported))])
        #expect(machine.state == .online(code: SupporterFixture.code))
    }

    /// No. 9: a device that sent SESSION_END must join again on a new connection; a REGISTER on this one is a
    /// protocol error, in whatever state the SESSION_END found the machine (idle: it crossed ours).
    @Test(arguments: SupporterFixture.allCases)
    func registerAfterTheDevicesOwnSessionEndIsAProtocolError(fixture: SupporterFixture) {
        var machine = fixture.make()
        _ = machine.received(
            .sessionEnd(SessionEnd(reason: .endedByDevice)), now: t0, authorize: SupporterFixture.accept)
        #expect(machine.state == .idle)
        #expect(machine.deviceSentSessionEnd)
        var asked = 0
        let actions = machine.received(.register(Register(sessionCode: "s12-345", apiToken: "tok")), now: t0) {
            asked += 1
            return SupporterFixture.accept($0)
        }
        #expect(asked == 0, "the registry is not asked")
        #expect(isSingleViolation(actions) { $0.isProtocolViolation }, "\(actions)")
        #expect(machine.state == .idle)
    }

    /// No. 9: after the supporter's SESSION_END, a refusal or a closed link the device may register again.
    @Test func registerAfterTheSupportersSessionEndOrARefusalIsAccepted() throws {
        var machine = SupporterFixture.active.make()
        _ = try machine.end(reason: .sessionCodeClosed)
        _ = machine.received(.register(Register(sessionCode: "bad", apiToken: "t")), now: t0) { _ in
            .refuse(.invalidSessionCode)
        }
        let actions = machine.received(
            .register(Register(sessionCode: "s12-345", apiToken: "tok")), now: t0, authorize: SupporterFixture.accept)
        #expect(actions.first == .send(.registerResult(RegisterResult(reason: .success, codeType: .remoteSupport))))
        #expect(machine.state == .online(code: "s12-345"))
        #expect(!machine.deviceSentSessionEnd)
    }

    /// No. 10: the node's shutdown ends a joined code with SESSION_END `going_away` (the GOAWAY is the link's).
    @Test(arguments: [SupporterFixture.online, .requestPending, .active])
    func shutdownEndsAJoinedCodeWithGoingAway(fixture: SupporterFixture) throws {
        var machine = fixture.make()
        let actions = try machine.end(reason: .goingAway, text: "the supporter node shuts down")
        #expect(
            actions == [
                .send(.sessionEnd(SessionEnd(reason: .goingAway, text: "the supporter node shuts down"))),
                .report(.ended(reason: .goingAway, text: "the supporter node shuts down")),
            ])
        #expect(machine.state == .idle)
    }

    @Test func absurdClockValuesDoNotTrap() throws {
        var machine = SupporterSessionMachine(requestTimeout: .seconds(Int64.max) * 18)
        _ = machine.received(
            .register(Register(sessionCode: "c", apiToken: "t")), now: t0, authorize: SupporterFixture.accept)
        _ = try machine.requestConnection(supporterName: "S", type: .screenShare, now: Deadline(nanoseconds: .max))
        #expect(machine.nextDeadline != nil)
    }
}

@Suite struct SupporterSessionMachineAuthorizeTests {
    @Test func aRegisterIsAnsweredOnlyWithTheCallersDecision() throws {
        var machine = SupporterSessionMachine()
        machine.linkOpened(extensions: .none, peerMaxFrameSize: WireLimits.defaultMaxFrameSize)
        let register = Register(sessionCode: "s12-345", apiToken: "t")
        // The machine asks; it sends nothing and stays idle until the decision arrives as the next event.
        #expect(machine.received(.register(register), now: .seconds(1)) == [.authorize(register)])
        #expect(machine.state == .idle)
        #expect(machine.registrationAwaitingDecision == register)
        let actions = machine.registrationDecided(.refuse(.invalidSessionCode))
        #expect(actions.count == 2)
        guard case .send(.registerResult(let result)) = actions.first else {
            Issue.record("no REGISTER_RESULT: \(actions)")
            return
        }
        #expect(result.reason == .invalidSessionCode)
        #expect(machine.state == .idle)
        // A decision with nothing to decide changes nothing.
        #expect(machine.registrationDecided(.accept(codeType: .remoteSupport)).isEmpty)
        #expect(machine.state == .idle)
    }

    @Test func aSecondRegisterBeforeTheDecisionBreaksTheProtocol() {
        var machine = SupporterSessionMachine()
        machine.linkOpened(extensions: .none, peerMaxFrameSize: WireLimits.defaultMaxFrameSize)
        let register = Register(sessionCode: "s12-345", apiToken: "t")
        _ = machine.received(.register(register), now: .seconds(1))
        let second = machine.received(.register(register), now: .seconds(1))
        guard case .protocolViolation = second.first else {
            Issue.record("a second REGISTER gave \(second)")
            return
        }
    }
}
