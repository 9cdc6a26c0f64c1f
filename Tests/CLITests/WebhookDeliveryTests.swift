import Foundation
import SupporterWebhooks
import TestSupport
import Testing

/// Webhooks end to end (issue 24): a real `rsup-supporter serve` process delivers audit events to real HTTPS receivers
/// (tests/webhooks/receiver.py, certificates made at test time) — signed, in order, once; through a receiver that is
/// down, failing, hanging or flooding; across a kill and restart of the node; and once per event from a 2-node cluster.
@Suite("webhooks delivered by a real node", .serialized)
struct WebhookDeliveryTests {
    @Test("each event is POSTed once, in order, signed with the endpoint's secret; log, redelivery, rotation, disable, delete")
    func deliveriesAreSignedInOrderAndOnce() async throws {
        try await withWebhookNode { api, receiver, _ in
            let created = try await api.curl(
                "POST", "/webhooks",
                json: #"{"url":"\#(receiver.url)","event_kinds":["code_created","code_closed"],"description":"helpdesk"}"#)
            #expect(created.status == 201, "\(created)")
            let id = try #require(created.object?["id"] as? String)
            let secret = try #require(created.object?["secret"] as? String, "\(created)")
            #expect(secret.hasPrefix("whsec_"))
            #expect(created.object?["event_kinds"] as? [String] == ["code_created", "code_closed"])
            let listed = try await api.curl("GET", "/webhooks")
            #expect(listed.status == 200, "\(listed)")
            #expect(!listed.body.contains(secret), "a listing shows the secret: \(listed)")
            #expect(try await api.curl("GET", "/webhooks/\(id)").object?["secret"] == nil)

            var codes: [String] = []
            for index in 0..<5 {
                let code = try await api.curl("POST", "/sessions", json: #"{"description":"hook \#(index)"}"#)
                codes.append(try #require(code.object?["code"] as? String, "\(code)"))
            }
            #expect(await receiver.waitForAccepted(5), "\(receiver.process.transcript)")
            let accepted = receiver.accepted
            #expect(accepted.count == 5, "each event once: \(accepted.map(WebhookReceiver.eventID))")
            let ids = accepted.compactMap(WebhookReceiver.eventID)
            #expect(ids == ids.sorted() && Set(ids).count == 5, "in order, once each: \(ids)")
            let now = Int64(Date().timeIntervalSince1970)
            for (request, code) in zip(accepted, codes) {
                let headers = request["headers"] as? [String: String] ?? [:]
                let body = Array((request["body"] as? String ?? "").utf8)
                let signature = try #require(headers["remotesupport-signature"], "\(headers)")
                #expect(WebhookSignature.verify(header: signature, body: body, secret: secret, now: now), "\(signature)")
                #expect(!WebhookSignature.verify(header: signature, body: body + [0x20], secret: secret, now: now))
                #expect(!WebhookSignature.verify(header: signature, body: body, secret: secret, now: now + 600),
                    "a replay 10 minutes later must fail the 5-minute window")
                #expect(headers["content-type"] == "application/json")
                #expect(headers["user-agent"]?.hasPrefix("RemoteSupport-Webhooks/") == true)
                #expect(headers["remotesupport-event-kind"] == "code_created")
                let event = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
                #expect(event["kind"] as? String == "code_created")
                #expect(event["code"] as? String == code, "\(event)")
                #expect(headers["remotesupport-event-id"] == (event["id"] as? Int).map(String.init), "\(headers)")
                #expect(request["target"] as? String == "/hook")
            }

            // The delivery log: newest first, each delivered on its first attempt with the receiver's status.
            let log = try await api.curl("GET", "/webhooks/\(id)/deliveries")
            #expect(log.status == 200, "\(log)")
            let deliveries = try #require(log.object?["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 5)
            #expect(deliveries.allSatisfy { $0["state"] as? String == "delivered" && $0["attempts"] as? Int == 1 && $0["last_status"] as? Int == 200 }, "\(deliveries)")
            #expect(deliveries.compactMap { $0["event_id"] as? Int } == ids.reversed())
            let failed = try await api.curl("GET", "/webhooks/\(id)/deliveries?state=failed")
            #expect((failed.object?["deliveries"] as? [[String: Any]])?.isEmpty == true, "\(failed)")
            #expect(try await api.curl("GET", "/webhooks/\(id)/deliveries?state=lost").errorStatus == 400)

            // Redelivery: the same event id again, as a new delivery naming the one it repeats.
            let first = try #require(deliveries.last)
            let redelivered = try await api.curl("POST", "/webhooks/\(id)/deliveries/\(first["id"] as? Int ?? 0)/redeliver")
            #expect(redelivered.status == 202, "\(redelivered)")
            #expect(redelivered.object?["redelivery_of"] as? Int == first["id"] as? Int)
            #expect(await receiver.waitForAccepted(6), "\(receiver.process.transcript)")
            #expect(WebhookReceiver.eventID(receiver.accepted[5]) == first["event_id"] as? Int)
            #expect(try await api.curl("POST", "/webhooks/\(id)/deliveries/999999/redeliver").errorStatus == 404)

            // Rotation: a new secret, and for 24 hours the old one signs too.
            let rotated = try await api.curl("POST", "/webhooks/\(id)/secret")
            #expect(rotated.status == 200, "\(rotated)")
            let newSecret = try #require(rotated.object?["secret"] as? String)
            #expect(newSecret != secret && newSecret.hasPrefix("whsec_"))
            let closed = try await api.curl("PUT", "/sessions/\(codes[0])", json: #"{"state":"closed"}"#)
            #expect(closed.status == 200, "\(closed)")
            #expect(await receiver.waitForAccepted(7), "\(receiver.process.transcript)")
            let afterRotation = receiver.accepted[6]
            let headers = afterRotation["headers"] as? [String: String] ?? [:]
            let body = Array((afterRotation["body"] as? String ?? "").utf8)
            #expect(headers["remotesupport-event-kind"] == "code_closed")
            for key in [secret, newSecret] {
                #expect(
                    WebhookSignature.verify(
                        header: headers["remotesupport-signature"] ?? "", body: body, secret: key,
                        now: Int64(Date().timeIntervalSince1970)), "not signed with \(key.prefix(10))…")
            }

            // Disabled: no new delivery; the log has as many rows right after the event (made in its transaction).
            let disabled = try await api.curl("PATCH", "/webhooks/\(id)", json: #"{"enabled":false}"#)
            #expect(disabled.status == 200 && disabled.object?["enabled"] as? Bool == false, "\(disabled)")
            _ = try await api.curl("POST", "/sessions", json: "{}")
            let unchanged = try await api.curl("GET", "/webhooks/\(id)/deliveries")
            #expect((unchanged.object?["deliveries"] as? [[String: Any]])?.count == 7, "\(unchanged)")

            // Delete: gone with its log.
            #expect(try await api.curl("DELETE", "/webhooks/\(id)").status == 204)
            #expect(try await api.curl("GET", "/webhooks/\(id)").errorStatus == 404)
            #expect(try await api.curl("GET", "/webhooks/\(id)/deliveries").errorStatus == 404)
            let audit = try await api.curl("GET", "/audit?kind=webhook_created")
            #expect(audit.body.contains(id) && !audit.body.contains(secret), "\(audit)")
        }
    }

    @Test("what an endpoint may be: https only, known kinds, no metadata or link-local address")
    func endpointsAreChecked() async throws {
        try await withWebhookNode { api, _, _ in
            let plain = try await api.curl("POST", "/webhooks", json: #"{"url":"http://helpdesk.example/hook","event_kinds":["*"]}"#)
            #expect(plain.errorStatus == 422 && plain.body.contains("--webhook-allow-http"), "\(plain)")
            let unknown = try await api.curl("POST", "/webhooks", json: #"{"url":"https://h.example/","event_kinds":["session_exploded"]}"#)
            #expect(unknown.errorStatus == 422 && unknown.body.contains("session_exploded"), "\(unknown)")
            let none = try await api.curl("POST", "/webhooks", json: #"{"url":"https://h.example/","event_kinds":[]}"#)
            #expect(none.errorStatus == 422, "\(none)")
            let userinfo = try await api.curl("POST", "/webhooks", json: #"{"url":"https://a:b@h.example/","event_kinds":["*"]}"#)
            #expect(userinfo.errorStatus == 422, "\(userinfo)")
            let extra = try await api.curl("POST", "/webhooks", json: #"{"url":"https://h.example/","event_kinds":["*"],"x":1}"#)
            #expect(extra.errorStatus == 422, "\(extra)")

            // Accepted as a URL, refused where it resolves: the cloud metadata address (and link-local beside it).
            let metadata = try await api.curl(
                "POST", "/webhooks", json: #"{"url":"https://169.254.169.254/latest/meta-data","event_kinds":["code_created"]}"#)
            #expect(metadata.status == 201, "\(metadata)")
            let id = try #require(metadata.object?["id"] as? String)
            _ = try await api.curl("POST", "/sessions", json: "{}")
            var refused: [String: Any]?
            #expect(
                await pollUntil {
                    let log = try? await api.curl("GET", "/webhooks/\(id)/deliveries")
                    refused = (log?.object?["deliveries"] as? [[String: Any]])?.first
                    return (refused?["attempts"] as? Int ?? 0) >= 1
                }, "\(String(describing: refused))")
            let error = refused?["last_error"] as? String ?? ""
            #expect(error.contains("cloud metadata") && error.contains("--webhook-allow-address"), "\(error)")
            #expect(refused?["state"] as? String == "pending", "retried later, not dropped: \(String(describing: refused))")
        }
    }

    @Test("a receiver down, then failing, then up gets every event once, in order")
    func receiverDownThenUp() async throws {
        try await withWebhookNode { api, receiver, _ in
            let id = try await api.register(receiver.url, kinds: ["code_created"])
            await receiver.command("down")
            for _ in 0..<3 { _ = try await api.curl("POST", "/sessions", json: "{}") }
            // Refused connections, retried with back-off: the first delivery holds the others (in order).
            #expect(await api.waitForHead(of: id) { ($0["attempts"] as? Int ?? 0) >= 3 }, "never retried")
            let head = try await api.deliveries(id).last ?? [:]
            #expect((head["last_error"] as? String ?? "").contains("refused"), "\(head)")
            #expect(try await api.deliveries(id).dropLast().allSatisfy { $0["attempts"] as? Int == 0 }, "sent out of order")
            // Back, but failing (the mode set before it listens, so no attempt can slip through as 200); "retry now"
            // ends the back-off rather than the test waiting it out.
            await receiver.command("mode fail")
            await receiver.command("up")
            let retried = try await api.curl("POST", "/webhooks/\(id)/retry")
            #expect(retried.status == 202, "\(retried)")
            #expect(
                await receiver.process.waitUntilEvents {
                    $0.contains { $0["event"] as? String == "request" && $0["status"] as? Int == 503 }
                }, "\(receiver.process.transcript)")
            #expect(receiver.accepted.isEmpty, "a request was taken while the receiver was failing")
            await receiver.command("mode ok")
            #expect(try await api.curl("POST", "/webhooks/\(id)/retry").status == 202)
            #expect(await receiver.waitForAccepted(3), "\(receiver.process.transcript)")
            let ids = receiver.accepted.compactMap(WebhookReceiver.eventID)
            #expect(ids.count == 3 && ids == ids.sorted() && Set(ids).count == 3, "\(ids)")
            #expect(await api.waitForHead(of: id) { $0["state"] as? String == "delivered" })
            let log = try await api.deliveries(id)
            #expect(log.allSatisfy { $0["state"] as? String == "delivered" }, "\(log)")
            #expect((log.last?["attempts"] as? Int ?? 0) >= 4, "\(log)")
        }
    }

    @Test("a hanging receiver and one answering 64 MiB hold one sender each, for a bounded time and read")
    func hostileReceiversAreBounded() async throws {
        try await withWebhookNode(extra: ["--webhook-timeout", "2s"]) { api, good, certificates in
            let hanging = try await WebhookReceiver(certificates: certificates)
            let flooding = try await WebhookReceiver(certificates: certificates)
            defer {
                Task { await hanging.process.stop() }
                Task { await flooding.process.stop() }
            }
            await hanging.command("mode hang")
            await flooding.command("mode huge")
            let hangingID = try await api.register(hanging.url, kinds: ["code_created"])
            let floodingID = try await api.register(flooding.url, kinds: ["code_created"])
            _ = try await api.register(good.url, kinds: ["code_created"])
            _ = try await api.curl("POST", "/sessions", json: "{}")
            #expect(await good.waitForAccepted(1), "the good receiver waited for the others")
            // The flood: taken as delivered (200) after reading the head and 1 KiB; the connection closed long before
            // 64 MiB were sent (the kernel's buffers hold a few MiB).
            #expect(await api.waitForHead(of: floodingID) { $0["state"] as? String == "delivered" })
            #expect(await flooding.process.waitForEvent("huge_sent") != nil)
            let sent = await flooding.process.waitForEvent("huge_sent")?["bytes"] as? Int ?? .max
            #expect(sent < 32 << 20, "the node read on: \(sent) bytes went out")
            // The hang: given up at the timeout, retried later.
            #expect(await api.waitForHead(of: hangingID) { ($0["attempts"] as? Int ?? 0) >= 1 })
            let head = try await api.deliveries(hangingID).last ?? [:]
            #expect((head["last_error"] as? String ?? "").contains("status line"), "\(head)")
            #expect(head["state"] as? String == "pending")
            // The node itself answered all along.
            #expect(try await api.curl("GET", "/sessions").status == 200)
        }
    }

    @Test("a node killed with deliveries pending delivers them after its restart, with the same event ids")
    func killedNodeDeliversAfterRestart() async throws {
        try await withCertificates { certificates in
            let receiver = try await WebhookReceiver(certificates: certificates)
            let options = Self.options(certificates)
            var server = try await SupporterServer(certificate: certificates.server, extra: options)
            do {
                await receiver.command("mode fail")
                let added = try await server.control(["webhook", "add", receiver.url, "--events", "code_created"])
                #expect((added["webhooks"] as? [[String: Any]])?.first?["secret"] is String, "\(added)")
                for _ in 0..<3 { _ = try await server.createCode() }
                #expect(await receiver.process.waitUntilEvents { $0.contains { $0["event"] as? String == "request" } })
                let tried = Set(receiver.requests.compactMap(WebhookReceiver.eventID))
                server.process.signal(SIGKILL)
                _ = await server.process.waitForExit()
                await receiver.command("mode ok")
                server = try await SupporterServer(certificate: certificates.server, extra: options, reusing: server.folder)
                #expect(await receiver.waitForAccepted(3), "\(receiver.process.transcript)")
                let ids = receiver.accepted.compactMap(WebhookReceiver.eventID)
                #expect(ids == ids.sorted() && Set(ids).count == 3, "\(ids)")
                #expect(tried.isSubset(of: Set(ids)), "a delivery tried before the kill came with another id: \(tried) vs \(ids)")
                let listed = try await server.control(["webhook", "list"])
                let id = try #require((listed["webhooks"] as? [[String: Any]])?.first?["id"] as? String)
                let log = try await server.control(["webhook", "deliveries", id])
                let rows = log["deliveries"] as? [[String: Any]] ?? []
                #expect(rows.count == 3 && rows.allSatisfy { $0["state"] as? String == "delivered" }, "\(log)")
                // The CLI's redelivery and removal.
                let again = try await server.control(["webhook", "redeliver", id, String(rows[0]["id"] as? Int ?? 0)])
                #expect((again["deliveries"] as? [[String: Any]])?.first?["redelivery_of"] as? Int == rows[0]["id"] as? Int)
                #expect(await receiver.waitForAccepted(4))
                _ = try await server.control(["webhook", "remove", id])
                #expect((try await server.control(["webhook", "list"])["webhooks"] as? [[String: Any]])?.isEmpty == true)
            } catch {
                await server.close()
                await receiver.process.stop()
                throw error
            }
            await server.close()
            await receiver.process.stop()
        }
    }

    @Test("two nodes on one database: each event is delivered once, whichever node wrote it")
    func clusterDeliversEachEventOnce() async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        try await withCertificates { certificates in
            let receiver = try await WebhookReceiver(certificates: certificates)
            let options = Self.options(certificates) + ["--store", uri, "--presence-lease", "10s"]
            var nodes: [SupporterServer] = []
            do {
                for _ in 0..<2 { nodes.append(try await SupporterServer(certificate: certificates.server, extra: options)) }
                _ = try await nodes[0].control(["webhook", "add", receiver.url, "--events", "code_created"])
                for index in 0..<20 { _ = try await nodes[index % 2].createCode() }
                #expect(await receiver.waitForAccepted(20), "\(receiver.process.transcript)")
                let ids = receiver.accepted.compactMap(WebhookReceiver.eventID)
                #expect(Set(ids).count == 20 && ids.count == 20, "an event twice or missing: \(ids.sorted())")
                #expect(ids == ids.sorted(), "out of order: \(ids)")
                let listed = try await nodes[1].control(["webhook", "list"])
                let endpoint = (listed["webhooks"] as? [[String: Any]])?.first
                #expect(endpoint?["pending"] as? Int == 0 && endpoint?["failed"] as? Int == 0, "\(listed)")
            } catch {
                for node in nodes { await node.close() }
                await receiver.process.stop()
                throw error
            }
            for node in nodes { await node.close() }
            await receiver.process.stop()
        }
    }

    /// The node's webhook options: trust the test CA, reach the receivers on loopback, retry fast.
    static func options(_ certificates: TestCertificates) -> [String] {
        [
            "--webhook-trust", certificates.caPath, "--webhook-allow-address", "127.0.0.0/8", "--webhook-retry-base",
            "200ms",
        ]
    }
}

/// Runs `body` with a REST node delivering webhooks (``WebhookDeliveryTests/options(_:)`` and `extra`), and one
/// receiver in `ok` mode.
private func withWebhookNode(
    extra: [String] = [], _ body: (RESTNode, WebhookReceiver, TestCertificates) async throws -> Void
) async throws {
    try await withCertificates { certificates in
        let receiver = try await WebhookReceiver(certificates: certificates)
        let server = try await SupporterServer(
            certificate: certificates.server,
            extra: ["--api-listen", "127.0.0.1:0"] + WebhookDeliveryTests.options(certificates) + extra)
        do {
            let listening = try #require(await server.process.waitForEvent("listening"))
            let apiPort = try #require(listening["api_port"] as? Int)
            let admin = try #require(try await server.control(["token", "--scope", "admin"])["token"] as? String)
            try await body(
                RESTNode(server: server, apiPort: apiPort, caPath: certificates.caPath, adminToken: admin, deviceToken: ""),
                receiver, certificates)
        } catch {
            await server.close()
            await receiver.process.stop()
            throw error
        }
        await server.close()
        await receiver.process.stop()
    }
}

/// tests/webhooks/receiver.py on 127.0.0.1 with the test CA's server certificate.
final class WebhookReceiver: Sendable {
    let process: CLIProcess
    let port: Int

    var url: String { "https://127.0.0.1:\(port)/hook" }

    init(certificates: TestCertificates) async throws {
        process = try CLIProcess(
            "/usr/bin/python3",
            [
                RESTNode.packageRoot + "/tests/webhooks/receiver.py", "--cert", certificates.server.certificatePath,
                "--key", certificates.server.keyPath,
            ], keepStdinOpen: true)
        guard let port = await process.waitForEvent("listening")?["port"] as? Int else {
            await process.stop()
            throw HarnessError("the webhook receiver did not start\n\(process.transcript)")
        }
        self.port = port
    }

    /// Sends a command (`mode …`, `down`, `up`) and waits until the receiver has taken it.
    func command(_ text: String) async {
        let word = text.split(separator: " ").first.map(String.init) ?? text
        let before = process.events.filter { $0["event"] as? String == word }.count
        process.write(text + "\n")
        _ = await process.waitUntilEvents { $0.filter { $0["event"] as? String == word }.count > before }
    }

    /// Every request it received, in order.
    var requests: [[String: Any]] { process.events.filter { $0["event"] as? String == "request" } }
    /// The requests it answered 200, in order.
    var accepted: [[String: Any]] { requests.filter { $0["status"] as? Int == 200 } }

    func waitForAccepted(_ count: Int) async -> Bool {
        await process.waitUntilEvents { events in
            events.filter { $0["event"] as? String == "request" && $0["status"] as? Int == 200 }.count >= count
        }
    }

    /// A request's `RemoteSupport-Event-Id`.
    static func eventID(_ request: [String: Any]) -> Int? {
        (request["headers"] as? [String: String])?["remotesupport-event-id"].flatMap { Int($0) }
    }
}

extension RESTNode {
    /// Registers an endpoint; returns its id.
    func register(_ url: String, kinds: [String]) async throws -> String {
        let list = kinds.map { "\"\($0)\"" }.joined(separator: ",")
        let created = try await curl("POST", "/webhooks", json: #"{"url":"\#(url)","event_kinds":[\#(list)]}"#)
        return try #require(created.object?["id"] as? String, "\(created)")
    }

    /// Endpoint `id`'s delivery log, newest first.
    func deliveries(_ id: String) async throws -> [[String: Any]] {
        try await curl("GET", "/webhooks/\(id)/deliveries").object?["deliveries"] as? [[String: Any]] ?? []
    }

    /// Waits until the oldest delivery of endpoint `id` satisfies `condition` (the log read again at each try).
    func waitForHead(of id: String, _ condition: @escaping ([String: Any]) -> Bool) async -> Bool {
        await pollUntil {
            guard let head = try? await deliveries(id).last else { return false }
            return condition(head)
        }
    }
}

/// Looks at `condition` (a REST read: state that announces nothing) every 50 ms until it holds or ``waitDeadline``
/// passes; whether it held.
func pollUntil(_ condition: () async -> Bool) async -> Bool {
    let end = ContinuousClock.now + waitDeadline
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= end { return false }
        guard await wallClockPause(.milliseconds(50)) else { return await condition() }
    }
}
