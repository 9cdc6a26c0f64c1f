import SupportWire
import SupportSession
import Testing

@testable import DeviceNode

@Suite struct DeviceNodeErrorTests {
    struct Cause: Error, Sendable {}

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = DeviceNodeError(.invalidConfiguration, "the API token must have 1 to 256 bytes", underlying: Cause())
        let two = DeviceNodeError(.invalidConfiguration, "the API token must have 1 to 256 bytes")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(one != DeviceNodeError(.unavailable, two.message))
        #expect(one.kind == DeviceNodeError(.invalidConfiguration, "other").kind)
    }

    @Test func descriptionIsTheMessageAndKindsHaveNames() {
        #expect(DeviceNodeError(.invalidSessionCode, "a session code has 1 to 64 bytes; got 0").description
            == "a session code has 1 to 64 bytes; got 0")
        #expect(DeviceNodeError.Kind.alreadyJoined.description == "already_joined")
        #expect(DeviceNodeError.Kind.invalidSessionCode.description == "invalid_session_code")
        #expect(DeviceNodeError.Kind.invalidConfiguration.description == "invalid_configuration")
        #expect(DeviceNodeError.Kind.unavailable.description == "unavailable")
    }
}
