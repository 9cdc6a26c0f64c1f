import Foundation
import Testing
import SupportHTTP
import SupporterNode
import SupporterCore
import SupporterModel
@testable import SupporterREST

/// One request to the router in process and what must come back. `path` may hold `{code}`, `{bobCode}`, `{login}`,
/// `{id}`, `{webhook}` and `{delivery}` (``RouterScene/fill(_:)``).
/// ``RouterEndpointTests/everyRouteHasAnAnswerAndARefusal`` reads these through the route table to prove every route
/// has at least one of each.
struct EndpointCase: Sendable, CustomTestStringConvertible {
    var name: String
    var method: HTTPMethod
    var path: String
    var caller: RouterCaller = .admin
    var body: String? = nil
    var headers: [(String, String)] = []
    var status: Int
    /// A part of the error body's message.
    var message: String? = nil
    /// The `Allow` header, exactly.
    var allow: String? = nil
    /// More checks of the answer, with the scene (the node) for state.
    var check: (@Sendable (HTTPResponse, RouterScene) async throws -> Void)? = nil
    /// What the scene needs before the request (after ``check`` so that a trailing closure stays the check).
    var prepare: (@Sendable (RouterScene) async throws -> Void)? = nil

    var testDescription: String { "\(method) \(path) as \(caller) → \(status): \(name)" }
}

/// Serialized: each case starts a node of its own, and the machine has two cores shared with the socket suites.
@Suite(.serialized) struct RouterEndpointTests {
    typealias Case = EndpointCase

    static let console: [Case] = [
        Case(name: "the console's page", method: .get, path: "/", caller: .nobody, status: 200) { answer, _ in
            #expect(answer.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(answer.headers["Cache-Control"] == "no-cache")
            #expect(answer.text.contains("<html"))
        },
        Case(name: "HEAD of the page answers as GET", method: .head, path: "/", caller: .nobody, status: 200),
        Case(name: "other methods on / are 405", method: .post, path: "/", caller: .nobody, status: 405,
             message: "POST is not allowed here", allow: "GET, HEAD"),
        Case(name: "a console file", method: .get, path: "/console.js", caller: .nobody, status: 200) { answer, _ in
            #expect(answer.headers["Content-Type"] == "text/javascript; charset=utf-8")
        },
        Case(name: "/index.html is the page", method: .head, path: "/index.html", caller: .nobody, status: 200),
        Case(name: "no such file", method: .get, path: "/nothing.txt", caller: .nobody, status: 404,
             message: "no such page: /nothing.txt"),
        Case(name: "a file by another method", method: .delete, path: "/console.js", status: 405, allow: "GET, HEAD"),
        Case(name: "deeper paths are no file", method: .get, path: "/a/console.js", caller: .nobody, status: 404,
             message: "no such page: /a/console.js"),
        Case(name: "HEAD of a deeper path", method: .head, path: "/a/b", caller: .nobody, status: 404),
        Case(name: "deeper paths refuse other methods as files do", method: .put, path: "/a/b", caller: .nobody,
             status: 405, allow: "GET, HEAD"),
    ]

    /// The health probes (issue 23), open to anyone. A scene's node does not listen for devices, so `/readyz` says
    /// 503 here; its 200 is driven with a listening node by HealthProbeTests.
    static let probes: [Case] = [
        Case(name: "liveness: the loops answer", method: .get, path: "/livez", caller: .nobody, status: 200) { answer, _ in
            #expect(answer.text == "ok\n")
            #expect(answer.headers["Content-Type"] == "text/plain; charset=utf-8")
        },
        Case(name: "HEAD of liveness", method: .head, path: "/livez", caller: .nobody, status: 200),
        Case(name: "liveness takes no other method", method: .post, path: "/livez", caller: .nobody, status: 405,
             allow: "GET, HEAD"),
        Case(name: "readiness of a node that does not listen", method: .get, path: "/readyz", caller: .nobody,
             status: 503) { answer, _ in #expect(answer.text == "not ready\n") },
        Case(name: "HEAD of readiness", method: .head, path: "/readyz", caller: .nobody, status: 503),
        Case(name: "readiness takes no other method", method: .delete, path: "/readyz", caller: .nobody, status: 405,
             allow: "GET, HEAD"),
    ]

    /// Prometheus metrics (issue 23): a loopback client without a token (the scene's requests come from 127.0.0.1),
    /// an admin API token, not a device token. The 403 of an address outside `--metrics-allow` and the metrics token:
    /// MetricsEndpointTests.
    static let metrics: [Case] = [
        Case(name: "metrics for a loopback client", method: .get, path: "/metrics", caller: .nobody, status: 200) {
            answer, _ in
            #expect(answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
            #expect(answer.text.contains("# TYPE rsup_devices_online gauge\nrsup_devices_online 0\n"))
        },
        Case(name: "metrics with an admin API token", method: .get, path: "/metrics", status: 200),
        Case(name: "HEAD of metrics", method: .head, path: "/metrics", caller: .nobody, status: 200),
        Case(name: "metrics refuse a device token", method: .get, path: "/metrics", caller: .device, status: 403),
        Case(name: "metrics refuse an unknown token as the API does", method: .get, path: "/metrics",
             headers: [("Authorization", "Bearer rsk_unknown")], status: 401),
        Case(name: "metrics take no other method", method: .put, path: "/metrics", caller: .nobody, status: 405,
             allow: "GET, HEAD"),
    ]

    /// Routes whose answer in a scene is 503 because its node does not listen for devices (``probes``).
    static let needAListener: Set<String> = ["/readyz"]

    static let outside: [Case] = [
        Case(name: "an unknown resource, before any authentication", method: .get, path: "/api/v1/nope",
             caller: .nobody, status: 404, message: "no such resource: /api/v1/nope"),
        Case(name: "/api itself", method: .patch, path: "/api", caller: .nobody, status: 404,
             message: "no such resource: /api"),
        Case(name: "another version", method: .get, path: "/api/v2/sessions", status: 404),
        Case(name: "more segments than any route", method: .get, path: "/api/v1/sessions/{code}/connect/x",
             caller: .nobody, status: 404, message: "no such resource"),
        Case(name: "below /users", method: .get, path: "/api/v1/users/a/b", caller: .nobody, status: 404),
        Case(name: "below /me", method: .get, path: "/api/v1/me/x", caller: .nobody, status: 404),
        Case(name: "a duplicated header is refused before routing", method: .get, path: "/api/v1/nope",
             headers: [("Origin", "https://a"), ("Origin", "https://b")], status: 400,
             message: "more than one Origin header"),
        Case(name: "another action on a code, once authenticated", method: .post, path: "/api/v1/sessions/{code}/x",
             status: 404, message: "no such resource: /api/v1/sessions/"),
        Case(name: "another action on a code asks for credentials first", method: .get,
             path: "/api/v1/sessions/{code}/x", caller: .nobody, status: 401),
        Case(name: "another action on a code checks CSRF first", method: .post, path: "/api/v1/sessions/{code}/x",
             caller: .aliceWithoutCSRF, status: 403, message: "X-CSRF-Token"),
    ]

    static let signIn: [Case] = [
        Case(name: "signs in: cookies and the CSRF token", method: .post, path: "/api/v1/login", caller: .nobody,
             body: #"{"login":"alice","password":"password of alice"}"#, status: 200) { answer, _ in
            let cookies = answer.headers.values(for: "Set-Cookie")
            #expect(cookies.count == 2)
            #expect(cookies.first?.hasPrefix("rsup_known=") == true)
            #expect(cookies.last?.hasPrefix("rsup_session=") == true)
            #expect(answer.json?["csrf_token"] is String)
            #expect((answer.json?["account"] as? [String: Any])?["login"] as? String == "alice")
        },
        Case(name: "a wrong password", method: .post, path: "/api/v1/login", caller: .nobody,
             body: #"{"login":"alice","password":"not the one"}"#, status: 401) { answer, _ in
            #expect(answer.headers["WWW-Authenticate"] == #"Bearer realm="rsup""#)
        },
        Case(name: "an unknown member", method: .post, path: "/api/v1/login", caller: .nobody,
             body: #"{"login":"alice","password":"x","x":1}"#, status: 422, message: "unknown member 'x'"),
        Case(name: "another site's sign-in", method: .post, path: "/api/v1/login", caller: .nobody,
             body: #"{"login":"alice","password":"password of alice"}"#,
             headers: [("Origin", "https://evil.example")], status: 403, message: "cross-origin"),
        Case(name: "GET is 405 before anything else", method: .get, path: "/api/v1/login", caller: .nobody,
             status: 405, allow: "POST"),

        Case(name: "signs out: the session ends, the cookie is cleared", method: .post, path: "/api/v1/logout",
             caller: .alice, status: 204) { answer, scene in
            #expect(answer.headers["Set-Cookie"] == BrowserSecurity.clearedCookie)
            let secret = try requireValue(scene.template.sessions["alice"]?.secret)
            #expect(scene.fixture.node.loginSession(secret: secret) == nil)
        },
        Case(name: "an admin token has nothing to end", method: .post, path: "/api/v1/logout", status: 204),
        Case(name: "no credentials", method: .post, path: "/api/v1/logout", caller: .nobody, status: 401),
        Case(name: "the cookie without CSRF token", method: .post, path: "/api/v1/logout", caller: .aliceWithoutCSRF,
             status: 403, message: "X-CSRF-Token"),
        Case(name: "GET is 405 before authentication", method: .get, path: "/api/v1/logout", caller: .nobody,
             status: 405, allow: "POST"),

        Case(name: "who is signed in", method: .get, path: "/api/v1/me", caller: .alice, status: 200) { answer, _ in
            #expect((answer.json?["account"] as? [String: Any])?["role"] as? String == "supporter")
            #expect(answer.json?["csrf_token"] is String)
        },
        Case(name: "an API token has no account", method: .get, path: "/api/v1/me", status: 404,
             message: "an API token has no account"),
        Case(name: "no credentials", method: .get, path: "/api/v1/me", caller: .nobody, status: 401),
        Case(name: "a device token", method: .get, path: "/api/v1/me", caller: .device, status: 403),
        Case(name: "HEAD is 405 before authentication", method: .head, path: "/api/v1/me", caller: .nobody,
             status: 405, allow: "GET"),
    ]

    static let sessions: [Case] = [
        Case(name: "an admin lists every code", method: .get, path: "/api/v1/sessions?limit=1", status: 200) {
            answer, _ in
            #expect(answer.json?["total"] as? Int == 2)
            #expect((answer.json?["sessions"] as? [Any])?.count == 1)
        },
        Case(name: "a supporter sees the unassigned code and not bob's", method: .get, path: "/api/v1/sessions",
             caller: .alice, status: 200) { answer, scene in
            let codes = (answer.json?["sessions"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
            #expect(codes == [scene.code])
        },
        Case(name: "a malformed limit", method: .get, path: "/api/v1/sessions?limit=0", status: 400,
             message: "limit must be a whole number from 1 to 500"),
        Case(name: "a malformed offset", method: .get, path: "/api/v1/sessions?offset=-1", status: 400,
             message: "offset must be a whole number"),
        Case(name: "no credentials", method: .get, path: "/api/v1/sessions", caller: .nobody, status: 401),
        Case(name: "a wrong method is 401 before 405", method: .patch, path: "/api/v1/sessions", caller: .nobody,
             status: 401),
        Case(name: "a wrong method once authenticated", method: .patch, path: "/api/v1/sessions", status: 405,
             message: "PATCH is not allowed here", allow: "GET, POST"),

        Case(name: "creates a code", method: .post, path: "/api/v1/sessions", body: #"{"description":"printer"}"#,
             status: 201) { answer, scene in
            let code = try requireValue(answer.json?["code"] as? String)
            #expect(answer.headers["Location"] == "/api/v1/sessions/\(code)")
            #expect(scene.fixture.node.code(code)?.record.description == "printer")
        },
        Case(name: "a code with a default media descriptor, never shown", method: .post, path: "/api/v1/sessions",
             body: #"{"media_descriptor":"cm9vbT00Mjt0b2tlbj1hYmM="}"#, status: 201) { answer, scene in
            let code = try requireValue(answer.json?["code"] as? String)
            #expect(answer.json?["has_media_descriptor"] as? Bool == true)
            #expect(!answer.text.contains("cm9vbT00Mjt0b2tlbj1hYmM="), "the descriptor is never in an answer")
            #expect(scene.fixture.node.code(code)?.record.mediaDescriptor == Array("room=42;token=abc".utf8))
        },
        Case(name: "a media descriptor that is no Base64", method: .post, path: "/api/v1/sessions",
             body: #"{"media_descriptor":"room=42"}"#, status: 422, message: "media_descriptor must be 1 to 4096 bytes"),
        Case(name: "a media descriptor over 4096 bytes", method: .post, path: "/api/v1/sessions",
             body: #"{"media_descriptor":"\#(String(repeating: "QUFB", count: 1366))"}"#, status: 422,
             message: "media_descriptor must be 1 to 4096 bytes"),
        Case(name: "a code's media descriptor set, then removed", method: .put, path: "/api/v1/sessions/{code}",
             body: #"{"media_descriptor":"cm9vbT03"}"#, status: 200) { answer, scene in
            #expect(answer.json?["has_media_descriptor"] as? Bool == true)
            #expect(scene.fixture.node.code(scene.code)?.record.mediaDescriptor == Array("room=7".utf8))
            let cleared = try await scene.send(.put, "/api/v1/sessions/{code}", as: .admin, body: #"{"media_descriptor":null}"#)
            #expect(cleared.json?["has_media_descriptor"] as? Bool == false, "\(cleared.text)")
            #expect(scene.fixture.node.code(scene.code)?.record.mediaDescriptor == nil)
            let rows = try scene.fixture.node.auditEvents(code: scene.code)
            #expect(!rows.contains { $0.details.values.contains { $0.contains("cm9vbT03") || $0.contains("room=7") } })
        },
        Case(name: "a supporter creates a code for themselves", method: .post, path: "/api/v1/sessions",
             caller: .alice, body: #"{"assigned_supporter":"alice"}"#, status: 201),
        Case(name: "a supporter may not assign to another", method: .post, path: "/api/v1/sessions", caller: .alice,
             body: #"{"assigned_supporter":"bob"}"#, status: 403, message: "only to themselves"),
        Case(name: "not JSON", method: .post, path: "/api/v1/sessions", body: "description", status: 400,
             message: "not valid JSON"),
        Case(name: "an unknown member", method: .post, path: "/api/v1/sessions", body: #"{"colour":"red"}"#,
             status: 422, message: "unknown member 'colour'"),
        Case(name: "the cookie without CSRF token", method: .post, path: "/api/v1/sessions", caller: .aliceWithoutCSRF,
             body: "{}", status: 403, message: "X-CSRF-Token") { _, scene in
            #expect(scene.fixture.node.codes().count == 2, "nothing was created")
        },

        Case(name: "reads a code", method: .get, path: "/api/v1/sessions/{code}", status: 200) { answer, scene in
            #expect(answer.json?["code"] as? String == scene.code)
        },
        Case(name: "no such code", method: .get, path: "/api/v1/sessions/000000000", status: 404,
             message: "no session code 000000000"),
        Case(name: "another supporter's code", method: .get, path: "/api/v1/sessions/{bobCode}", caller: .alice,
             status: 403, message: "assigned to another supporter"),
        Case(name: "a wrong method on a code", method: .post, path: "/api/v1/sessions/{code}", status: 405,
             allow: "GET, PUT, DELETE"),
        Case(name: "a wrong method on a code is 401 first", method: .post, path: "/api/v1/sessions/{code}",
             caller: .nobody, status: 401),

        Case(name: "changes a code", method: .put, path: "/api/v1/sessions/{code}",
             body: #"{"description":"new"}"#, status: 200) { answer, scene in
            #expect(answer.json?["description"] as? String == "new")
            #expect(scene.fixture.node.code(scene.code)?.record.description == "new")
        },
        Case(name: "closes a code, which cannot be reopened", method: .put, path: "/api/v1/sessions/{code}",
             body: #"{"state":"closed"}"#, status: 200) { _, scene in
            let again = await scene.fixture.handle(.put, "/api/v1/sessions/\(scene.code)", body: #"{"state":"open"}"#)
            #expect(again.status == .conflict)
            #expect(again.errorMessage == "a closed session code cannot be reopened")
        },
        Case(name: "a body that is no object", method: .put, path: "/api/v1/sessions/{code}", body: "[]",
             status: 400, message: "the body must be a JSON object"),
        Case(name: "changing another supporter's code", method: .put, path: "/api/v1/sessions/{bobCode}",
             caller: .alice, body: "{}", status: 403),

        Case(name: "deletes a code", method: .delete, path: "/api/v1/sessions/{code}", status: 204) { _, scene in
            #expect(scene.fixture.node.code(scene.code) == nil)
        },
        Case(name: "deleting no such code", method: .delete, path: "/api/v1/sessions/000000000", status: 404),

        Case(name: "connect needs a device on the code", method: .post, path: "/api/v1/sessions/{code}/connect",
             caller: .alice, body: "{}", status: 409, message: "no device is online"),
        Case(name: "connect is sent as an account, never a token", method: .post,
             path: "/api/v1/sessions/{code}/connect", body: "{}", status: 403, message: "sign in (POST /api/v1/login)"),
        Case(name: "connect with an unknown connection type", method: .post, path: "/api/v1/sessions/{code}/connect",
             caller: .alice, body: #"{"connection_type":"telepathy"}"#, status: 422, message: "connection_type"),
        Case(name: "connect on another's code", method: .post, path: "/api/v1/sessions/{bobCode}/connect",
             caller: .alice, body: "{}", status: 403),
        Case(name: "connect by GET, once authenticated", method: .get, path: "/api/v1/sessions/{code}/connect",
             status: 405, allow: "POST"),

        Case(name: "cancel needs a device on the code", method: .post, path: "/api/v1/sessions/{code}/cancel",
             status: 409, message: "no device is online"),
        Case(name: "cancel on no such code", method: .post, path: "/api/v1/sessions/000000000/cancel", status: 404),
        Case(name: "cancel by DELETE is 401 first", method: .delete, path: "/api/v1/sessions/{code}/cancel",
             caller: .nobody, status: 401),

        Case(name: "end needs a device on the code", method: .post, path: "/api/v1/sessions/{code}/end",
             caller: .root, status: 409, message: "no device is online"),
        Case(name: "end on another's code", method: .post, path: "/api/v1/sessions/{bobCode}/end", caller: .alice,
             status: 403),
        Case(name: "end by PUT", method: .put, path: "/api/v1/sessions/{code}/end", status: 405, allow: "POST"),

        Case(name: "connect with a media descriptor that is no Base64", method: .post,
             path: "/api/v1/sessions/{code}/connect", caller: .alice, body: #"{"media_descriptor":"%%%"}"#, status: 422,
             message: "media_descriptor must be 1 to 4096 bytes"),
        Case(name: "connect with a media descriptor over 4096 bytes", method: .post,
             path: "/api/v1/sessions/{code}/connect", caller: .alice,
             body: #"{"media_descriptor":"\#(String(repeating: "AAAA", count: 1366))"}"#, status: 422,
             message: "media_descriptor must be 1 to 4096 bytes"),
        Case(name: "connect with a media descriptor needs a device too", method: .post,
             path: "/api/v1/sessions/{code}/connect", caller: .alice, body: #"{"media_descriptor":"cm9vbT00Mg=="}"#,
             status: 409, message: "no device is online"),

        Case(name: "ask needs a device in a session", method: .post, path: "/api/v1/sessions/{code}/ask",
             body: #"{"feature":"remote_control","text":"to click for you"}"#, status: 409,
             message: "no device is online"),
        Case(name: "ask for an unknown feature", method: .post, path: "/api/v1/sessions/{code}/ask",
             body: #"{"feature":"mind_reading"}"#, status: 422, message: "feature: unknown value 'mind_reading'"),
        Case(name: "ask without a feature", method: .post, path: "/api/v1/sessions/{code}/ask", body: "{}",
             status: 422, message: "feature is required"),
        Case(name: "ask on another's code", method: .post, path: "/api/v1/sessions/{bobCode}/ask", caller: .alice,
             body: #"{"feature":"chat"}"#, status: 403),
        Case(name: "ask by GET", method: .get, path: "/api/v1/sessions/{code}/ask", status: 405, allow: "POST"),

        Case(name: "withdrawing an ask needs a device in a session", method: .post,
             path: "/api/v1/sessions/{code}/ask/withdraw", caller: .alice, body: #"{"feature":"remote_control"}"#,
             status: 409, message: "no device is online") { _, scene in
            let rows = try scene.fixture.node.auditEvents(code: scene.code)
            #expect(!rows.contains { $0.kind.rawValue == "feature_ask_withdrawn" }, "a refusal is not audited")
        },
        Case(name: "withdrawing with the admin token needs a device too", method: .post,
             path: "/api/v1/sessions/{code}/ask/withdraw", body: #"{"feature":"chat"}"#, status: 409,
             message: "no device is online"),
        Case(name: "withdrawing an unknown feature", method: .post, path: "/api/v1/sessions/{code}/ask/withdraw",
             body: #"{"feature":"mind_reading"}"#, status: 422, message: "feature: unknown value 'mind_reading'"),
        Case(name: "withdrawing without a feature", method: .post, path: "/api/v1/sessions/{code}/ask/withdraw",
             body: "{}", status: 422, message: "feature is required"),
        Case(name: "a withdrawal takes no text", method: .post, path: "/api/v1/sessions/{code}/ask/withdraw",
             body: #"{"feature":"chat","text":"never mind"}"#, status: 422, message: "unknown member 'text'"),
        Case(name: "a withdrawal that is no JSON", method: .post, path: "/api/v1/sessions/{code}/ask/withdraw",
             body: "{", status: 400, message: "not valid JSON"),
        Case(name: "withdrawing on another's code", method: .post, path: "/api/v1/sessions/{bobCode}/ask/withdraw",
             caller: .alice, body: #"{"feature":"chat"}"#, status: 403),
        Case(name: "withdrawing on no such code", method: .post, path: "/api/v1/sessions/000000000/ask/withdraw",
             body: #"{"feature":"chat"}"#, status: 404),
        Case(name: "withdrawing without CSRF token", method: .post, path: "/api/v1/sessions/{code}/ask/withdraw",
             caller: .aliceWithoutCSRF, body: #"{"feature":"chat"}"#, status: 403, message: "X-CSRF-Token"),
        Case(name: "withdrawing by GET", method: .get, path: "/api/v1/sessions/{code}/ask/withdraw", status: 405,
             allow: "POST"),

        Case(name: "chat needs a device in a session", method: .post, path: "/api/v1/sessions/{code}/chat",
             caller: .alice, body: #"{"text":"Hello <b>there</b>"}"#, status: 409, message: "no device is online"),
        Case(name: "chat text over 4096 bytes", method: .post, path: "/api/v1/sessions/{code}/chat",
             body: #"{"text":"\#(String(repeating: "é", count: 2049))"}"#, status: 422, message: "4096 bytes"),
        Case(name: "chat without text", method: .post, path: "/api/v1/sessions/{code}/chat", body: #"{"text":""}"#,
             status: 422),
        Case(name: "chat asks for credentials first", method: .post, path: "/api/v1/sessions/{code}/chat",
             caller: .nobody, body: #"{"text":"hi"}"#, status: 401),

        Case(name: "a message needs a device in a session", method: .post, path: "/api/v1/sessions/{code}/messages",
             body: #"{"content_type":"application/json","body":"eyJhIjoxfQ=="}"#, status: 409,
             message: "no device is online"),
        Case(name: "a message body that is no Base64", method: .post, path: "/api/v1/sessions/{code}/messages",
             body: #"{"content_type":"application/json","body":"not base64!"}"#, status: 422,
             message: "body must be 1 to 15872 bytes"),
        Case(name: "a message with a content type holding a space", method: .post,
             path: "/api/v1/sessions/{code}/messages", body: #"{"content_type":"text/plain; x","body":"eA=="}"#,
             status: 422, message: "content_type"),
        Case(name: "a message by PUT", method: .put, path: "/api/v1/sessions/{code}/messages", status: 405,
             allow: "GET, POST"),
        Case(name: "the messages and files of a code, with contents", method: .get,
             path: "/api/v1/sessions/{code}/messages", caller: .alice, status: 200) { answer, scene in
            let events = try requireValue(answer.json?["events"] as? [[String: Any]])
            #expect(events.map { $0["kind"] as? String } == ["file_received", "file_received"])
            let content = try requireValue(events.first?["content"] as? [String: Any])
            #expect(content["name"] as? String == RouterSceneTemplate.fileName)
            #expect(content["download"] as? String == "/api/v1/sessions/\(scene.code)/files/\(scene.fileID)")
            #expect(content["size"] as? Int == RouterSceneTemplate.fileBytes.count)
            #expect(events.last?["content"] is NSNull, "past its retention: null")
            #expect(answer.json?["next_after_id"] is NSNull)
        },
        Case(name: "the messages after the last one", method: .get,
             path: "/api/v1/sessions/{code}/messages?after_id={goneFile}", status: 200) { answer, _ in
            #expect((answer.json?["events"] as? [Any])?.isEmpty == true, "\(answer.text)")
        },
        Case(name: "the messages of another's code", method: .get, path: "/api/v1/sessions/{bobCode}/messages",
             caller: .alice, status: 403),
        Case(name: "a page of no messages", method: .get, path: "/api/v1/sessions/{code}/messages?limit=0",
             status: 400, message: "limit must be a whole number from 1 to 500"),

        Case(name: "the files a device sent", method: .get, path: "/api/v1/sessions/{code}/files", caller: .alice,
             status: 200) { answer, scene in
            let files = try requireValue(answer.json?["files"] as? [[String: Any]])
            #expect(files.count == 2)
            #expect(files.first?["state"] as? String == "received")
            #expect(files.first?["download"] as? String == "/api/v1/sessions/\(scene.code)/files/\(scene.fileID)")
            #expect(files.last?["download"] is NSNull, "past its retention: no download")
        },
        Case(name: "the files of another's code", method: .get, path: "/api/v1/sessions/{bobCode}/files",
             caller: .alice, status: 403),
        Case(name: "files are not replaced", method: .put, path: "/api/v1/sessions/{code}/files", status: 405,
             allow: "GET, POST"),
        Case(name: "a file to the device needs a device in a session", method: .post,
             path: "/api/v1/sessions/{code}/files?name=report.txt", body: "hello", status: 409,
             message: "no device is online"),
        Case(name: "a file to the device needs a name", method: .post, path: "/api/v1/sessions/{code}/files",
             body: "hello", status: 422, message: "name: the file's name"),
        Case(name: "a file name with a control character", method: .post,
             path: "/api/v1/sessions/{code}/files?name=a%1Bb", body: "hello", status: 422, message: "name"),
        Case(name: "a file name with a path", method: .post,
             path: "/api/v1/sessions/{code}/files?name=..%2Fetc%2Fpasswd", body: "hello", status: 422, message: "name"),
        Case(name: "a file name with a bidi override", method: .post,
             path: "/api/v1/sessions/{code}/files?name=photo%E2%80%AEgpj.exe", body: "hello", status: 422,
             message: "name"),
        Case(name: "an empty file", method: .post, path: "/api/v1/sessions/{code}/files?name=a.txt", body: "",
             status: 422, message: "the file is empty"),
        Case(name: "a file to another's device", method: .post, path: "/api/v1/sessions/{bobCode}/files?name=a.txt",
             caller: .alice, body: "hello", status: 403),
        Case(name: "a file downloads as an attachment that never runs", method: .get,
             path: "/api/v1/sessions/{code}/files/{file}", caller: .alice, status: 200) { answer, _ in
            #expect(answer.body == RouterSceneTemplate.fileBytes)
            #expect(answer.headers["Content-Type"] == "application/octet-stream")
            #expect(answer.headers["X-Content-Type-Options"] == "nosniff")
            #expect(answer.headers["Cache-Control"] == "no-store")
            #expect(answer.headers["Content-Security-Policy"] == "default-src 'none'; sandbox")
            #expect(
                answer.headers["Content-Disposition"]
                    == #"attachment; filename="<script>alert(1)<_script> _report__.txt"; filename*=UTF-8''%3Cscript%3Ealert%281%29%3C%2Fscript%3E%20%22report%22%3B.txt"#)
        },
        Case(name: "a file past its retention", method: .get, path: "/api/v1/sessions/{code}/files/{goneFile}",
             status: 410, message: "no longer kept"),
        Case(name: "a file of another code", method: .get, path: "/api/v1/sessions/{bobCode}/files/{file}",
             status: 404, message: "no file"),
        Case(name: "no such file", method: .get, path: "/api/v1/sessions/{code}/files/99999999", status: 404),
        Case(name: "a file id that is no number", method: .get, path: "/api/v1/sessions/{code}/files/x1", status: 404),
        Case(name: "a file of another's code", method: .get, path: "/api/v1/sessions/{bobCode}/files/{file}",
             caller: .alice, status: 403),
        Case(name: "a file is not deleted here", method: .delete, path: "/api/v1/sessions/{code}/files/{file}",
             status: 405, allow: "GET"),

        Case(name: "the report of a code without sessions", method: .get, path: "/api/v1/sessions/{code}/report",
             caller: .alice, status: 200) { answer, scene in
            let report = try requireValue(answer.json)
            #expect(report["code"] as? String == scene.code)
            #expect((report["sessions"] as? [Any])?.isEmpty == true, "\(answer.text)")
            #expect(report["devices"] as? [String] == [])
        },
        Case(name: "the report of another's code", method: .get, path: "/api/v1/sessions/{bobCode}/report",
             caller: .alice, status: 403),
        Case(name: "the report of no such code", method: .get, path: "/api/v1/sessions/000000000/report", status: 404),
        Case(name: "the report by POST", method: .post, path: "/api/v1/sessions/{code}/report", status: 405,
             allow: "GET"),
        Case(name: "every session of a time range as CSV", method: .get,
             path: "/api/v1/sessions/reports?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z", status: 200) {
            answer, _ in
            #expect(answer.headers["Content-Type"] == "text/csv; charset=utf-8; header=present")
            #expect(answer.headers["Content-Disposition"] == #"attachment; filename="sessions.csv""#)
            #expect(answer.text.hasPrefix("code,device,request_id,"), "\(answer.text)")
        },
        Case(name: "the CSV needs a range", method: .get, path: "/api/v1/sessions/reports?from=2000-01-01T00:00:00Z",
             status: 400, message: "from and to are required"),
        Case(name: "the CSV is for admins", method: .get,
             path: "/api/v1/sessions/reports?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z", caller: .alice,
             status: 403),
    ]

    static let audit: [Case] = [
        Case(name: "the trail, newest first", method: .get, path: "/api/v1/audit?limit=2", status: 200) { answer, _ in
            let events = try requireValue(answer.json?["events"] as? [[String: Any]])
            #expect(events.count == 2)
            let ids = events.compactMap { $0["id"] as? Int }
            #expect(ids == ids.sorted(by: >))
        },
        Case(name: "a supporter reads one code's trail", method: .get, path: "/api/v1/audit?code={code}",
             caller: .alice, status: 200),
        Case(name: "a supporter reads one code at a time", method: .get, path: "/api/v1/audit", caller: .alice,
             status: 403, message: "one code at a time"),
        Case(name: "a malformed before_id", method: .get, path: "/api/v1/audit?before_id=x", status: 400,
             message: "before_id must be a whole number"),
        Case(name: "POST is 405 before authentication", method: .post, path: "/api/v1/audit", caller: .nobody,
             status: 405, allow: "GET"),

        Case(name: "the live stream", method: .get, path: "/api/v1/events", caller: .alice, status: 200) { answer, _ in
            #expect(answer.headers["Content-Type"] == "text/event-stream")
            #expect(answer.headers["Cache-Control"] == "no-store")
            #expect(answer.stream != nil)
        },
        Case(name: "a malformed Last-Event-ID", method: .get, path: "/api/v1/events",
             headers: [("Last-Event-ID", "x")], status: 400, message: "Last-Event-ID must be an event id"),
        Case(name: "no credentials", method: .get, path: "/api/v1/events", caller: .nobody, status: 401),
        Case(name: "DELETE is 405 before authentication", method: .delete, path: "/api/v1/events", caller: .nobody,
             status: 405, allow: "GET"),
    ]

    static let users: [Case] = [
        Case(name: "lists the accounts", method: .get, path: "/api/v1/users", caller: .root, status: 200) {
            answer, _ in
            let logins = (answer.json?["users"] as? [[String: Any]])?.compactMap { $0["login"] as? String }
            #expect(logins.map(Set.init) == ["root", "alice", "bob"])
        },
        Case(name: "a supporter is no admin", method: .get, path: "/api/v1/users", caller: .alice, status: 403,
             message: "only an admin may do this"),
        Case(name: "a wrong method by a supporter is 403 before 405", method: .patch, path: "/api/v1/users",
             caller: .alice, status: 403),
        Case(name: "a wrong method by an admin", method: .delete, path: "/api/v1/users", status: 405,
             allow: "GET, POST"),

        Case(name: "adds an account", method: .post, path: "/api/v1/users",
             body: #"{"login":"carol","display_name":"Carol","password":"password of carol"}"#, status: 201) {
            answer, scene in
            #expect(answer.headers["Location"] == "/api/v1/users/carol")
            #expect(scene.fixture.node.account("carol")?.role == .supporter)
        },
        Case(name: "an existing login", method: .post, path: "/api/v1/users",
             body: #"{"login":"alice","display_name":"A","password":"password of alice"}"#, status: 409),
        Case(name: "a missing member", method: .post, path: "/api/v1/users", body: #"{"login":"dave"}"#, status: 422),
        Case(name: "no credentials", method: .post, path: "/api/v1/users", caller: .nobody, body: "{}", status: 401),

        Case(name: "reads an account", method: .get, path: "/api/v1/users/{login}", status: 200) { answer, _ in
            #expect(answer.json?["login"] as? String == "alice")
        },
        Case(name: "no such account", method: .get, path: "/api/v1/users/nobody", status: 404,
             message: "no account 'nobody'"),
        Case(name: "a wrong method on an account", method: .delete, path: "/api/v1/users/{login}", status: 405,
             allow: "GET, PUT"),
        Case(name: "a wrong method on an account by a supporter", method: .delete, path: "/api/v1/users/{login}",
             caller: .bob, status: 403),

        Case(name: "changes an account", method: .put, path: "/api/v1/users/{login}", caller: .root,
             body: #"{"display_name":"Alice M."}"#, status: 200) { answer, scene in
            #expect(answer.json?["display_name"] as? String == "Alice M.")
            #expect(scene.fixture.node.account("alice")?.displayName == "Alice M.")
        },
        Case(name: "the last admin stays an admin", method: .put, path: "/api/v1/users/root",
             body: #"{"role":"supporter"}"#, status: 409),
        Case(name: "an unknown role", method: .put, path: "/api/v1/users/{login}", body: #"{"role":"owner"}"#,
             status: 422),
        Case(name: "changing no such account", method: .put, path: "/api/v1/users/nobody", body: "{}", status: 404),
    ]

    static let tokens: [Case] = [
        Case(name: "lists the tokens, never their secrets", method: .get, path: "/api/v1/tokens", status: 200) {
            answer, scene in
            let tokens = try requireValue(answer.json?["tokens"] as? [[String: Any]])
            #expect(tokens.contains { $0["id"] as? String == scene.deviceTokenID })
            #expect(!answer.text.contains(scene.deviceToken))
        },
        Case(name: "a device token may not", method: .get, path: "/api/v1/tokens", caller: .device, status: 403),
        Case(name: "a supporter may not", method: .get, path: "/api/v1/tokens", caller: .bob, status: 403,
             message: "only an admin may do this"),

        Case(name: "issues a token, shown once", method: .post, path: "/api/v1/tokens",
             body: #"{"scope":"device","label":"kiosk"}"#, status: 201) { answer, scene in
            let token = try requireValue(answer.json?["token"] as? String)
            #expect(scene.fixture.node.tokenRecord(of: token)?.label == "kiosk")
        },
        Case(name: "an unknown scope", method: .post, path: "/api/v1/tokens", body: #"{"scope":"god"}"#, status: 422),
        Case(name: "a wrong method", method: .put, path: "/api/v1/tokens", status: 405, allow: "GET, POST"),

        Case(name: "revokes a token", method: .delete, path: "/api/v1/tokens/{id}", status: 204) { _, scene in
            #expect(scene.fixture.node.tokenRecord(of: scene.deviceToken) == nil)
        },
        Case(name: "revoking no such token", method: .delete, path: "/api/v1/tokens/nothing", status: 404),
        Case(name: "reading one token is no method", method: .get, path: "/api/v1/tokens/{id}", status: 405,
             allow: "DELETE"),
        Case(name: "a supporter is refused before the method", method: .get, path: "/api/v1/tokens/{id}",
             caller: .alice, status: 403),
    ]

    /// Webhook endpoints (admins only). The scene has one endpoint of every kind, `{webhook}`, with the delivery of its
    /// own `webhook_created` row, `{delivery}`; nothing delivers in a scene (no dispatcher runs).
    static let webhooks: [Case] = [
        Case(name: "lists the endpoints, never their secrets", method: .get, path: "/api/v1/webhooks", status: 200) {
            answer, scene in
            let hooks = try requireValue(answer.json?["webhooks"] as? [[String: Any]])
            #expect(hooks.map { $0["id"] as? String } == [scene.webhookID])
            #expect(hooks.first?["url"] as? String == RouterSceneTemplate.webhookURL)
            #expect(hooks.first?["event_kinds"] as? [String] == ["*"])
            #expect(hooks.first?["pending"] as? Int ?? 0 >= 1, "\(answer.text)")
            #expect(hooks.first?["previous_secret_until"] is NSNull)
            #expect(hooks.first?.keys.contains("secret") == false)
            #expect(!answer.text.contains("whsec_"))
        },
        Case(name: "an admin account lists them too", method: .get, path: "/api/v1/webhooks", caller: .root,
             status: 200),
        Case(name: "a supporter may not", method: .get, path: "/api/v1/webhooks", caller: .alice, status: 403,
             message: "only an admin may do this"),
        Case(name: "a device token may not", method: .get, path: "/api/v1/webhooks", caller: .device, status: 403),
        Case(name: "a wrong method by a supporter is 403 before 405", method: .put, path: "/api/v1/webhooks",
             caller: .bob, status: 403),
        Case(name: "a wrong method by an admin", method: .put, path: "/api/v1/webhooks", status: 405,
             allow: "GET, POST"),

        Case(name: "registers an endpoint, its secret shown once", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://helpdesk.example.com/rs?token=abc","event_kinds":["session_ended","*"],"#
                 + #""description":"tickets"}"#, status: 201) { answer, scene in
            let id = try requireValue(answer.json?["id"] as? String)
            let secret = try requireValue(answer.json?["secret"] as? String)
            #expect(id.hasPrefix("wh_") && id.count == 19)
            #expect(secret.hasPrefix("whsec_") && secret.count == 54)
            #expect(answer.json?["event_kinds"] as? [String] == ["*"], "a list naming * is every kind")
            #expect(answer.json?["enabled"] as? Bool == true)
            #expect(answer.json?["description"] as? String == "tickets")
            #expect(answer.headers["Location"] == nil)
            let stored = try scene.fixture.node.webhookEndpoints().first { $0.id == id }
            #expect(stored?.secret == secret)
            let fetched = try await scene.send(.get, "/api/v1/webhooks/\(id)", as: .admin)
            #expect(fetched.json?.keys.contains("secret") == false, "\(fetched.text)")
            // Audited with the host only: never the URL's path and query, never the secret.
            let row = try requireValue(
                scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_created" })
            #expect(row.details["endpoint"] == id)
            #expect(row.details["host"] == "helpdesk.example.com")
            #expect(!row.details.values.contains { $0.contains("token=abc") || $0.contains(secret) }, "\(row.details)")
        },
        Case(name: "an admin account registers one, disabled", method: .post, path: "/api/v1/webhooks", caller: .root,
             body: #"{"url":"https://192.0.2.7/","event_kinds":["signed_in"],"enabled":false,"description":""}"#,
             status: 201) { answer, _ in
            #expect(answer.json?["enabled"] as? Bool == false)
            #expect(answer.json?["description"] is NSNull, "an empty description is none")
        },
        Case(name: "plain http:// is refused", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"http://helpdesk.example.com/rs","event_kinds":["*"]}"#, status: 422,
             message: "plain http://"),
        Case(name: "an unknown kind", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://192.0.2.1/","event_kinds":["telepathy"]}"#, status: 422,
             message: "'telepathy' is not an event kind"),
        Case(name: "no kinds", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://192.0.2.1/","event_kinds":[]}"#, status: 422,
             message: "event_kinds must list 1 to 64 values"),
        Case(name: "an unknown member", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://192.0.2.1/","event_kinds":["*"],"secret":"whsec_mine"}"#, status: 422,
             message: "unknown member 'secret'"),
        Case(name: "a description over 200 characters", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://192.0.2.1/","event_kinds":["*"],"description":"\#(String(repeating: "x", count: 201))"#
                 + #""}"#, status: 422, message: "description must have 0 to 200 characters"),
        Case(name: "not JSON", method: .post, path: "/api/v1/webhooks", body: "{", status: 400,
             message: "not valid JSON") { _, scene in
            let endpoints = try scene.fixture.node.webhookEndpoints()
            #expect(endpoints.count == 1, "nothing was registered")
        },
        Case(name: "the 51st endpoint", method: .post, path: "/api/v1/webhooks",
             body: #"{"url":"https://192.0.2.1/51","event_kinds":["*"]}"#, status: 409,
             message: "at most 50 webhook endpoints",
             prepare: { scene in
                 for index in 2...50 {
                     _ = try scene.fixture.node.addWebhookEndpoint(
                         url: "https://192.0.2.1/\(index)", eventKinds: ["code_created"], description: nil,
                         isEnabled: false, by: .local)
                 }
             }),

        Case(name: "reads an endpoint, without its secret", method: .get, path: "/api/v1/webhooks/{webhook}",
             status: 200) { answer, scene in
            #expect(answer.json?["id"] as? String == scene.webhookID)
            #expect(answer.json?["description"] as? String == "scene")
            #expect(answer.json?.keys.contains("secret") == false)
        },
        Case(name: "no such endpoint", method: .get, path: "/api/v1/webhooks/wh_0000000000000000", status: 404,
             message: "no webhook endpoint has the id wh_0000000000000000"),
        Case(name: "a supporter may not read one", method: .get, path: "/api/v1/webhooks/{webhook}", caller: .bob,
             status: 403),
        Case(name: "a wrong method on an endpoint", method: .post, path: "/api/v1/webhooks/{webhook}", status: 405,
             allow: "GET, PATCH, DELETE"),

        Case(name: "changes an endpoint", method: .patch, path: "/api/v1/webhooks/{webhook}",
             body: #"{"enabled":false,"description":null}"#, status: 200) { answer, scene in
            #expect(answer.json?["enabled"] as? Bool == false)
            #expect(answer.json?["description"] is NSNull)
            #expect(answer.json?["url"] as? String == RouterSceneTemplate.webhookURL, "an absent member stays")
            #expect(answer.json?.keys.contains("secret") == false)
            let stored = try scene.fixture.node.webhookEndpoints().first { $0.id == scene.webhookID }
            #expect(stored?.isEnabled == false)
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" }
            #expect(row?.details["changed"] == "enabled,description", "\(String(describing: row))")
        },
        Case(name: "the cookie without CSRF token", method: .patch, path: "/api/v1/webhooks/{webhook}",
             caller: .aliceWithoutCSRF, body: "{}", status: 403, message: "X-CSRF-Token"),
        Case(name: "a malformed body", method: .patch, path: "/api/v1/webhooks/{webhook}", body: "{", status: 400,
             message: "not valid JSON"),
        Case(name: "a body that is no object, before the id is looked up", method: .patch,
             path: "/api/v1/webhooks/wh_0000000000000000", body: "[]", status: 400,
             message: "the body must be a JSON object"),
        Case(name: "an unknown member in a change", method: .patch, path: "/api/v1/webhooks/{webhook}",
             body: #"{"colour":"red"}"#, status: 422, message: "unknown member 'colour'"),
        Case(name: "a change to plain http://", method: .patch, path: "/api/v1/webhooks/{webhook}",
             body: #"{"url":"http://192.0.2.1/"}"#, status: 422, message: "plain http://") { _, scene in
            let stored = try scene.fixture.node.webhookEndpoints().first { $0.id == scene.webhookID }
            #expect(stored?.url == RouterSceneTemplate.webhookURL, "a refused change changes nothing")
        },
        Case(name: "nothing to change", method: .patch, path: "/api/v1/webhooks/{webhook}", body: "{}", status: 422,
             message: "nothing to change"),
        Case(name: "changing no such endpoint", method: .patch, path: "/api/v1/webhooks/wh_0000000000000000",
             body: #"{"enabled":true}"#, status: 404, message: "no webhook endpoint has the id"),

        Case(name: "deletes an endpoint and its log", method: .delete, path: "/api/v1/webhooks/{webhook}",
             status: 204) { answer, scene in
            #expect(answer.body.isEmpty)
            let endpoints = try scene.fixture.node.webhookEndpoints()
            #expect(endpoints.isEmpty)
            let log = try scene.fixture.node.webhookDeliveries(
                endpointID: scene.webhookID, beforeID: nil, state: nil, limit: 10)
            #expect(log.isEmpty)
        },
        Case(name: "deleting no such endpoint", method: .delete, path: "/api/v1/webhooks/wh_0000000000000000",
             status: 404),

        Case(name: "rotates the secret, shown once; the old one signs 24 h more", method: .post,
             path: "/api/v1/webhooks/{webhook}/secret", status: 200) { answer, scene in
            let secret = try requireValue(answer.json?["secret"] as? String)
            #expect(secret.hasPrefix("whsec_"))
            let stored = try requireValue(scene.fixture.node.webhookEndpoints().first { $0.id == scene.webhookID })
            #expect(stored.secret == secret)
            #expect(stored.previousSecret != nil && stored.previousSecret != secret)
            let until = try requireValue(answer.json?["previous_secret_until"] as? String)
            #expect(RESTTime.parse(until).map { abs($0.timeIntervalSinceNow - 86_400) < 60 } == true, "\(until)")
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" }
            #expect(row?.details["changed"] == "secret")
            #expect(!(row?.details.values.contains { $0.contains(secret) } ?? true))
        },
        Case(name: "a rotation with the body {}", method: .post, path: "/api/v1/webhooks/{webhook}/secret", body: "{}",
             status: 200),
        Case(name: "a rotation takes no body", method: .post, path: "/api/v1/webhooks/{webhook}/secret",
             body: #"{"secret":"whsec_mine"}"#, status: 422, message: "rotating a secret takes no body"),
        Case(name: "rotating no such endpoint's secret", method: .post,
             path: "/api/v1/webhooks/wh_0000000000000000/secret", status: 404),
        Case(name: "a secret is never read", method: .get, path: "/api/v1/webhooks/{webhook}/secret", status: 405,
             allow: "POST"),

        Case(name: "the delivery log, newest first", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries",
             status: 200) { answer, scene in
            let deliveries = try requireValue(answer.json?["deliveries"] as? [[String: Any]])
            let ids = deliveries.compactMap { $0["id"] as? Int }
            #expect(ids == ids.sorted(by: >) && ids.contains(Int(scene.webhookDeliveryID)), "\(answer.text)")
            #expect(answer.json?["next_before_id"] is NSNull)
            let first = try requireValue(deliveries.first { $0["id"] as? Int == Int(scene.webhookDeliveryID) })
            #expect(first["event_kind"] as? String == "webhook_created")
            #expect(first["state"] as? String == "pending")
            #expect(first["attempts"] as? Int == 0)
            #expect(first["redelivery_of"] is NSNull)
            #expect(
                Set(first.keys) == [
                    "id", "event_id", "event_kind", "code", "state", "attempts", "created_at", "next_attempt_at",
                    "last_attempt_at", "last_status", "last_error", "finished_at", "redelivery_of",
                ])
        },
        Case(name: "a page of one", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries?limit=1&state=pending",
             status: 200) { answer, _ in
            let deliveries = try requireValue(answer.json?["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 1)
            #expect(answer.json?["next_before_id"] as? Int == deliveries.first?["id"] as? Int)
        },
        Case(name: "a malformed limit", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries?limit=0",
             status: 400, message: "limit must be a whole number from 1 to 500"),
        Case(name: "an unknown state", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries?state=lost",
             status: 400, message: "state must be pending, delivered or failed"),
        Case(name: "a malformed before_id", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries?before_id=x",
             status: 400, message: "before_id must be a whole number"),
        Case(name: "the log of no such endpoint", method: .get,
             path: "/api/v1/webhooks/wh_0000000000000000/deliveries", status: 404),
        Case(name: "a supporter may not read a log", method: .get, path: "/api/v1/webhooks/{webhook}/deliveries",
             caller: .alice, status: 403),

        Case(name: "redelivers a delivery's event", method: .post,
             path: "/api/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver", status: 202) { answer, scene in
            #expect(answer.json?["redelivery_of"] as? Int == Int(scene.webhookDeliveryID))
            #expect(answer.json?["state"] as? String == "pending")
            #expect(answer.json?["event_kind"] as? String == "webhook_created")
            let id = try requireValue(answer.json?["id"] as? Int)
            #expect(id > Int(scene.webhookDeliveryID))
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_redelivered" }
            #expect(row?.details["delivery"] == "\(id)")
            #expect(row?.details["redelivery_of"] == "\(scene.webhookDeliveryID)")
        },
        Case(name: "no such delivery", method: .post,
             path: "/api/v1/webhooks/{webhook}/deliveries/99999999/redeliver", status: 404,
             message: "has no delivery 99999999"),
        Case(name: "a delivery id that is no number", method: .post,
             path: "/api/v1/webhooks/{webhook}/deliveries/x1/redeliver", status: 404, message: "no delivery 'x1'"),
        Case(name: "a delivery of no such endpoint", method: .post,
             path: "/api/v1/webhooks/wh_0000000000000000/deliveries/{delivery}/redeliver", status: 404),
        Case(name: "redelivering by GET", method: .get,
             path: "/api/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver", status: 405, allow: "POST"),
        Case(name: "a device token may not redeliver", method: .post,
             path: "/api/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver", caller: .device, status: 403),

        Case(name: "makes the backed-off deliveries due now", method: .post, path: "/api/v1/webhooks/{webhook}/retry",
             status: 202) { answer, scene in
            #expect(answer.json.map { Set($0.keys) } == ["retried"], "\(answer.text)")
            let pending = try scene.fixture.node.webhookDeliveries(
                endpointID: scene.webhookID, beforeID: nil, state: .pending, limit: 100)
            // Those the scene backed off (one failed attempt each), and the delivery of the retry's own audit row.
            let backedOff = pending.filter { $0.attempts == 1 }
            #expect(!backedOff.isEmpty)
            #expect(answer.json?["retried"] as? Int == backedOff.count, "every backed-off delivery: \(answer.text)")
            #expect(pending.filter { $0.attempts != 1 }.map(\.eventKind) == ["webhook_changed"], "\(pending)")
            let now = Date()
            #expect(pending.allSatisfy { ($0.nextAttemptAt ?? .distantFuture) <= now }, "due now: \(pending)")
            let row = try requireValue(
                scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" })
            #expect(row.details["endpoint"] == scene.webhookID)
            #expect(row.details["changed"] == "retry")
            #expect(row.details["retried"] == "\(backedOff.count)", "\(row.details)")
        } prepare: { scene in
            // Each pending delivery failed once and waits an hour, as a sender leaves them for a receiver that is down.
            let node = scene.fixture.node
            let now = Date()
            let work = try node.claimWebhookWork(
                owner: "scene", now: now, leaseUntil: now.addingTimeInterval(30), maxEndpoints: 50, maxDeliveries: 100)
            let leased = try requireValue(work.first { $0.endpoint.id == scene.webhookID })
            let items = leased.items
            for (index, item) in items.enumerated() {
                _ = try node.recordWebhookAttempt(
                    WebhookAttempt(
                        deliveryID: item.delivery.id, at: now, status: 503, error: "the receiver answered 503",
                        outcome: .retry(at: now.addingTimeInterval(3600))),
                    endpoint: leased.endpoint, owner: "scene",
                    leaseUntil: index == items.count - 1 ? nil : now.addingTimeInterval(30))
            }
            let waiting = try node.webhookDeliveries(
                endpointID: scene.webhookID, beforeID: nil, state: .pending, limit: 100)
            #expect(waiting.count == items.count && waiting.allSatisfy { ($0.nextAttemptAt ?? now) > now })
        },
        Case(name: "a retry with nothing waiting, the body {}", method: .post,
             path: "/api/v1/webhooks/{webhook}/retry", caller: .root, body: "{}", status: 202) { answer, scene in
            #expect(answer.json?["retried"] as? Int == 0, "the scene's deliveries are due already: \(answer.text)")
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" }
            #expect(row?.details["changed"] == "retry" && row?.details["retried"] == "0", "\(String(describing: row))")
            #expect(row?.details["actor_account"] == "root", "\(String(describing: row))")
        },
        Case(name: "retrying no such endpoint", method: .post, path: "/api/v1/webhooks/wh_0000000000000000/retry",
             status: 404, message: "no webhook endpoint has the id wh_0000000000000000") { _, scene in
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" }
            #expect(row == nil, "an unknown endpoint is not audited")
        },
        Case(name: "a retry takes no body", method: .post, path: "/api/v1/webhooks/{webhook}/retry",
             body: #"{"retried":1}"#, status: 422, message: "a retry takes no body"),
        Case(name: "a retry's body is checked before the id", method: .post,
             path: "/api/v1/webhooks/wh_0000000000000000/retry", body: "[]", status: 422,
             message: "a retry takes no body"),
        Case(name: "a supporter may not retry", method: .post, path: "/api/v1/webhooks/{webhook}/retry", caller: .alice,
             status: 403, message: "only an admin may do this") { _, scene in
            let row = try scene.fixture.node.auditEvents(code: nil).last { $0.kind.rawValue == "webhook_changed" }
            #expect(row == nil, "nothing was retried")
        },
        Case(name: "retrying by GET", method: .get, path: "/api/v1/webhooks/{webhook}/retry", status: 405,
             allow: "POST"),
    ]

    static let all = console + probes + metrics + outside + signIn + sessions + audit + users + tokens + webhooks

    @Test(arguments: all)
    func endpoint(_ expected: Case) async throws {
        let scene = try await RouterScene()
        defer { scene.stop() }
        try await expected.prepare?(scene)
        let answer = try await scene.send(
            expected.method, expected.path, as: expected.caller, body: expected.body, headers: expected.headers)
        #expect(answer.status.code == expected.status, "\(answer.text)")
        if answer.status.code >= 400, !Self.needAListener.contains(expected.path) {
            // Every refusal has the error body of protocol/openapi.yaml (a probe's 503 is its status word).
            let error = answer.json?["error"] as? [String: Any]
            #expect(error?["status"] as? Int == expected.status, "\(answer.text)")
            #expect(error?["code"] as? String == answer.status.errorCode)
        }
        if let message = expected.message {
            #expect(answer.errorMessage?.contains(message) == true, "\(answer.text)")
        }
        if let allow = expected.allow { #expect(answer.headers["Allow"] == allow) }
        if answer.status != .methodNotAllowed { #expect(answer.headers["Allow"] == nil) }
        try await expected.check?(answer, scene)
    }

    /// The routes whose 202 needs a device connected to the node (a TLS socket, so not here): their answer in
    /// process is the node's 409 "no device is online", reached past every check of the router; the 202s are driven
    /// by the curl tests (Tests/CLITests/RESTAPITests.swift) and protocol/check_openapi.py (`--online-code`,
    /// `--pending-code`); an ask's withdrawal by Protocol11Tests (on the node) and tests/web/console_e2e.py.
    static let needADevice: Set<String> = [
        "/api/v1/sessions/{code}/connect", "/api/v1/sessions/{code}/cancel", "/api/v1/sessions/{code}/end",
        "/api/v1/sessions/{code}/ask", "/api/v1/sessions/{code}/ask/withdraw", "/api/v1/sessions/{code}/chat",
        "/api/v1/sessions/{code}/messages", "/api/v1/sessions/{code}/files",
    ]

    /// Every route of the table, for each of its methods, has at least one case it answers (2xx; for the
    /// fallbacks, their 404) and one it refuses (a 405 on its path counts for each of the path's methods) — counted by
    /// matching each case's request through the table, not by labels.
    @Test func everyRouteHasAnAnswerAndARefusal() {
        func key(_ method: HTTPMethod?, _ pattern: RoutePattern) -> String { "\(method?.rawValue ?? "*") \(pattern)" }
        var answered: Set<String> = []
        var refused: Set<String> = []
        for expected in Self.all {
            let segments = expected.path.split(separator: "?", maxSplits: 1)[0].split(separator: "/").map(String.init)
            switch RESTRouter.routes.match(expected.method, segments) {
            case .found(let route, _):
                let covered = key(route.methods == nil ? nil : expected.method, route.pattern)
                let isAnswer = (200..<300).contains(expected.status)
                    || (route.handler.operationID == nil && expected.status == 404)
                    || (Self.needADevice.contains(route.pattern.description) && expected.status == 409
                        && expected.message == "no device is online")
                    || (Self.needAListener.contains(route.pattern.description) && expected.status == 503)
                if isAnswer { answered.insert(covered) } else { refused.insert(covered) }
            case .methodNotAllowed(_, let routes, _):
                for route in routes { for method in route.methods ?? [] { refused.insert(key(method, route.pattern)) } }
            case .notFound:
                Issue.record("\(expected.testDescription): no route")
            }
        }
        for route in RESTRouter.routes.routes {
            for method in route.methods.map({ $0.map(Optional.some) }) ?? [nil] {
                #expect(answered.contains(key(method, route.pattern)), "no case answered by \(key(method, route.pattern))")
                #expect(refused.contains(key(method, route.pattern)), "no case refused by \(key(method, route.pattern))")
            }
        }
    }
}
