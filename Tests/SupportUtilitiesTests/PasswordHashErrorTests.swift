import Testing
@testable import SupportUtilities

@Suite struct PasswordHashErrorTests {
    struct Cause: Error, Sendable {}

    @Test func outOfRangeParametersAreRefusedWithTheirValues() {
        let error = #expect(throws: PasswordHashError.self) {
            _ = try PasswordHash.make(password: "x", parameters: .init(logN: 40, r: 8, p: 1))
        }
        #expect(error?.kind == .invalidParameters)
        #expect(error?.description == "scrypt parameters ln=40 r=8 p=1 are out of range")
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = PasswordHashError(.openSSL, "scrypt failed in OpenSSL (out of memory?)", underlying: Cause())
        let two = PasswordHashError(.openSSL, "scrypt failed in OpenSSL (out of memory?)")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != PasswordHashError(.invalidParameters, two.message))
        #expect(one.kind.description == "openssl")
        #expect(PasswordHashError.Kind.invalidParameters.description == "invalid_parameters")
        #expect(one.description == "scrypt failed in OpenSSL (out of memory?)")
    }
}
