import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// The REST API of protocol/openapi.yaml, driven by real HTTP clients (curl, and Python's http.client through
/// protocol/check_openapi.py) against a real `rsup-supporter serve --api-listen` process.
@Suite("REST API over HTTPS", .serialized)
struct RESTAPITests {
    @Test("create, read, page, change, close and delete a session code")
    func sessionLifecycle() async throws {
        try await withRESTNode { api in
            let created = try await api.curl("POST", "/sessions", json: #"{"type":"assist_ar","description":"printer"}"#)
            #expect(created.status == 201, "\(created)")
            let code = try #require(created.object?["code"] as? String, "\(created)")
            #expect(created.headers["location"] == "/api/v1/sessions/\(code)", "\(created)")
            #expect(created.headers["content-type"] == "application/json", "\(created)")
            #expect(created.object?["type"] as? String == "assist_ar")
            #expect(created.object?["state"] as? String == "open")
            #expect(created.object?["live_state"] as? String == "open")
            #expect(created.object?["online"] as? Bool == false)
            #expect(created.object?["customer_name"] is NSNull)

            let fetched = try await api.curl("GET", "/sessions/\(code)")
            #expect(fetched.status == 200, "\(fetched)")
            #expect(fetched.body == created.body, "GET differs from the 201 body")
            #expect(try await api.curl("GET", "/sessions/000-000-000").errorStatus == 404)

            // Paging: three more codes, oldest first; total counts them all.
            var codes = [code]
            for index in 1...3 {
                let more = try await api.curl("POST", "/sessions", json: #"{"description":"n\#(index)"}"#)
                codes.append(try #require(more.object?["code"] as? String, "\(more)"))
            }
            let all = try await api.curl("GET", "/sessions")
            #expect(all.status == 200, "\(all)")
            #expect(all.object?["total"] as? Int == 4)
            #expect(all.object?["offset"] as? Int == 0)
            #expect(all.object?["limit"] as? Int == 50)
            #expect(all.sessionCodes == codes, "\(all)")
            let page = try await api.curl("GET", "/sessions?offset=1&limit=2")
            #expect(page.sessionCodes == Array(codes[1...2]), "\(page)")
            #expect(page.object?["total"] as? Int == 4)
            #expect(page.object?["limit"] as? Int == 2)
            #expect(try await api.curl("GET", "/sessions?offset=9").sessionCodes == [])
            for query in ["limit=0", "limit=501", "limit=abc", "offset=-1", "offset=x"] {
                #expect(try await api.curl("GET", "/sessions?\(query)").errorStatus == 400, "\(query)")
            }

            // PUT changes present members only; null clears. A code is assigned to an account.
            try await api.server.ensureAccount("bob", displayName: "Bob")
            let named = try await api.curl(
                "PUT", "/sessions/\(code)", json: #"{"customer_name":"Ann","assigned_supporter":"bob"}"#)
            #expect(named.status == 200, "\(named)")
            #expect(named.object?["customer_name"] as? String == "Ann")
            #expect(named.object?["assigned_supporter"] as? String == "bob")
            #expect(named.object?["description"] as? String == "printer", "an absent member changed")
            let cleared = try await api.curl("PUT", "/sessions/\(code)", json: #"{"description":null}"#)
            #expect(cleared.status == 200, "\(cleared)")
            #expect(cleared.object?["description"] is NSNull, "\(cleared)")
            #expect(cleared.object?["customer_name"] as? String == "Ann")
            #expect(try await api.curl("PUT", "/sessions/000-000-000", json: #"{"description":"x"}"#).errorStatus == 404)

            // Close, then reopening is a conflict; closing again changes nothing.
            let closed = try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"closed"}"#)
            #expect(closed.status == 200, "\(closed)")
            #expect(closed.object?["state"] as? String == "closed")
            #expect(closed.object?["live_state"] as? String == "closed")
            #expect(closed.object?["closed_at"] is String)
            #expect(try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"open"}"#).errorStatus == 409)
            let again = try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"closed"}"#)
            #expect(again.object?["closed_at"] as? String == closed.object?["closed_at"] as? String, "\(again)")

            let deleted = try await api.curl("DELETE", "/sessions/\(code)")
            #expect(deleted.status == 204, "\(deleted)")
            #expect(deleted.body.isEmpty, "\(deleted)")
            #expect(try await api.curl("GET", "/sessions/\(code)").errorStatus == 404)
            #expect(try await api.curl("DELETE", "/sessions/\(code)").errorStatus == 404)
        }
    }

    @Test("bodies that are not JSON objects are 400; values the schema forbids are 422")
    func refusedBodies() async throws {
        try await withRESTNode { api in
            let code = try #require(try await api.curl("POST", "/sessions", json: "{}").object?["code"] as? String)
            for body in ["", "{", "[]", #""text""#, "42", "null"] {
                #expect(try await api.curl("POST", "/sessions", json: body).errorStatus == 400, "POST \(body)")
                #expect(try await api.curl("PUT", "/sessions/\(code)", json: body).errorStatus == 400, "PUT \(body)")
            }
            let long = String(repeating: "x", count: 257)
            let combining = String(repeating: "e\u{301}", count: 129)  // 258 code points, 129 characters
            let creations = [
                #"{"bogus":1}"#, #"{"type":"video"}"#, #"{"type":null}"#, #"{"description":42}"#,
                #"{"description":null}"#, #"{"description":""}"#, "{\"description\":\"\(long)\"}",
                "{\"description\":\"\(combining)\"}", #"{"customer_email":"not-an-email"}"#,
                #"{"customer_email":"ann@example"}"#, #"{"valid_for_seconds":59}"#, #"{"valid_for_seconds":"60"}"#,
                #"{"valid_for_seconds":31536001}"#, #"{"valid_for_seconds":true}"#,
                #"{"valid_until":"2001-01-01T00:00:00.000Z"}"#, #"{"valid_until":"tomorrow"}"#,
                #"{"valid_for_seconds":600,"valid_until":"2099-01-01T00:00:00Z"}"#,
            ]
            for body in creations {
                let response = try await api.curl("POST", "/sessions", json: body)
                #expect(response.errorStatus == 422, "POST \(body): \(response)")
            }
            let changes = [
                "{}", #"{"bogus":1}"#, #"{"state":"gone"}"#, #"{"valid_until":null}"#,
                #"{"valid_until":"2001-01-01T00:00:00Z"}"#, #"{"customer_email":"a b@c.de"}"#,
                "{\"assigned_supporter\":\"\(String(repeating: "s", count: 65))\"}", #"{"type":"assist_ar"}"#,
            ]
            let before = try await api.curl("GET", "/sessions/\(code)")
            for body in changes {
                let response = try await api.curl("PUT", "/sessions/\(code)", json: body)
                #expect(response.errorStatus == 422, "PUT \(body): \(response)")
            }
            #expect(try await api.curl("GET", "/sessions/\(code)").body == before.body, "a refused change was applied")
        }
    }

    @Test("401 without or with an unknown token, with WWW-Authenticate; 403 with a device token")
    func authentication() async throws {
        try await withRESTNode { api in
            for token in [nil, "rsk_not-a-token"] as [String?] {
                let response = try await api.curl("GET", "/sessions", token: .some(token))
                #expect(response.errorStatus == 401, "\(response)")
                #expect(response.headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(response)")
            }
            for (method, path) in [("GET", "/sessions"), ("POST", "/sessions"), ("DELETE", "/sessions/123-456-789")] {
                let response = try await api.curl(method, path, json: "{}", token: api.deviceToken)
                #expect(response.errorStatus == 403, "\(method) \(path): \(response)")
            }
        }
    }

    @Test("unknown tokens from one address: 5 answered 401, then 429 with Retry-After; the admin token is still served")
    func repeatedBadTokensAreRateLimited() async throws {
        try await withRESTNode { api in
            // One curl, one connection, eight requests: no pause long enough for the first 1 s block to end.
            let results = try await api.curlMany(count: 8, path: "/sessions", token: "rsk_not-a-token")
            let statuses = results.map(\.status)
            #expect(Array(statuses.prefix(5)) == [401, 401, 401, 401, 401], "\(statuses)")
            #expect(statuses.dropFirst(5).allSatisfy { $0 == 401 || $0 == 429 }, "\(statuses)")
            #expect(statuses.contains(429), "\(statuses)")
            if let limited = results.first(where: { $0.status == 429 }) {
                #expect(limited.errorStatus == 429, "\(limited)")
                #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 >= 1, "\(limited)")
            }
            // Without a valid token the address waits whatever it sends; a valid admin token never does.
            let missing = try await api.curl("GET", "/sessions", token: .some(nil))
            #expect(missing.errorStatus == 429 || missing.errorStatus == 401, "\(missing)")
            let admin = try await api.curl("GET", "/sessions")
            #expect(admin.status == 200, "\(admin)")
        }
    }

    @Test("20 unknown tokens from 127.0.0.1, then the admin token from 127.0.0.1 gets 200")
    func validAdminTokenIsNeverRefusedForItsAddressesFailures() async throws {
        try await withRESTNode { api in
            let results = try await api.curlMany(count: 20, path: "/sessions", token: "rsk_not-a-token")
            #expect(results.last?.errorStatus == 429, "\(results.map(\.status))")
            let admin = try await api.curl("GET", "/sessions")
            #expect(admin.status == 200, "\(admin)")
            let created = try await api.curl("POST", "/sessions", json: "{}")
            #expect(created.status == 201, "\(created)")
        }
    }

    @Test("X-Forwarded-For is ignored without --trusted-proxy: guesses count against the peer, whatever they claim")
    func forwardedForIsIgnoredWithoutATrustedProxy() async throws {
        try await withRESTNode { api in
            var statuses: [Int] = []
            for index in 0..<12 {
                let response = try await api.curl(
                    "GET", "/sessions", token: "rsk_not-a-token", headers: ["X-Forwarded-For: 203.0.113.\(index)"])
                statuses.append(response.status)
            }
            #expect(statuses.contains(429), "\(statuses)")
        }
    }

    @Test("behind a trusted proxy the right-most untrusted X-Forwarded-For address is the client: limited and audited")
    func trustedProxyNamesTheClient() async throws {
        try await withRESTNode(extra: ["--trusted-proxy", "127.0.0.1"]) { api in
            // The client 203.0.113.9 (after a spoofed entry it added itself) guesses until it is blocked.
            let guesses = try await api.curlMany(
                count: 20, path: "/sessions", token: "rsk_not-a-token",
                headers: ["X-Forwarded-For: 6.6.6.6, 203.0.113.9"])
            #expect(guesses.last?.errorStatus == 429, "\(guesses.map(\.status))")
            // Another client behind the same proxy, and the proxy's own address, are not blocked.
            let other = try await api.curl(
                "GET", "/sessions", token: "rsk_not-a-token", headers: ["X-Forwarded-For: 6.6.6.6, 203.0.113.10"])
            #expect(other.errorStatus == 401, "\(other)")
            let direct = try await api.curl("GET", "/sessions", token: "rsk_not-a-token")
            #expect(direct.errorStatus == 401, "\(direct)")
            // A change names the forwarded client in the audit trail.
            let created = try await api.curl(
                "POST", "/sessions", json: "{}", headers: ["X-Forwarded-For: 203.0.113.11"])
            let code = try #require(created.object?["code"] as? String, "\(created)")
            await api.server.close(keepingData: true)
            let events = try await api.audit()
            let row = events.first { $0["kind"] as? String == "code_created" && $0["code"] as? String == code }
            #expect((row?["details"] as? [String: Any])?["actor_address"] as? String == "203.0.113.11", "\(events)")
            let failed = events.filter { ($0["details"] as? [String: Any])?["what"] as? String == "rest_authentication_failed" }
            let sources = failed.compactMap { ($0["details"] as? [String: Any])?["source_address"] as? String }
            #expect(Set(sources) == ["203.0.113.9", "203.0.113.10", "127.0.0.1"], "\(failed)")
        }
    }

    @Test("every change through the API is audited with the acting token's id and the client address")
    func changesAreAuditedWithTokenAndAddress() async throws {
        try await withRESTNode { api in
            let created = try await api.curl("POST", "/sessions", json: #"{"description":"audited"}"#)
            let code = try #require(created.object?["code"] as? String, "\(created)")
            #expect(try await api.curl("PUT", "/sessions/\(code)", json: #"{"customer_name":"Ann"}"#).status == 200)
            #expect(try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"closed"}"#).status == 200)
            #expect(try await api.curl("DELETE", "/sessions/\(code)").status == 204)
            await api.server.close(keepingData: true)
            let events = try await api.audit()
            let issued = events.first {
                $0["kind"] as? String == "token_issued" && ($0["details"] as? [String: Any])?["scope"] as? String == "admin"
            }
            let tokenID = try #require((issued?["details"] as? [String: Any])?["token"] as? String, "\(events)")
            #expect(!api.adminToken.contains(tokenID), "the audit trail holds a part of the token")
            let changes = events.filter { $0["code"] as? String == code }
            #expect(
                changes.compactMap { $0["kind"] as? String } == ["code_created", "code_updated", "code_closed", "code_deleted"],
                "\(changes)")
            for event in changes {
                let details = event["details"] as? [String: Any]
                #expect(details?["actor"] as? String == "rest", "\(event)")
                #expect(details?["actor_token"] as? String == tokenID, "\(event)")
                #expect(details?["actor_address"] as? String == "127.0.0.1", "\(event)")
            }
        }
    }

    @Test("20 unknown tokens are audited as one row and one aggregate count, not 20 rows")
    func authenticationFailuresAreAuditedBounded() async throws {
        try await withRESTNode { api in
            let results = try await api.curlMany(count: 20, path: "/sessions", token: "rsk_not-a-token")
            #expect(results.allSatisfy { $0.status == 401 || $0.status == 429 }, "\(results.map(\.status))")
            // Stopping the node writes the counts still held back (otherwise written when the minute is over).
            await api.server.close(keepingData: true)
            let events = try await api.audit()
            func what(_ event: [String: Any]) -> String? { (event["details"] as? [String: Any])?["what"] as? String }
            let rows = events.filter { what($0) == "rest_authentication_failed" }
            #expect(rows.count == 1, "\(rows)")
            #expect((rows.first?["details"] as? [String: Any])?["source_address"] as? String == "127.0.0.1")
            let aggregates = events.filter { what($0) == "rest_authentication_failures_suppressed" }
            #expect(aggregates.count == 1, "\(events)")
            #expect((aggregates.first?["details"] as? [String: Any])?["count"] as? String == "19", "\(aggregates)")
        }
    }

    @Test("40 idle connections from one address: the 8 beyond 32 are closed at once; another address is served")
    func idleConnectionsArePerAddressCapped() async throws {
        try await withRESTNode { api in
            let script = """
                import json, select, socket, ssl, sys, time
                PORT = int(sys.argv[1]); CA = sys.argv[2]; TOKEN = sys.argv[3]
                idle = []
                for _ in range(40):
                    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.connect(("127.0.0.1", PORT)); idle.append(s)
                def closed():
                    n = 0
                    for s in idle:
                        s.setblocking(False)
                        try:
                            if s.recv(1) == b"": n += 1
                        except BlockingIOError:
                            pass
                        except OSError:
                            n += 1
                    return n
                def still_open():
                    open_ = []
                    for c in idle:
                        c.setblocking(False)
                        try:
                            if c.recv(1, socket.MSG_PEEK) != b"": open_.append(c)
                        except BlockingIOError:
                            open_.append(c)
                        except OSError:
                            pass
                    return open_
                # select wakes when the server closes one (no polling). The count and the sockets watched come from
                # one pass, so a close between them cannot go unwatched (and leave select waiting for the header
                # timeout).
                end = time.time() + 60
                while time.time() < end:
                    open_ = still_open()
                    if len(idle) - len(open_) >= 8: break
                    select.select(open_, [], [], max(0, end - time.time()))
                raw = socket.socket(); raw.bind(("127.0.0.2", 0)); raw.settimeout(60); raw.connect(("127.0.0.1", PORT))
                s = ssl.create_default_context(cafile=CA).wrap_socket(raw, server_hostname="127.0.0.1")
                s.sendall(("GET /api/v1/sessions HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer " + TOKEN + "\\r\\n\\r\\n").encode())
                other = s.recv(100).decode()[:12]
                # Counted after a later connection was accepted and answered: every refusal of the 40 (made when each
                # was accepted, before this one) has been made.
                refused = closed()
                print(json.dumps({"refused": refused, "other": other}))
                """
            let result = try await runCommand(
                "/usr/bin/env", ["python3", "-c", script, String(api.apiPort), api.caPath, api.adminToken])
            let line = try #require(result.stdout.last, "\(result)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result)")
            #expect(object["refused"] as? Int == 8, "\(result)")
            #expect(object["other"] as? String == "HTTP/1.1 200", "\(result)")
            // The idle ones are gone with the script: 127.0.0.1 is served again.
            #expect(try await api.curl("GET", "/sessions").status == 200)
        }
    }

    @Test("405 with Allow, 404 for unknown paths, keep-alive, 413 for a body over 64 KiB")
    func protocolEdges() async throws {
        try await withRESTNode { api in
            let collection = try await api.curl("PATCH", "/sessions", json: "{}")
            #expect(collection.errorStatus == 405, "\(collection)")
            #expect(collection.headers["allow"] == "GET, POST", "\(collection)")
            let item = try await api.curl("POST", "/sessions/123-456-789", json: "{}")
            #expect(item.errorStatus == 405, "\(item)")
            #expect(item.headers["allow"] == "GET, PUT, DELETE", "\(item)")
            for path in ["/nothing", "/sessions/123-456-789/more"] {
                #expect(try await api.curl("GET", path).errorStatus == 404, "\(path)")
            }
            #expect(try await api.curl("GET", "", base: "/api/v2/sessions").errorStatus == 404)

            // Two requests, one connection: the second reuses it (num_connects 0).
            let pair = try await api.curlMany(count: 2, path: "/sessions", token: api.adminToken)
            #expect(pair.map(\.status) == [200, 200], "\(pair)")
            #expect(pair.map(\.connects) == [1, 0], "the second request opened a new connection: \(pair)")

            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let big = folder.file("big.json")
            try Data(("{\"description\":\"" + String(repeating: "x", count: 64 * 1024) + "\"}").utf8)
                .write(to: URL(fileURLWithPath: big))
            let tooLarge = try await api.curl("POST", "/sessions", file: big)
            #expect(tooLarge.errorStatus == 413, "\(tooLarge)")
        }
    }

    @Test("a device on the code: DELETE is 409; closing by PUT tells the device session_code_closed")
    func closingReachesTheDevice() async throws {
        try await withRESTNode { api in
            let created = try await api.curl("POST", "/sessions", json: #"{"waiting_message":"hold on"}"#)
            let code = try #require(created.object?["code"] as? String, "\(created)")
            let device = try api.startDevice(code: code)
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try #require(await api.server.waitForEvent("device_online", code: code), "\(api.server.process.transcript)")

            let online = try await api.curl("GET", "/sessions/\(code)")
            #expect(online.object?["online"] as? Bool == true, "\(online)")
            #expect(online.object?["live_state"] as? String == "online", "\(online)")
            #expect(online.object?["device_name"] as? String == "cli-test-device", "\(online)")
            #expect(try await api.curl("DELETE", "/sessions/\(code)").errorStatus == 409)

            let closed = try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"closed"}"#)
            #expect(closed.status == 200, "\(closed)")
            #expect(closed.object?["live_state"] as? String == "closed", "\(closed)")
            // The device is told, and leaves: an event with reason session_code_closed, then its exit.
            _ = await device.waitForExit()
            let told = device.events.contains { $0["reason"] as? String == "session_code_closed" }
            #expect(told, "\(device.transcript)")
            #expect(try await api.curl("PUT", "/sessions/\(code)", json: #"{"state":"open"}"#).errorStatus == 409)
        }
    }

    @Test("feature_rules: set on create, shown by GET, replaced by PUT and audited with the token; bad names are 422")
    func codeRules() async throws {
        try await withRESTNode { api in
            let created = try await api.curl(
                "POST", "/sessions",
                json: #"{"feature_rules":{"default":"allow","rules":{"chat":"deny","remote_control":"confirm"}}}"#)
            #expect(created.status == 201, "\(created)")
            let code = try #require(created.object?["code"] as? String, "\(created)")
            let rules = created.object?["feature_rules"] as? [String: Any]
            #expect(rules?["default"] as? String == "allow", "\(created)")
            #expect(rules?["rules"] as? [String: String] == ["chat": "deny", "remote_control": "confirm"], "\(created)")
            let fetched = try await api.curl("GET", "/sessions/\(code)")
            #expect(fetched.body == created.body, "GET differs from the 201 body")
            let plain = try await api.curl("POST", "/sessions", json: "{}")
            let defaults = plain.object?["feature_rules"] as? [String: Any]
            #expect(defaults?["default"] as? String == "allow", "\(plain)")
            #expect(defaults?["rules"] as? [String: String] == [:], "\(plain)")

            let changed = try await api.curl(
                "PUT", "/sessions/\(code)",
                json: #"{"description":"printer","feature_rules":{"default":"confirm","rules":{"file_share":"deny"}}}"#)
            #expect(changed.status == 200, "\(changed)")
            #expect(changed.object?["description"] as? String == "printer")
            let now = changed.object?["feature_rules"] as? [String: Any]
            #expect(now?["default"] as? String == "confirm", "\(changed)")
            #expect(now?["rules"] as? [String: String] == ["file_share": "deny"], "\(changed)")

            let before = try await api.curl("GET", "/sessions/\(code)")
            for (body, words) in [
                (#"{"feature_rules":{"rules":{"telepathy":"deny"}}}"#, "unknown feature 'telepathy'"),
                (#"{"feature_rules":{"rules":{"chat":"maybe"}}}"#, "feature_rules.rules.chat"),
                (#"{"feature_rules":{"default":"never"}}"#, "feature_rules.default"),
                (#"{"feature_rules":null}"#, "feature_rules cannot be null"),
                (#"{"feature_rules":{"chat":"deny"}}"#, "unknown member 'feature_rules.chat'"),
            ] {
                let put = try await api.curl("PUT", "/sessions/\(code)", json: body)
                #expect(put.errorStatus == 422, "PUT \(body): \(put)")
                #expect(put.body.contains(words), "PUT \(body): \(put)")
                let post = try await api.curl("POST", "/sessions", json: body)
                #expect(post.errorStatus == 422, "POST \(body): \(post)")
            }
            #expect(try await api.curl("GET", "/sessions/\(code)").body == before.body, "a refused change was applied")

            await api.server.close(keepingData: true)
            let events = try await api.audit()
            let rows = events.filter {
                $0["code"] as? String == code
                    && ($0["details"] as? [String: Any])?["what"] as? String == "code_feature_rules_changed"
            }
            #expect(rows.count == 1, "\(events)")
            let details = rows.first?["details"] as? [String: Any]
            #expect(details?["actor"] as? String == "rest", "\(rows)")
            #expect(details?["actor_token"] is String, "\(rows)")
            #expect(details?["actor_address"] as? String == "127.0.0.1", "\(rows)")
            #expect((details?["feature_rules"] as? String)?.hasPrefix("default=confirm ") == true, "\(rows)")
            #expect((details?["previous_feature_rules"] as? String)?.hasPrefix("default=allow ") == true, "\(rows)")
        }
    }

    @Test("protocol/check_openapi.py finds no mismatch between the spec and the node")
    func openAPIConformance() async throws {
        try await withRESTNode { api in
            // The accounts the checker signs in with (their passwords: "correct horse battery <login>").
            let accounts = [
                ("root", "Root Admin", "admin"), ("alice", "Alice Martin", "supporter"), ("bob", "Bob", "supporter"),
            ]
            for (login, name, role) in accounts {
                try await api.server.ensureAccount(login, displayName: name, role: role)
            }
            func password(_ login: String) -> String { "correct horse battery \(login)" }
            // A device that allows every request at once, and one that leaves requests unanswered (it asks on stdin).
            let created = try await api.curl("POST", "/sessions", json: #"{"description":"device here"}"#)
            let code = try #require(created.object?["code"] as? String, "\(created)")
            let device = try api.startDevice(code: code)
            _ = try #require(await api.server.waitForEvent("device_online", code: code), "\(device.transcript)")
            let asking = try await api.curl("POST", "/sessions", json: #"{"description":"device asks"}"#)
            let pendingCode = try #require(asking.object?["code"] as? String, "\(asking)")
            let askingDevice = try api.server.startDevice(
                code: pendingCode, token: api.deviceToken, trust: ["--ca", api.caPath], keepStdinOpen: true)
            _ = try #require(
                await api.server.waitForEvent("device_online", code: pendingCode), "\(askingDevice.transcript)")
            let result = try await runCommand(
                "/usr/bin/env",
                [
                    "python3", RESTNode.packageRoot + "/protocol/check_openapi.py", "--base-url",
                    "https://127.0.0.1:\(api.apiPort)/api/v1", "--ca", api.caPath, "--admin-token", api.adminToken,
                    "--device-token", api.deviceToken, "--online-code", code, "--pending-code", pendingCode,
                    "--admin-login", "root", "--admin-password", password("root"),
                    "--supporter-login", "alice", "--supporter-password", password("alice"),
                    "--other-supporter-login", "bob", "--other-supporter-password", password("bob"),
                ], timeout: .seconds(300))
            #expect(result.exitCode == 0, "\(result)")
        }
    }
}

// MARK: the node and curl

/// What curl got: status, header fields (names lowercased), body.
struct CurlResult: CustomStringConvertible {
    var status: Int
    var headers: [String: String]
    var body: String
    var connects: Int = 0

    var object: [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    }

    var sessionCodes: [String]? {
        (object?["sessions"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
    }

    /// The status, if the body is exactly `{"error": {"status", "code", "message"}}` with that status; else -1.
    var errorStatus: Int {
        guard let object, object.count == 1, let error = object["error"] as? [String: Any],
            Set(error.keys) == ["status", "code", "message"], error["status"] as? Int == status,
            error["code"] is String, error["message"] is String,
            headers["content-type"] == "application/json"
        else { return -1 }
        return status
    }

    var description: String {
        "\(status) \(headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))\n\(body)"
    }
}

/// A node serving the REST API on loopback, with an admin and a device token.
struct RESTNode {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    let server: SupporterServer
    let apiPort: Int
    let caPath: String
    let adminToken: String
    let deviceToken: String

    /// `curl` with the node's CA: one request; `token` nil sends no Authorization.
    func curl(
        _ method: String, _ path: String, json: String? = nil, file: String? = nil, token: String?? = .none,
        base: String = "/api/v1", headers: [String] = [], cookieJar: String? = nil
    ) async throws -> CurlResult {
        var arguments = ["-sS", "--cacert", caPath, "-X", method, "-D", "-", "-w", "\n%{http_code}", "--path-as-is"]
        if let cookieJar { arguments += ["-b", cookieJar, "-c", cookieJar] }
        let bearer: String? = token ?? adminToken
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        for header in headers { arguments += ["-H", header] }
        if json != nil || file != nil { arguments += ["-H", "Content-Type: application/json"] }
        if let json { arguments += ["--data-binary", json] }
        if let file { arguments += ["--data-binary", "@" + file] }
        arguments.append("https://127.0.0.1:\(apiPort)\(base)\(path)")
        let result = try await runCommand("/usr/bin/curl", arguments)
        guard result.exitCode == 0 else { throw HarnessError("curl failed\n\(result)") }
        return try Self.parse(result.stdout)
    }

    /// `count` GETs of `path` in one curl run (one connection, kept alive), each with its status and connect count.
    func curlMany(count: Int, path: String, token: String, headers: [String] = []) async throws -> [CurlResult] {
        let url = "https://127.0.0.1:\(apiPort)/api/v1\(path)"
        var arguments = [
            "-sS", "--cacert", caPath, "-H", "Authorization: Bearer \(token)", "-D", "-", "-w",
            "\n%{http_code} %{num_connects}\n",
        ]
        for header in headers { arguments += ["-H", header] }
        arguments += Array(repeating: url, count: count)
        let result = try await runCommand("/usr/bin/curl", arguments)
        guard result.exitCode == 0 else { throw HarnessError("curl failed\n\(result)") }
        // Each transfer: header block, body line, then "status connects".
        var results: [CurlResult] = []
        var chunk: [String] = []
        for line in result.stdout {
            let parts = line.split(separator: " ")
            if parts.count == 2, let status = Int(parts[0]), let connects = Int(parts[1]), status >= 100,
                !line.hasPrefix("HTTP/")
            {
                var parsed = try Self.parse(chunk + [String(status)])
                parsed.connects = connects
                results.append(parsed)
                chunk = []
            } else {
                chunk.append(line)
            }
        }
        guard results.count == count else { throw HarnessError("curl answered \(results.count) of \(count)\n\(result)") }
        return results
    }

    /// `-D - -w '\n%{http_code}'` output: header blocks (1xx ones skipped), a blank line, the body, the status.
    static func parse(_ lines: [String]) throws -> CurlResult {
        guard let last = lines.last, let status = Int(last) else { throw HarnessError("no status: \(lines)") }
        var headers: [String: String] = [:]
        var index = 0
        var inHead = false
        while index < lines.count - 1 {
            let line = lines[index].trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            index += 1
            if line.hasPrefix("HTTP/") {
                inHead = true
                headers = [:]
                continue
            }
            if inHead, line.isEmpty {
                inHead = false
                if index < lines.count - 1, lines[index].hasPrefix("HTTP/") { continue }  // after 100 Continue
                break
            }
            if inHead, let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
        }
        let body = lines[index..<(lines.count - 1)].joined(separator: "\n")
        return CurlResult(status: status, headers: headers, body: body)
    }

    /// The node's audit trail (`rsup-supporter audit --json`), oldest first: read from its data folder, so stop the
    /// node first with `server.close(keepingData: true)` to see what it writes at shutdown.
    func audit() async throws -> [[String: Any]] {
        let result = try await runCommand(Binaries.supporter, ["audit", "--data", server.data, "--json", "--limit", "10000"])
        guard result.exitCode == 0 else { throw HarnessError("rsup-supporter audit failed\n\(result)") }
        return result.stdout.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// `rsup-device connect … --auto-accept --json` on `code` with the device token.
    func startDevice(code: String) throws -> CLIProcess {
        try server.startDevice(code: code, token: deviceToken, trust: ["--ca", caPath], extra: ["--auto-accept"])
    }
}

/// Runs `body` with a fresh node (`--api-listen 127.0.0.1:0` and `extra` options), tokens of both scopes, and the CA
/// to trust; each test gets its own node, so the address back-off of one cannot reach another.
func withRESTNode(extra: [String] = [], _ body: (RESTNode) async throws -> Void) async throws {
    try await withCertificates { certificates in
        let server = try await SupporterServer(
            certificate: certificates.server, extra: ["--api-listen", "127.0.0.1:0"] + extra)
        do {
            let listening = try #require(await server.process.waitForEvent("listening"))
            let apiPort = try #require(listening["api_port"] as? Int, "no api_port: \(listening)")
            let admin = try #require(try await server.control(["token", "--scope", "admin"])["token"] as? String)
            let device = try #require(try await server.control(["token", "--scope", "device"])["token"] as? String)
            try await body(
                RESTNode(
                    server: server, apiPort: apiPort, caPath: certificates.caPath, adminToken: admin,
                    deviceToken: device))
            await server.close()
        } catch {
            await server.close()
            throw error
        }
    }
}
