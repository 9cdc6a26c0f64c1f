import SupportWire
import SupportUtilities
import Testing
@testable import SupportSession

@Suite struct SupporterSessionMachineRefusalTests {
    typealias Refusal = SupporterSessionMachine.Refusal
    struct Cause: Error, Sendable {}

    @Test func aCommandTheStateDoesNotAllowIsAWrongStateRefusal() {
        var machine = SupporterSessionMachine()
        let refusal = #expect(throws: Refusal.self) { try machine.abortRequest() }
        #expect(refusal?.kind == .wrongState)
        #expect(refusal?.description == "no request is pending")
        #expect(refusal?.message == "no request is pending")
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = Refusal(.reconnecting, "the device is reconnecting; try again shortly", underlying: Cause())
        let two = Refusal(.reconnecting, "the device is reconnecting; try again shortly")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != Refusal(.wrongState, two.message))
        #expect(Refusal.Kind.limitReached.description == "limit_reached")
    }

    @Test func aChannelRefusalKeepsItsKindAndIsTheCause() {
    }
}
