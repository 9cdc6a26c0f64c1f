import Testing

@testable import DeviceNode
import SupportSession
import SupportWire

/// The closed outcomes apps switch over: every wire reason maps to one, with words for people.
@Suite struct SessionOutcomeTests {
    static let table: [(ReasonCode, SessionOutcome)] = [
        (.endedBySupporter, .endedBySupporter), (.abortedBySupporter, .endedBySupporter),
        (.endedByDevice, .endedByUser), (.connectionLost, .connectionLost), (.keepaliveTimeout, .connectionLost),
        (.invalidSessionCode, .invalidSessionCode), (.invalidAPIToken, .invalidAPIToken),
        (.sessionCodeExpired, .sessionCodeExpired), (.sessionCodeClosed, .sessionCodeClosed),
        (.sessionCodeInUse, .sessionCodeInUse), (.rateLimited, .rateLimited), (.goingAway, .serviceUnavailable),
        (.sessionMoved, .serviceUnavailable), (.protocolError, .failed), (.internalError, .failed),
        (.resumeRejected, .failed), (ReasonCode(rawValue: 0xEE), .failed),
    ]

    @Test(arguments: table.indices)
    func everyWireReasonMapsToAClosedOutcome(_ index: Int) {
        let (reason, outcome) = Self.table[index]
        #expect(SessionOutcome(reason) == outcome)
    }

    @Test(arguments: SessionOutcome.allCases)
    func everyOutcomeHasASentenceForPeople(_ outcome: SessionOutcome) {
        #expect(outcome.userMessage.hasSuffix("."))
        #expect(outcome.isFailure == (outcome.recoverySuggestion != nil))
    }

    @Test func aFailureIsALocalizedErrorAndKeepsTheWireCodeAsDetail() {
        let failure = DeviceSessionFailure(
            reason: .sessionCodeExpired, message: "REGISTER refused: session_code_expired")
        #expect(failure.outcome == .sessionCodeExpired)
        #expect(failure.errorDescription == "This session code has expired.")
        #expect(failure.recoverySuggestion == "Ask your supporter for a new code.")
        #expect(failure.failureReason?.contains("session_code_expired") == true)
        let ending = SessionEnding(failure)
        #expect(ending.reason == .sessionCodeExpired)
        #expect(ending.errorDescription == failure.errorDescription)
    }

    @Test func aRateLimitedJoinSaysWhenToTryAgain() {
        let failure = DeviceSessionFailure(reason: .rateLimited, message: "slow down", retryAfterMilliseconds: 1500)
        let error = JoinError(SessionEnding(failure))
        #expect(error.reason == .rateLimited)
        #expect(error.retryAfter == .milliseconds(1500))
        #expect(error.wireReason == .rateLimited)
    }

    @Test(arguments: JoinError.Reason.allCases)
    func everyJoinErrorHasASentenceForPeople(_ reason: JoinError.Reason) {
        #expect(JoinError(reason, detail: "x").errorDescription?.isEmpty == false)
    }
}
