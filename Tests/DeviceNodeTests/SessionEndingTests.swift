import SupportWire
import SupportSession
import Testing

@testable import DeviceNode

@Suite struct SessionEndingTests {
    struct Cause: Error, Sendable {}

    @Test(arguments: SessionOutcome.allCases)
    func everyOutcomeHasAKind(_ outcome: SessionOutcome) {
        #expect(SessionEnding.Kind(outcome: outcome).description.isEmpty == false)
    }

    @Test func kindsFollowTheOutcomeAndTheCauseIsNotPartOfEquality() {
        let failure = DeviceSessionFailure(reason: .connectionLost, message: "network error: reset", underlying: Cause())
        let one = SessionEnding(failure)
        let two = SessionEnding(reason: .connectionLost, detail: "network error: reset")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(one.kind == .connectionLost)
        #expect(one != SessionEnding(reason: .keepaliveTimeout, detail: "network error: reset"))
        #expect(one.kind == SessionEnding(reason: .keepaliveTimeout).kind)
        #expect(SessionEnding.Kind.invalidAPIToken.description == "invalid_api_token")
    }

    @Test func descriptionIsTheUserSentenceThenTheWireReason() {
        let ending = SessionEnding(reason: .sessionCodeExpired, detail: "REGISTER refused")
        #expect(ending.message == "This session code has expired.")
        #expect(ending.description == "This session code has expired. (session_code_expired: REGISTER refused)")
    }
}
