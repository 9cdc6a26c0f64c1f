import Testing
@testable import SupportWire

@Suite struct WireErrorTests {
    struct Cause: Error, Sendable {}

    @Test func everyCodeKeepsItsSpecName() {
        #expect(WireError.Code.allCases.count == 20)
        for code in WireError.Code.allCases {
            #expect(WireError.Code(name: code.name) == code)
            #expect(code.description == code.name)
        }
        #expect(WireError.Code.missingField.name == "missing_field")
        #expect(WireError.Kind.invalidUTF8.name == "invalid_utf8")
        #expect(WireError.Code(name: "no_such_error") == nil)
    }

    @Test func errorsAreEqualBySpecIdentityNotByWordsOrCause() {
        let one = WireError(.missingField, offset: 9, field: 2, fieldName: "code", detail: "a", underlying: Cause())
        let two = WireError(.missingField, offset: 9, field: 2, detail: "b")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.kind == one.code)
        #expect(one != WireError(.missingField, offset: 10, field: 2))
        #expect(one.underlying is Cause)
    }

    @Test func descriptionAndGoAwayTextAreUnchanged() {
        let error = WireError(.fieldOutOfOrder, offset: 27, field: 2, fieldName: "api_token", detail: "after 3")
        #expect(error.description == "field_out_of_order at offset 27, field 2 (api_token): after 3")
        #expect(error.goAwayText == "field_out_of_order offset 27 field 2")
        #expect(error.message == "after 3" && error.detail == "after 3")
        #expect(WireError(.truncatedHeader, offset: 0).description == "truncated_header at offset 0")
    }
}
