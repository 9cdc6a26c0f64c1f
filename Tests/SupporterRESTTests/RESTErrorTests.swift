import Foundation
import Testing
import SupportHTTP
import SupporterNode
@testable import SupporterREST
import SupporterCore
import SupportSession
import SupportWire
import SupportRuntime
import TestSupport
import SupporterModel

@Suite struct RESTErrorTests {
    static func error(of response: HTTPResponse) -> APIErrorBody.Detail? {
        (try? JSONDecoder().decode(APIErrorBody.self, from: Data(response.body)))?.error
    }

    @Test(arguments: [
        (RESTError.Kind.badRequest, 400, "bad_request"), (.unauthorized, 401, "unauthorized"),
        (.forbidden, 403, "forbidden"), (.notFound, 404, "not_found"), (.methodNotAllowed, 405, "method_not_allowed"),
        (.conflict, 409, "conflict"), (.unprocessable, 422, "unprocessable"),
        (.tooManyRequests, 429, "too_many_requests"), (.unavailable, 503, "service_unavailable"),
        (.internalError, 500, "internal_error"),
    ])
    func eachKindHasItsStatusAndWord(_ kind: RESTError.Kind, _ status: Int, _ word: String) {
        let response = RESTError(kind, "why").response
        #expect(response.status.code == status)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(Self.error(of: response) == APIErrorBody.Detail(status: status, code: word, message: "why"))
    }

    @Test func unauthorizedNamesTheBearerScheme() {
        #expect(RESTError(.unauthorized, "x").response.headers["WWW-Authenticate"] == #"Bearer realm="rsup""#)
    }

    @Test(arguments: [
        (Duration.milliseconds(1), "1"), (.milliseconds(999), "1"), (.seconds(1), "1"), (.milliseconds(1001), "2"),
        (.seconds(300), "300"),
    ])
    func retryAfterIsWholeSecondsRoundedUp(_ wait: Duration, _ header: String) {
        let response = RESTError(.tooManyRequests, "wait", retryAfter: wait).response
        #expect(response.headers["Retry-After"] == header)
    }

    @Test func methodNotAllowedListsTheMethods() {
        let response = RESTError(.methodNotAllowed, "no", allowedMethods: "GET, POST").response
        #expect(response.headers["Allow"] == "GET, POST")
    }

    @Test func nodeRefusalsMapToTheirStatus() {
        #expect(RESTError(SupporterNodeError("gone", kind: .notFound)).kind == .notFound)
        #expect(RESTError(SupporterNodeError("busy", kind: .conflict)).kind == .conflict)
        #expect(RESTError(SupporterNodeError("bad", kind: .invalid)).kind == .unprocessable)
        #expect(RESTError(SupporterNodeError("disk", kind: .store)).kind == .internalError)
    }

    @Test func theNodesErrorIsKeptAsTheCauseAndIsNotPartOfEquality() {
        let refusal = SupporterNodeError("no such code", kind: .notFound)
        let error = RESTError(refusal)
        #expect(error.underlying as? SupporterNodeError == refusal)
        #expect(error == RESTError(.notFound, "no such code"))
        #expect(error.hashValue == RESTError(.notFound, "no such code").hashValue)
        #expect(error != RESTError(.notFound, "no such code", retryAfter: .seconds(1)))
        #expect(error.description == "404 not_found: no such code")
    }
}
