import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// Supporter accounts over the REST API (issue 11): sign-in with the session cookie, CSRF protection, who may see and
/// act on which code, connection requests named by the account, the audit trail of the acting account, the live event
/// stream, and sign-in rate limits — driven by curl against a real `rsup-supporter serve --api-listen` process.
@Suite("supporter accounts over REST", .serialized)
struct SupporterAccountsTests {
    @Test("sign-in sets a HttpOnly, Secure, SameSite=Strict cookie; every answer carries the security headers")
    func signInAndHeaders() async throws {
        try await withRESTNode { api in
            try await api.server.ensureAccount("alice", displayName: "Alice Martin")
            let browser = try Browser(api)
            let wrong = try await browser.signIn("alice", "not the password")
            #expect(wrong.errorStatus == 401, "\(wrong)")
            #expect(wrong.headers["set-cookie"] == nil)
            let unknown = try await browser.signIn("nobody", "whatever-password")
            #expect(unknown.errorStatus == 401 && unknown.body == wrong.body, "unknown login and wrong password differ: \(unknown)")
            let signed = try await browser.signIn("alice", "correct horse battery alice")
            #expect(signed.status == 200, "\(signed)")
            let cookie = try #require(signed.headers["set-cookie"], "\(signed)")
            for flag in ["rsup_session=", "HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
                #expect(cookie.contains(flag), "\(cookie)")
            }
            #expect((signed.object?["account"] as? [String: Any])?["display_name"] as? String == "Alice Martin")
            let me = try await browser.request("GET", "/me")
            #expect(me.status == 200, "\(me)")
            #expect(me.object?["csrf_token"] as? String == browser.csrf)

            let page = try await api.curl("GET", "/", token: .some(nil), base: "")
            for result in [page, me] {
                #expect(result.headers["content-security-policy"]?.contains("script-src 'self'") == true, "\(result)")
                #expect(result.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
                #expect(result.headers["content-security-policy"]?.contains("unsafe-inline") == false)
                #expect(result.headers["strict-transport-security"]?.hasPrefix("max-age=") == true)
                #expect(result.headers["x-content-type-options"] == "nosniff")
                #expect(result.headers["x-frame-options"] == "DENY")
            }
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true, "\(page)")
            #expect(try await api.curl("GET", "/../../etc/passwd", token: .some(nil), base: "").status == 404)

            let out = try await browser.request("POST", "/logout")
            #expect(out.status == 204, "\(out)")
            #expect(try await browser.request("GET", "/me").errorStatus == 401)
        }
    }

    @Test("a state change with the cookie needs the session's CSRF token and the node's own origin")
    func csrf() async throws {
        try await withRESTNode { api in
            try await api.server.ensureAccount("alice", displayName: "Alice")
            let browser = try Browser(api)
            _ = try await browser.signIn("alice", "correct horse battery alice")
            let body = #"{"description":"csrf"}"#
            #expect(try await browser.request("POST", "/sessions", json: body, csrf: false).errorStatus == 403)
            #expect(
                try await browser.request("POST", "/sessions", json: body, csrf: false, headers: ["X-CSRF-Token: wrong"])
                    .errorStatus == 403)
            let foreign = try await browser.request(
                "POST", "/sessions", json: body, headers: ["Origin: https://evil.example"])
            #expect(foreign.errorStatus == 403, "\(foreign)")
            let crossSite = try await browser.request(
                "POST", "/sessions", json: body, headers: ["Sec-Fetch-Site: cross-site"])
            #expect(crossSite.errorStatus == 403, "\(crossSite)")
            let listed = try await browser.request("GET", "/sessions")
            #expect(listed.object?["total"] as? Int == 0, "a refused request created a code: \(listed)")
            let own = try await browser.request(
                "POST", "/sessions", json: body, headers: ["Origin: https://127.0.0.1:\(api.apiPort)"])
            #expect(own.status == 201, "\(own)")
        }
    }

    @Test("a supporter sees and acts on their own and unassigned codes only; a connection request carries the account's name")
    func assignmentAndConnect() async throws {
        try await withRESTNode { api in
            try await api.server.ensureAccount("alice", displayName: "Alice Martin")
            try await api.server.ensureAccount("bob", displayName: "Bob")
            let alice = try Browser(api)
            _ = try await alice.signIn("alice", "correct horse battery alice")
            let bob = try Browser(api)
            _ = try await bob.signIn("bob", "correct horse battery bob")

            let created = try await alice.request(
                "POST", "/sessions", json: #"{"description":"alice's","assigned_supporter":"alice"}"#)
            let code = try #require(created.object?["code"] as? String, "\(created)")
            #expect(created.object?["assigned_supporter"] as? String == "alice")
            let open = try await bob.request("POST", "/sessions", json: #"{"description":"unassigned"}"#)
            let unassigned = try #require(open.object?["code"] as? String, "\(open)")
            #expect(
                try await bob.request("POST", "/sessions", json: #"{"assigned_supporter":"alice"}"#).errorStatus == 403,
                "a supporter assigned a code to someone else")

            #expect(try await bob.request("GET", "/sessions").sessionCodes == [unassigned])
            #expect(try await alice.request("GET", "/sessions").sessionCodes == [code, unassigned])
            #expect(try await api.curl("GET", "/sessions").sessionCodes == [code, unassigned], "admin token sees all")
            #expect(try await bob.request("GET", "/sessions/\(code)").errorStatus == 403)
            #expect(try await bob.request("PUT", "/sessions/\(code)", json: #"{"state":"closed"}"#).errorStatus == 403)
            #expect(try await bob.request("GET", "/audit?code=\(code)").errorStatus == 403)

            let device = try api.startDevice(code: code)
            _ = try #require(await api.server.waitForEvent("device_online", code: code), "\(device.transcript)")
            let refused = try await bob.request("POST", "/sessions/\(code)/connect", json: #"{"connection_type":"screen_share"}"#)
            #expect(refused.errorStatus == 403, "\(refused)")
            #expect(
                try await api.curl("POST", "/sessions/\(code)/connect", json: "{}").errorStatus == 403,
                "an API token has no name to show the device's user")
            let connect = try await alice.request(
                "POST", "/sessions/\(code)/connect", json: #"{"connection_type":"screen_share","features":["voip","chat"]}"#)
            #expect(connect.status == 202, "\(connect)")
            let request = await device.waitForEvent("request")
            #expect(request?["supporter"] as? String == "Alice Martin", "\(device.transcript)")
            _ = try #require(await api.server.waitForEvent("connected", code: code), "\(device.transcript)")
            let ended = try await alice.request("POST", "/sessions/\(code)/end")
            #expect(ended.status == 202, "\(ended)")
            _ = try #require(await api.server.waitForEvent("ended", code: code))

            let audit = try await alice.request("GET", "/audit?code=\(code)&limit=50")
            let events = try #require(audit.object?["events"] as? [[String: Any]], "\(audit)")
            func actor(_ kind: String) -> [String: Any]? {
                events.first { $0["kind"] as? String == kind }?["actor"] as? [String: Any]
            }
            for kind in ["code_created", "request_sent", "session_ended"] {
                #expect(actor(kind)?["account"] as? String == "alice", "\(kind): \(audit)")
                #expect(actor(kind)?["display_name"] as? String == "Alice Martin", "\(kind)")
                #expect(actor(kind)?["login_session"] is String, "\(kind)")
            }
            let kinds = Set(events.compactMap { $0["kind"] as? String })
            #expect(kinds.isSuperset(of: ["code_created", "device_online", "request_sent", "request_allowed", "session_started", "session_ended"]), "\(kinds)")
        }
    }

    @Test("the event stream is live, filtered to what the caller may see, and resumes after Last-Event-ID")
    func eventStream() async throws {
        try await withRESTNode { api in
            try await api.server.ensureAccount("alice", displayName: "Alice")
            try await api.server.ensureAccount("bob", displayName: "Bob")
            let alice = try Browser(api)
            _ = try await alice.signIn("alice", "correct horse battery alice")
            let bob = try Browser(api)
            _ = try await bob.signIn("bob", "correct horse battery bob")
            let bobStream = try bob.stream()
            defer { Task { await bobStream.stop() } }
            let mine = try await alice.request("POST", "/sessions", json: #"{"assigned_supporter":"alice"}"#)
            let aliceCode = try #require(mine.object?["code"] as? String)
            let shared = try await alice.request("POST", "/sessions", json: #"{"description":"shared"}"#)
            let sharedCode = try #require(shared.object?["code"] as? String)
            let seen = await bobStream.waitForLine { $0.contains(sharedCode) }
            #expect(seen?.contains(#""kind":"code_created""#) == true, "\(bobStream.transcript)")
            #expect(!bobStream.stdoutLines.joined().contains(aliceCode), "bob saw alice's code")

            // Resume: everything after an id, in order, then live.
            let audit = try await alice.request("GET", "/audit?code=\(aliceCode)")
            let firstID = try #require((audit.object?["events"] as? [[String: Any]])?.last?["id"] as? Int)
            let resumed = try alice.stream(lastEventID: firstID - 1)
            defer { Task { await resumed.stop() } }
            let first = await resumed.waitForLine { $0.hasPrefix("id: ") }
            #expect(first == "id: \(firstID)", "\(resumed.transcript)")
            _ = await resumed.waitForLine { $0.contains(sharedCode) }
            let closed = try await alice.request("PUT", "/sessions/\(aliceCode)", json: #"{"state":"closed"}"#)
            #expect(closed.status == 200)
            let live = await resumed.waitForLine { $0.contains(#""kind":"code_closed""#) }
            #expect(live != nil, "\(resumed.transcript)")
            let ids = resumed.stdoutLines.filter { $0.hasPrefix("id: ") }.compactMap { Int($0.dropFirst(4)) }
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(ids)")
        }
    }

    @Test("wrong passwords from one address block that address; spread over many, the owner still signs in from home")
    func signInRateLimits() async throws {
        try await withRESTNode(extra: ["--trusted-proxy", "127.0.0.1"]) { api in
            try await api.server.ensureAccount("alice", displayName: "Alice")
            let home = try Browser(api, forwardedFor: "198.51.100.1")
            #expect(try await home.signIn("alice", "correct horse battery alice").status == 200)
            let guesser = try Browser(api, forwardedFor: "203.0.113.9")
            var statuses: [Int] = []
            for _ in 0..<6 { statuses.append(try await guesser.signIn("alice", "guess").status) }
            #expect(statuses.prefix(5).allSatisfy { $0 == 401 }, "\(statuses)")
            // The first block lasts 1 s and each failure after one doubles it: guess on until a 429 says the block
            // has 10 s or more left, so that the next request meets it however slow this machine is (a loaded one
            // took longer than 1 s, and once more than 3 s, between two sign-ins). Bounded by a deadline, not a count.
            var longBlock = false
            let end = ContinuousClock.now + waitDeadline
            while !longBlock, ContinuousClock.now < end {
                let answer = try await guesser.signIn("alice", "guess")
                statuses.append(answer.status)
                if answer.status == 429, let left = answer.headers["retry-after"].flatMap({ Int($0) }), left >= 10 {
                    longBlock = true
                }
            }
            #expect(longBlock && statuses.dropFirst(5).contains(429), "\(statuses)")
            let blocked = try await guesser.signIn("alice", "correct horse battery alice")
            #expect(blocked.status == 429 && blocked.headers["retry-after"] != nil, "\(blocked)")
            // Guesses for the account from ever new addresses: 10 are free, then the account's block begins at 1 s
            // and doubles. Guess on until a 429 says it has 10 s or more left (as above, so that the stranger's
            // sign-in below meets it however slow this machine is), within the deadline.
            var accountBlocked = false
            var address = 10
            let accountEnd = ContinuousClock.now + waitDeadline
            while !accountBlocked, ContinuousClock.now < accountEnd, address < 200 {
                let answer = try await Browser(api, forwardedFor: "192.0.2.\(address)").signIn("alice", "guess")
                address += 1
                if answer.status == 429, let left = answer.headers["retry-after"].flatMap({ Int($0) }), left >= 10 {
                    accountBlocked = true
                }
            }
            #expect(accountBlocked, "the account was never blocked for 10 s after \(address - 10) guesses")
            let stranger = try await Browser(api, forwardedFor: "192.0.2.200").signIn("alice", "correct horse battery alice")
            #expect(stranger.status == 429, "\(stranger)")
            let again = try await Browser(api, forwardedFor: "198.51.100.1").signIn("alice", "correct horse battery alice")
            #expect(again.status == 200, "the owner was locked out at home: \(again)")
        }
    }

    @Test("admins manage accounts and tokens; supporters may not; disabling an account ends its sign-in")
    func administration() async throws {
        try await withRESTNode { api in
            try await api.server.ensureAccount("root", displayName: "Root", role: "admin")
            try await api.server.ensureAccount("bob", displayName: "Bob")
            let admin = try Browser(api)
            _ = try await admin.signIn("root", "correct horse battery root")
            let bob = try Browser(api)
            _ = try await bob.signIn("bob", "correct horse battery bob")
            #expect(try await bob.request("GET", "/users").errorStatus == 403)
            #expect(try await bob.request("GET", "/tokens").errorStatus == 403)

            let added = try await admin.request(
                "POST", "/users",
                json: #"{"login":"carol","display_name":"Carol <b>C</b>","role":"supporter","password":"carol's password"}"#)
            #expect(added.status == 201, "\(added)")
            #expect(added.object?["password"] == nil && !added.body.contains("scrypt"), "\(added)")
            #expect(
                try await admin.request("POST", "/users", json: #"{"login":"carol","display_name":"C","password":"0123456789"}"#)
                    .errorStatus == 409)
            #expect(
                try await admin.request("POST", "/users", json: #"{"login":"Bad Login","display_name":"C","password":"0123456789"}"#)
                    .errorStatus == 422)
            #expect(
                try await admin.request("POST", "/users", json: #"{"login":"dave","display_name":"D","password":"short"}"#)
                    .errorStatus == 422)
            #expect(
                try await admin.request("PUT", "/users/root", json: #"{"role":"supporter"}"#).errorStatus == 409,
                "the last admin became a supporter")

            let issued = try await admin.request("POST", "/tokens", json: #"{"scope":"device","label":"kiosk"}"#)
            #expect(issued.status == 201 && (issued.object?["token"] as? String)?.hasPrefix("rsk_") == true, "\(issued)")
            let id = try #require(issued.object?["id"] as? String)
            let tokens = try await admin.request("GET", "/tokens")
            #expect(!tokens.body.contains(issued.object?["token"] as? String ?? "-"), "a token list shows a token")
            #expect(try await admin.request("DELETE", "/tokens/\(id)").status == 204)

            #expect(try await admin.request("PUT", "/users/bob", json: #"{"state":"disabled"}"#).status == 200)
            #expect(try await bob.request("GET", "/sessions").errorStatus == 401, "a disabled account kept its sign-in")
            #expect(try await bob.signIn("bob", "correct horse battery bob").errorStatus == 403)
        }
    }
}

extension SupporterAccountsTests {
    @Test("a restart signs nobody out; a sign-out, a disabled account or a new password still end the session after it")
    func sessionsSurviveARestart() async throws {
        try await withCertificates { certificates in
            let first = try await SupporterServer(certificate: certificates.server, extra: ["--api-listen", "127.0.0.1:0"])
            try await first.ensureAccount("alice", displayName: "Alice")
            try await first.ensureAccount("bob", displayName: "Bob")
            let api = try await Self.restNode(first, certificates)
            let alice = try Browser(api)
            let bob = try Browser(api)
            #expect(try await alice.signIn("alice", "correct horse battery alice").status == 200)
            #expect(try await bob.signIn("bob", "correct horse battery bob").status == 200)
            let csrf = alice.csrf
            _ = try await first.control(["user", "disable", "bob"])
            await first.close(keepingData: true)

            let second = try await SupporterServer(
                certificate: certificates.server, extra: ["--api-listen", "127.0.0.1:0"], reusing: first.folder)
            let again = try await Self.restNode(second, certificates)
            let me = try await alice.with(again).request("GET", "/me")
            #expect(me.status == 200, "the restart signed alice out: \(me)")
            #expect(me.object?["csrf_token"] as? String == csrf)
            let created = try await alice.with(again).request("POST", "/sessions", json: "{}")
            #expect(created.status == 201, "the CSRF token of before the restart was refused: \(created)")
            #expect(try await bob.with(again).request("GET", "/me").errorStatus == 401, "a disabled account's session came back")
            #expect(try await alice.with(again).request("POST", "/logout").status == 204)
            await second.close(keepingData: true)

            let third = try await SupporterServer(
                certificate: certificates.server, extra: ["--api-listen", "127.0.0.1:0"], reusing: first.folder)
            defer { Task { await third.close() } }
            let last = try await Self.restNode(third, certificates)
            #expect(try await alice.with(last).request("GET", "/me").errorStatus == 401, "a signed-out session came back")
        }
    }

    static func restNode(_ server: SupporterServer, _ certificates: TestCertificates) async throws -> RESTNode {
        let listening = try #require(await server.process.waitForEvent("listening"))
        let apiPort = try #require(listening["api_port"] as? Int)
        return RESTNode(server: server, apiPort: apiPort, caPath: certificates.caPath, adminToken: "-", deviceToken: "-")
    }
}

/// A browser-like client: curl with a cookie jar, sending the CSRF token and Origin a page of the node would.
struct Browser {
    let api: RESTNode
    let jar: String
    let forwardedFor: String?
    private let csrfBox: CSRFBox

    final class CSRFBox: @unchecked Sendable {
        // @unchecked: used by one test task at a time (each Browser belongs to one test body).
        var value: String?
    }

    var csrf: String? { csrfBox.value }

    init(_ api: RESTNode, forwardedFor: String? = nil) throws {
        self.api = api
        self.forwardedFor = forwardedFor
        jar = NSTemporaryDirectory() + "rsup-jar-\(UUID().uuidString)"
        csrfBox = CSRFBox()
    }

    private init(api: RESTNode, jar: String, forwardedFor: String?, csrf: CSRFBox) {
        self.api = api
        self.jar = jar
        self.forwardedFor = forwardedFor
        csrfBox = csrf
    }

    /// The same browser (cookies, CSRF token) talking to `api` (a node restarted on another port).
    func with(_ api: RESTNode) -> Browser { Browser(api: api, jar: jar, forwardedFor: forwardedFor, csrf: csrfBox) }

    func signIn(_ login: String, _ password: String) async throws -> CurlResult {
        let body = try JSONSerialization.data(withJSONObject: ["login": login, "password": password])
        let result = try await request("POST", "/login", json: String(decoding: body, as: UTF8.self), csrf: false)
        if let token = result.object?["csrf_token"] as? String { csrfBox.value = token }
        return result
    }

    func request(
        _ method: String, _ path: String, json: String? = nil, csrf: Bool = true, headers: [String] = []
    ) async throws -> CurlResult {
        // A page of the node sends its own origin, unless the test gives another.
        var extra = headers.contains { $0.hasPrefix("Origin:") } ? [] : ["Origin: https://127.0.0.1:\(api.apiPort)"]
        if csrf, let token = csrfBox.value { extra.append("X-CSRF-Token: \(token)") }
        if let forwardedFor { extra.append("X-Forwarded-For: \(forwardedFor)") }
        return try await api.curl(method, path, json: json, token: .some(nil), headers: extra + headers, cookieJar: jar)
    }

    /// `GET /events` kept open (curl -N), its lines on the process's stdout.
    func stream(lastEventID: Int? = nil) throws -> CLIProcess {
        var arguments = ["-sS", "-N", "--cacert", api.caPath, "-b", jar]
        if let lastEventID { arguments += ["-H", "Last-Event-ID: \(lastEventID)"] }
        arguments.append("https://127.0.0.1:\(api.apiPort)/api/v1/events")
        return try CLIProcess("/usr/bin/curl", arguments)
    }
}
