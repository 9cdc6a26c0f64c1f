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

/// The router in process, without sockets: duplicate security headers (issue 20, finding 11) and the escaping of
/// every JSON body it writes (finding 12).
@Suite(.serialized) struct RESTRouterTests {
    static func body(_ response: HTTPResponse) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    }

    @Test(arguments: [
        "Authorization", "Cookie", "Origin", "X-CSRF-Token", "Sec-Fetch-Site", "Content-Length", "Content-Type",
        "Last-Event-ID",
    ])
    func aDuplicatedSecurityHeaderIsRefusedWith400NamingIt(name: String) async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        // Two fields of the name (the second in another case): first-wins would let a proxy that reads the last judge
        // another request than the node does.
        var headers = [(name, "a"), (name.uppercased(), "b")]
        if name == "Authorization" { headers = [(name, "Bearer \(fixture.adminToken)"), (name.lowercased(), "Bearer x")] }
        let response = await fixture.handle(.post, "/api/v1/sessions", body: "{}", headers: headers)
        #expect(response.status == .badRequest, "\(name): \(String(decoding: response.body, as: UTF8.self))")
        let error = Self.body(response)?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "bad_request")
        #expect((error?["message"] as? String)?.contains("more than one \(name) header") == true, "\(error ?? [:])")
        #expect(fixture.node.codes().isEmpty, "nothing was created")
    }

    @Test func theTypedErrorNamesTheHeader() {
        let error = RESTError.duplicateHeader("Origin")
        #expect(error.kind == .duplicateHeader)
        #expect(error.header == "Origin")
        #expect(error.response.status == .badRequest)
    }

    @Test func twoOriginsTheFirstOfThemOurOwnAreRefusedBeforeTheCSRFCheck() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let response = await fixture.handle(
            .post, "/api/v1/login", body: #"{"login":"x","password":"y"}"#,
            headers: [("Authorization", ""), ("Origin", "https://127.0.0.1:7444"), ("Origin", "https://evil.example")])
        #expect(response.status == .badRequest)
    }

    @Test func severalXForwardedForFieldsAreOneListAndAllowed() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let response = await fixture.handle(
            .get, "/api/v1/sessions", headers: [("X-Forwarded-For", "10.0.0.1"), ("X-Forwarded-For", "10.0.0.2")])
        #expect(response.status == .ok)
    }

    /// C1 controls, bidi controls, the separators and DEL, as JSON writes them raw.
    static let hostile = "a\u{9B}b\u{202E}c\u{200E}d\u{2066}e\u{2028}f\u{7F}g\u{85}h"
    static let rawForms: [[UInt8]] = ["\u{9B}", "\u{202E}", "\u{200E}", "\u{2066}", "\u{2028}", "\u{7F}", "\u{85}"]
        .map { Array($0.utf8) }

    static func containsRaw(_ bytes: [UInt8]) -> Bool {
        rawForms.contains { raw in bytes.indices.contains { bytes[$0...].starts(with: raw) } }
    }

    @Test func c1AndBidiControlsLeaveEveryJSONBodyAsEscapes() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let created = await fixture.handle(
            .post, "/api/v1/sessions", body: #"{"description":"a\u009bb\u202ec\u200ed\u2066e\u2028f\u007fg\u0085h"}"#)
        #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
        let code = try #require(Self.body(created)?["code"] as? String)
        let answers = [
            created, await fixture.handle(.get, "/api/v1/sessions/\(code)"), await fixture.handle(.get, "/api/v1/sessions"),
        ]
        for answer in answers {
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(!Self.containsRaw(answer.body), "raw control in \(text)")
            #expect(text.contains(#"a\u009bb\u202ec\u200ed\u2066e\u2028f\u007fg\u0085h"#), "\(text)")
        }
        // Still the same string once decoded.
        #expect((Self.body(answers[1])?["description"] as? String) == Self.hostile)
        // Error bodies too: a path holding them is named in the 404's message.
        let missing = await fixture.handle(.get, "/api/v1/nothing\u{202E}here")
        #expect(missing.status == .notFound)
        #expect(!Self.containsRaw(missing.body), "\(String(decoding: missing.body, as: UTF8.self))")
        #expect(String(decoding: missing.body, as: UTF8.self).contains(#"\u202e"#))
    }

    @Test func aRefusedSignInsAnswerIsHeldForASecondAndCostsNoPasswordCheck() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        var statuses: [Int] = []
        for _ in 0..<7 {
            let answer = await fixture.handle(
                .post, "/api/v1/login", body: #"{"login":"nobody","password":"a guess"}"#,
                headers: [("Authorization", "")])
            statuses.append(answer.status.code)
            if answer.status == .tooManyRequests {
                #expect(answer.delay.map { $0 > .zero && $0 <= .seconds(1) } == true, "the 429 is held: \(answer.delay as Any)")
                #expect(answer.headers["Retry-After"] != nil)
            } else {
                #expect(answer.delay == nil)
            }
        }
        #expect(statuses == [401, 401, 401, 401, 401, 401, 429], "\(statuses)")
    }
}
