import SupportWire
import SupportUtilities
import Testing
@testable import SupportSession

@Suite struct DeviceSessionFailureTests {
    struct Cause: Error, Sendable {}

    @Test(arguments: [
        (ReasonCode.invalidSessionCode, DeviceSessionFailure.Kind.codeRefused), (.invalidAPIToken, .codeRefused),
        (.sessionCodeExpired, .codeRefused), (.sessionCodeClosed, .codeRefused), (.sessionCodeInUse, .codeRefused),
        (.rateLimited, .rateLimited), (.connectionLost, .connectionLost), (.keepaliveTimeout, .connectionLost),
        (.goingAway, .serviceUnavailable), (.sessionMoved, .serviceUnavailable), (.resumeRejected, .resumeRejected),
        (.protocolError, .protocolError), (.malformedFrame, .protocolError), (.internalError, .failed),
        (ReasonCode(rawValue: 0xEE), .failed),
    ])
    func theKindSortsTheWireReason(_ reason: ReasonCode, _ kind: DeviceSessionFailure.Kind) {
        #expect(DeviceSessionFailure(reason: reason, message: "m").kind == kind)
    }

    @Test func theCauseIsNotPartOfEquality() {
        let one = DeviceSessionFailure(reason: .connectionLost, message: "network error: reset", underlying: Cause())
        let two = DeviceSessionFailure(reason: .connectionLost, message: "network error: reset")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != DeviceSessionFailure(reason: .connectionLost, message: "network error: reset",
            retryAfterMilliseconds: 5))
        #expect(one.description == "network error: reset")
        #expect(DeviceSessionFailure.Kind.codeRefused.description == "code_refused")
    }
}
