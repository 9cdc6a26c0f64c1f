import Foundation
import Testing
@testable import SupportHTTP
import SupportRuntime
import TestSupport

@Suite struct HTTPResponseTests {
    static let date = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    func text(_ response: HTTPResponse, keepAlive: Bool, version: HTTPVersion = .http1_1, includeBody: Bool = true)
        -> String
    {
        String(decoding: response.serialized(keepAlive: keepAlive, version: version, includeBody: includeBody, date: Self.date), as: UTF8.self)
    }

    @Test func jsonHasSortedKeysContentLengthAndDate() {
        let response = HTTPResponse.json(.created, ["b": 1, "a": ["z": true, "y": "/x"]] as [String: Any])
        #expect(
            text(response, keepAlive: true)
                == "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                + "Content-Length: 31\r\n\r\n{\"a\":{\"y\":\"/x\",\"z\":true},\"b\":1}")
    }

    @Test func closingAddsConnectionClose() {
        #expect(text(.text(.ok, "hi"), keepAlive: false).contains("\r\nConnection: close\r\n"))
        #expect(text(.text(.ok, "hi"), keepAlive: true, version: .http1_0).contains("\r\nConnection: keep-alive\r\n"))
        #expect(!text(.text(.ok, "hi"), keepAlive: true).contains("Connection"))
    }

    @Test func errorBodyHasTheServerShape() throws {
        let response = HTTPResponse.error(.badRequest, message: "bad \"thing\"")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: [String: Any]]
        #expect(object?["error"]?["status"] as? Int == 400)
        #expect(object?["error"]?["message"] as? String == "bad \"thing\"")
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"error":{"code":"bad_request","message":"bad \"thing\"","status":400}}"#)
    }

    @Test func invalidJSONObjectGives500NotACrash() {
        #expect(HTTPResponse.json(.ok, ["date": Date()]).status == .internalServerError)
    }

    @Test func encodableJSON() {
        struct Item: Encodable { let b = 2, a = "x" }
        #expect(String(decoding: HTTPResponse.json(.ok, encoding: Item()).body, as: UTF8.self) == #"{"a":"x","b":2}"#)
    }

    @Test func serverOwnedAndUnsafeFieldsAreDropped() {
        var headers: HTTPHeaders = ["X-Ok": "1", "Content-Length": "999", "X-Split": "a\r\nSet-Cookie: evil", "Bad Name": "v"]
        headers.add(name: "date", value: "yesterday")
        let wire = text(HTTPResponse(status: .ok, headers: headers, body: Array("abc".utf8)), keepAlive: true)
        #expect(wire == "HTTP/1.1 200 OK\r\nX-Ok: 1\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 3\r\n\r\nabc")
    }

    @Test func headAnswerKeepsContentLengthWithoutBody() {
        let wire = text(.text(.ok, "hello"), keepAlive: true, includeBody: false)
        #expect(wire.hasSuffix("Content-Length: 5\r\n\r\n"))
    }

    @Test func noContentHasNoContentLength() {
        #expect(!text(HTTPResponse(status: .noContent, body: [1]), keepAlive: true).contains("Content-Length"))
    }

    @Test func handlerMayAskToClose() {
        #expect(HTTPResponse(status: .ok, headers: ["Connection": "close"]).requestsClose)
        #expect(!HTTPResponse(status: .ok).requestsClose)
    }
}
