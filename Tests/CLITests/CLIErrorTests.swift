import CLIKit
import Testing

@Suite struct CLIErrorTests {
    struct Cause: Error, Sendable {}

    @Test func aUsageErrorExitsWith2AndAFailureWith1() {
        #expect(CLIError.usage("'x' names no host").exitCode == 2)
        #expect(CLIError.failure("cannot create a socket").exitCode == 1)
        #expect(CLIError.usage("u").kind == .usage)
        #expect(CLIError.failure("f").kind == .failure)
        #expect(CLIError.Kind.usage.description == "usage")
        #expect(CLIError.Kind.failure.description == "failure")
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = CLIError(.failure, "the supporter node did not answer", underlying: Cause())
        let two = CLIError.failure("the supporter node did not answer")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(one != CLIError.usage("the supporter node did not answer"))
        #expect(one.kind == CLIError.failure("other").kind)
    }

    @Test func descriptionIsTheLineForPeople() {
        #expect(CLIError.usage("'[::1' has no valid port after ']'").description == "'[::1' has no valid port after ']'")
        let refused = #expect(throws: CLIError.self) { _ = try HostPort("[::1", defaultPort: 7443) }
        #expect(refused?.kind == .usage)
    }
}
