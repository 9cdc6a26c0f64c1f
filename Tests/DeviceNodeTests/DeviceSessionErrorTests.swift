import SupportWire
import SupportSession
import Testing

@testable import DeviceNode

@Suite struct DeviceSessionErrorTests {
    @Test func aRefusalOfTheMachineIsTheCauseNotPartOfEquality() throws {
        var machine = DeviceSessionMachine(capabilities: [])
        let refusal = try #require(#expect(throws: DeviceSessionMachine.Refusal.self) { try machine.sendChat("x") })
        let one = DeviceSessionError(.refused, refusal.message, underlying: refusal)
        let two = DeviceSessionError(.refused, "messages need an active session with session_messages in effect")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying as? DeviceSessionMachine.Refusal == refusal)
        #expect(one != DeviceSessionError(.sessionOver, two.message))
        #expect(one.description == "messages need an active session with session_messages in effect")
    }

    @Test func kindsHaveNames() {
        #expect(DeviceSessionError.Kind.sessionOver.description == "session_over")
        #expect(DeviceSessionError.Kind.refused.description == "refused")
        #expect(DeviceSessionError.Kind.shutDown.description == "shut_down")
    }
}
