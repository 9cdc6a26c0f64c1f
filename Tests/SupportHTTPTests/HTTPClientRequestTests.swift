import Testing
@testable import SupportHTTP

@Suite struct HTTPClientRequestTests {
    @Test func serializesAsHTTP11WithLengthAndClose() throws {
        let request = HTTPClientRequest(
            method: "POST", target: "/hooks/42?x=%20", host: "hooks.example:8443",
            headers: [(name: "Content-Type", value: "application/json"), (name: "X-Signature", value: "t=1, v1=ab")],
            body: Array(#"{"a":1}"#.utf8))
        let expected =
            "POST /hooks/42?x=%20 HTTP/1.1\r\nHost: hooks.example:8443\r\nContent-Type: application/json\r\n"
            + "X-Signature: t=1, v1=ab\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}"
        #expect(try request.serialized() == Array(expected.utf8))
    }

    @Test func aGETWithoutContentHasNoContentLengthButAnEmptyPOSTHasZero() throws {
        let get = HTTPClientRequest(method: "GET", target: "/", host: "a")
        #expect(try get.serialized() == Array("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8))
        let post = HTTPClientRequest(method: "POST", target: "/", host: "a")
        #expect(
            try post.serialized()
                == Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
    }

    struct Invalid: Sendable, CustomTestStringConvertible {
        let name: String
        let request: HTTPClientRequest
        let message: String
        var testDescription: String { name }
    }

    static let invalid: [Invalid] = [
        Invalid(
            name: "CR LF in a value",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "X-A", value: "b\r\nInjected: yes")]),
            message: "the value of the header 'X-A' holds CR, LF or NUL"),
        Invalid(
            name: "bare LF in a value",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "X-A", value: "b\nc")]),
            message: "holds CR, LF or NUL"),
        Invalid(
            name: "NUL in a value",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "X-A", value: "b\u{0}c")]),
            message: "holds CR, LF or NUL"),
        Invalid(
            name: "CR in a name",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "X-A\r\nB", value: "c")]),
            message: "is not an HTTP token"),
        Invalid(
            name: "empty name", request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "", value: "c")]),
            message: "is not an HTTP token"),
        Invalid(
            name: "the client's own Content-Length",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "content-LENGTH", value: "3")]),
            message: "is set by the client itself"),
        Invalid(
            name: "the client's own Host",
            request: HTTPClientRequest(target: "/", host: "a", headers: [(name: "Host", value: "b")]),
            message: "is set by the client itself"),
        Invalid(
            name: "space in the target", request: HTTPClientRequest(target: "/a b", host: "a"),
            message: "the target must be"),
        Invalid(
            name: "CR LF in the target", request: HTTPClientRequest(target: "/a\r\nX: y", host: "a"),
            message: "the target must be"),
        Invalid(name: "empty host", request: HTTPClientRequest(target: "/", host: ""), message: "the Host value"),
        Invalid(
            name: "CR LF in the host", request: HTTPClientRequest(target: "/", host: "a\r\nX: y"),
            message: "the Host value"),
        Invalid(
            name: "method not a token", request: HTTPClientRequest(method: "PO ST", target: "/", host: "a"),
            message: "the method 'PO ST' is not an HTTP token"),
    ]

    @Test(arguments: invalid)
    func refusesWhatWouldSplitOrBreakTheRequest(_ invalid: Invalid) {
        #expect {
            try invalid.request.serialized()
        } throws: { error in
            guard let error = error as? HTTPClientError else { return false }
            return error.kind == .invalidRequest && error.message.contains(invalid.message)
        }
    }
}
