import SupportWire
import SupportUtilities
import Testing
@testable import SupportSession

@Suite struct DeviceSessionMachineRefusalTests {
    typealias Refusal = DeviceSessionMachine.Refusal
    struct Cause: Error, Sendable {}

    @Test func joiningTwiceIsAWrongStateRefusal() throws {
        var machine = DeviceSessionMachine(capabilities: [])
        _ = try machine.register(code: "123456", token: "token")
        let refusal = #expect(throws: Refusal.self) { try machine.register(code: "654321", token: "token") }
        #expect(refusal?.kind == .wrongState)
        #expect(refusal?.description == "a session code is already joined; leave it before joining another")
    }

    @Test func aMessageOutsideASessionIsAWrongStateRefusal() {
        var machine = DeviceSessionMachine(capabilities: [])
        let refusal = #expect(throws: Refusal.self) { try machine.sendChat("hello") }
        #expect(refusal?.kind == .wrongState)
        #expect(refusal?.message == "messages need an active session with session_messages in effect")
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = Refusal(.denied, "chat is not granted", underlying: Cause())
        let two = Refusal(.denied, "chat is not granted")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != Refusal(.invalidArgument, two.message))
        #expect(Refusal.Kind.wrongState.description == "wrong_state")
    }
}
