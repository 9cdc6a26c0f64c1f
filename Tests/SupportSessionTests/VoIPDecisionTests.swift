// The VoIP decision of SPEC §8 at SESSION_STARTED, as the pure function and through the device machine.
import Testing

@testable import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary

@Suite struct VoIPDecisionTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var device: Bool
        var supporter: Bool
        var call: SystemCallStatus
        var handedOver: String?
        var expected: VoIPCallState
        var testDescription: String { name }
    }

    static func running(_ id: String?) -> SystemCallStatus { SystemCallStatus(isCallRunning: true, runningCallID: id) }

    static let rows: [Row] = [
        Row(name: "neither side has voip", device: false, supporter: false, call: .idle, handedOver: nil,
            expected: .notStartedUnsupported),
        Row(name: "device lacks voip", device: false, supporter: true, call: .idle, handedOver: nil,
            expected: .notStartedUnsupported),
        Row(name: "supporter lacks voip", device: true, supporter: false, call: .idle, handedOver: nil,
            expected: .notStartedUnsupported),
        Row(name: "unsupported wins over a foreign call", device: false, supporter: true, call: running("other"),
            handedOver: nil, expected: .notStartedUnsupported),
        Row(name: "no call running", device: true, supporter: true, call: .idle, handedOver: nil, expected: .started),
        Row(name: "no call running, a stale hand-over", device: true, supporter: true, call: .idle,
            handedOver: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", expected: .started),
        Row(name: "our handed-over call runs", device: true, supporter: true,
            call: running("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"), handedOver: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            expected: .started),
        Row(name: "our call, UUID case differs", device: true, supporter: true,
            call: running("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"), handedOver: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            expected: .started),
        Row(name: "a foreign call runs", device: true, supporter: true, call: running("11111111-2222"),
            handedOver: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", expected: .notStartedOtherCallActive),
        Row(name: "a call runs, nothing handed over", device: true, supporter: true, call: running("abc"),
            handedOver: nil, expected: .notStartedOtherCallActive),
        Row(name: "a call of unknown id runs", device: true, supporter: true, call: running(nil), handedOver: "abc",
            expected: .notStartedOtherCallActive),
    ]

    @Test(arguments: rows)
    func decisionFollowsTheSpecTable(row: Row) {
        #expect(
            VoIPDecision.decide(
                deviceHasVoIP: row.device, supporterWantsVoIP: row.supporter, call: row.call,
                handedOverCallID: row.handedOver) == row.expected)
    }

    @Test(arguments: rows)
    func deviceSendsTheDecidedStateAtSessionStart(row: Row) throws {
        var machine = DeviceSessionMachine(capabilities: row.device ? [Feature(.screenShare), Feature(.voip)] : [Feature(.screenShare)])
        _ = try machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        let request = ConnectionRequest(
            requestID: 1, supporterName: "S", connectionType: .screenShare,
            requestedFeatures: row.supporter ? [Feature(.voip)] : [])
        _ = machine.received(.connectionRequest(request), now: t0, call: .idle)
        if let id = row.handedOver { _ = machine.setCallID(id) }
        _ = machine.answer(requestID: 1, allow: true)
        let actions = machine.received(.sessionStarted(SessionStarted(requestID: 1)), now: t0, call: row.call)
        let info = ConnectionRequestInfo(
            requestID: 1, supporterName: "S", connectionType: .screenShare, requestedFeatures: request.requestedFeatures)
        var expected: [DeviceSessionMachine.Action] = [.report(.supporterConnected(supporterName: "S", connectionType: .screenShare, details: SessionDetails()))]
        if row.expected == .started { expected.append(.startVoIP) }
        expected.append(.send(.voipState(VoIPState(state: row.expected, text: DeviceSessionMachine.describe(row.expected)))))
        expected.append(.report(.voipStateChanged(row.expected)))
        #expect(actions == expected)
        #expect(machine.state == .active(info))
        #expect(machine.voipRunning == (row.expected == .started))
        // Clearing the hand-over ends VoIP only if it runs.
        let cleared = machine.clearCallID()
        if row.expected == .started {
            #expect(cleared == [.stopVoIP, .send(.voipState(VoIPState(state: .ended))), .report(.voipStateChanged(.ended))])
        } else {
            #expect(cleared.isEmpty)
        }
        #expect(!machine.voipRunning)
    }

    /// A machine in an active session whose VoIP did not start because `call` was running.
    static func activeWithForeignCall(device: Bool = true, supporter: Bool = true) -> DeviceSessionMachine {
        var machine = DeviceSessionMachine(capabilities: device ? [Feature(.screenShare), Feature(.voip)] : [Feature(.screenShare)])
        _ = try? machine.register(code: "c", token: "t")
        _ = machine.received(.registerResult(RegisterResult(reason: .success)), now: t0, call: .idle)
        let request = ConnectionRequest(
            requestID: 1, supporterName: "S", connectionType: .screenShare,
            requestedFeatures: supporter ? [Feature(.voip)] : [])
        _ = machine.received(.connectionRequest(request), now: t0, call: .idle)
        _ = machine.answer(requestID: 1, allow: true)
        _ = machine.received(.sessionStarted(SessionStarted(requestID: 1)), now: t0, call: running("CALL-1"))
        return machine
    }

    @Test func handingOverTheRunningCallLaterStartsVoIP() {
        var machine = Self.activeWithForeignCall()
        #expect(!machine.voipRunning)
        let actions = machine.setCallID("call-1", call: Self.running("CALL-1"))
        #expect(
            actions == [
                .startVoIP, .send(.voipState(VoIPState(state: .started, text: DeviceSessionMachine.describe(.started)))),
                .report(.voipStateChanged(.started)),
            ])
        #expect(machine.voipRunning)
        // Handing it over again changes nothing: VoIP already runs.
        #expect(machine.setCallID("call-1", call: Self.running("CALL-1")).isEmpty)
    }

    @Test func handingOverAnotherCallLaterLeavesVoIPOff() {
        var machine = Self.activeWithForeignCall()
        #expect(machine.setCallID("call-2", call: Self.running("CALL-1")).isEmpty)
        #expect(!machine.voipRunning)
    }

    @Test func aLateHandOverNeverStartsVoIPOneSideLacks() {
        var machine = Self.activeWithForeignCall(supporter: false)
        #expect(machine.setCallID("call-1", call: Self.running("CALL-1")).isEmpty)
        machine = Self.activeWithForeignCall(device: false)
        #expect(machine.setCallID("call-1", call: Self.running("CALL-1")).isEmpty)
    }
}
