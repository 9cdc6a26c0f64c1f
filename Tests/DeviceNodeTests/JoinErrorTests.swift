import SupportWire
import SupportSession
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing

@testable import DeviceNode

@Suite struct JoinErrorTests {
    struct Cause: Error, Sendable {}

    @Test(arguments: JoinError.Reason.allCases)
    func everyReasonHasAKindOfTheSameName(_ reason: JoinError.Reason) {
        let error = JoinError(reason, detail: "d")
        #expect(error.kind == JoinError.Kind(reason: reason))
        #expect(error.message == error.errorDescription)
        #expect(!error.message.isEmpty)
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = JoinError(.network, detail: "connection refused", underlying: Cause())
        let two = JoinError(.network, detail: "connection refused")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.kind == JoinError(.network, detail: "other").kind)
        #expect(one != JoinError(.network, detail: "other"))
        #expect(JoinError.Kind.alreadyJoined.description == "already_joined")
        #expect(JoinError.Kind.network.description == "network")
    }

    @Test func isALocalizedErrorWithUnchangedTexts() {
        let error = JoinError(.alreadyJoined, detail: "a code is already joined")
        #expect(error.description == "alreadyJoined: a code is already joined")
        #expect(error.localizedDescription == "A support session is already running.")
        #expect(error.recoverySuggestion == "Leave the current session first.")
        #expect(error.failureReason == "a code is already joined")
    }

    @Test func aJoinErrorKeepsWhatItWasMadeFrom() {
        let refusal = DeviceNodeError(.alreadyJoined, "leave the current code first")
        let error = JoinError(refusal)
        #expect(error.kind == .alreadyJoined)
        #expect(error.underlying as? DeviceNodeError == refusal)
        let ending = SessionEnding(reason: .sessionCodeInUse, detail: "REGISTER refused")
        #expect(JoinError(ending).underlying as? SessionEnding == ending)
    }
}
