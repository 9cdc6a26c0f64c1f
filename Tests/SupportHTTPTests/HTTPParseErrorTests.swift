import Testing
@testable import SupportHTTP

@Suite struct HTTPParseErrorTests {
    struct Cause: Error, Sendable {}

    @Test(arguments: [
        (HTTPParseError.Kind.badRequest, 400, "bad_request"), (.contentTooLarge, 413, "content_too_large"),
        (.uriTooLong, 414, "uri_too_long"), (.expectationFailed, 417, "expectation_failed"),
        (.requestHeaderFieldsTooLarge, 431, "request_header_fields_too_large"),
        (.notImplemented, 501, "not_implemented"), (.httpVersionNotSupported, 505, "http_version_not_supported"),
    ])
    func eachKindHasOneStatus(_ kind: HTTPParseError.Kind, _ code: Int, _ name: String) {
        #expect(kind.status.code == code)
        #expect(kind.description == name)
        #expect(HTTPParseError(HTTPStatus(code: code), "why").kind == kind)
        #expect(HTTPParseError(kind: kind, "why") == HTTPParseError(HTTPStatus(code: code), "why"))
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = HTTPParseError(.badRequest, "a bare CR in the request", underlying: Cause())
        let two = HTTPParseError(.badRequest, "a bare CR in the request")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.kind == HTTPParseError(.badRequest, "more than one Host header").kind)
        #expect(one != HTTPParseError(.badRequest, "more than one Host header"))
    }

    @Test func descriptionIsTheStatusThenTheMessage() {
        #expect(HTTPParseError(.badRequest, "a bare LF: lines must end with CR LF").description
            == "400: a bare LF: lines must end with CR LF")
    }
}
