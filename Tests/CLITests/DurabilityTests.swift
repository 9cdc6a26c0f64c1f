import Foundation
import Synchronization
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// The supporter node's store (`DIR/supporter.sqlite`) across crashes and restarts, with real processes: every event
/// the node printed has its audit record after `kill -9`, codes and tokens outlive the process, bans do too, and the
/// audit command's filters select exactly what they say.
@Suite("supporter node durability")
struct DurabilityTests {
    // MARK: kill -9

    @Test("kill -9 mid-session: every printed event is audited, codes and tokens survive, ids only grow")
    func killMidSessionKeepsAcknowledgedState() async throws {
        try await withNodeLineage { certificates, lineage in
            let trust = ["--ca", certificates.caPath]
            let node = try await lineage.start()
            let token = try await node.issueToken()
            let unusedToken = try await node.issueToken()

            // One code per role; each device stays in its state until the kill.
            enum Role: CaseIterable { case waiting, waiting2, pending, pending2, active, active2, rejecting, slow, churn }
            var codes: [Role: String] = [:]
            for (index, role) in Role.allCases.enumerated() {
                let reply = try await node.control(
                    ["create", "--type", index.isMultiple(of: 2) ? "remote" : "assist", "--description", "role \(role)"])
                codes[role] = try #require((reply["code"] as? [String: Any])?["code"] as? String)
            }
            func code(_ role: Role) -> String { codes[role]! }

            var devices: [Role: CLIProcess] = [:]
            for role in Role.allCases where role != .churn {
                let extra: [String] =
                    switch role {
                    case .waiting, .waiting2, .active, .active2: ["--auto-accept"]
                    case .rejecting: ["--auto-reject"]
                    case .slow: ["--prompt-timeout", "1s"]
                    default: []
                    }
                // Without --auto-accept a request waits for an answer on stdin: a pipe that stays open and silent.
                devices[role] = try node.startDevice(
                    code: code(role), token: token, trust: trust, extra: extra,
                    keepStdinOpen: [.pending, .pending2, .slow].contains(role))
            }
            for (role, device) in devices {
                _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
                _ = try #require(
                    await node.waitForEvent("device_online", code: code(role)), "\(node.process.transcript)")
            }
            for role in [Role.pending, .pending2, .active, .active2, .rejecting, .slow] {
                _ = try await node.connect(code(role))
            }
            for role in [Role.pending, .pending2, .slow] {
                _ = try #require(await devices[role]!.waitForEvent("request"), "\(devices[role]!.transcript)")
            }
            for role in [Role.active, .active2] {
                _ = try #require(await node.waitForEvent("connected", code: code(role)), "\(node.process.transcript)")
                _ = try #require(await node.waitForEvent("voip", code: code(role)), "\(node.process.transcript)")
            }
            for role in [Role.rejecting, .slow] {
                _ = try #require(await node.waitForEvent("rejected", code: code(role)), "\(node.process.transcript)")
            }
            // Two refused registrations from 127.0.0.1; a third would start the address's back-off.
            expectError(
                try await runCommand(
                    Binaries.device, ["connect", node.address, "--code", code(.waiting), "--token", "rsk_wrong"] + trust),
                exitCode: 1, mentions: ["API token was refused"])
            let unknownCode = Set(codes.values).contains("999-999-999") ? "999-999-998" : "999-999-999"
            expectError(
                try await runCommand(
                    Binaries.device, ["connect", node.address, "--code", unknownCode, "--token", token] + trust),
                exitCode: 1, mentions: ["session code is not known"])
            _ = try #require(
                await node.waitForEvent("registration_refused", code: unknownCode), "\(node.process.transcript)")

            let listed = try await node.control(["list"])["codes"] as? [[String: Any]] ?? []
            let before = Dictionary(uniqueKeysWithValues: listed.compactMap { entry in
                (entry["code"] as? String).map { ($0, ListedCode(entry)) }
            })
            #expect(Set(before.keys) == Set(codes.values), "\(listed)")

            // Two loops keep the node busy until it dies: a device joins, is connected, is ended, leaves; and a
            // pending request is cancelled and sent again.
            let churnDevices = Mutex<[CLIProcess]>([])
            let churnRounds = Counter()
            let requestRounds = Counter()
            let churnCode = code(.churn)
            let pendingCode = code(.pending)
            let churn = Task {
                while !Task.isCancelled {
                    guard
                        let device = try? node.startDevice(
                            code: churnCode, token: token, trust: trust, extra: ["--auto-accept"]),
                        { churnDevices.withLock { $0.append(device) }; return true }(),
                        await device.waitForEvent("online") != nil,
                        (try? await node.connect(churnCode)) != nil,
                        await device.waitForEvent("connected") != nil,
                        (try? await node.control(["end", "--code", churnCode])) != nil,
                        await device.waitForExit() != nil
                    else { return }
                    churnRounds.increment()
                }
            }
            let requests = Task {
                while !Task.isCancelled {
                    guard (try? await node.control(["cancel", "--code", pendingCode])) != nil,
                        (try? await node.connect(pendingCode)) != nil
                    else { return }
                    requestRounds.increment()
                }
            }
            // A random moment in the churn: after a random number of further rounds, not a random wall-clock delay.
            let rounds = (churn: 2 + Int.random(in: 0...3), requests: 3 + Int.random(in: 0...3))
            guard await waitUntil(timeout: patience, { churnRounds.value >= rounds.churn && requestRounds.value >= rounds.requests })
            else {
                churn.cancel()
                requests.cancel()
                throw HarnessError("the loops made no progress\n\(node.process.transcript)")
            }
            node.process.signal(SIGKILL)
            #expect(await node.process.waitForExit() == 128 + SIGKILL, "\(node.process.transcript)")
            churn.cancel()
            requests.cancel()
            await churn.value
            await requests.value
            let printed = printedEvents(node.process)
            #expect(printed.filter { $0["event"] as? String == "ended" }.count >= 2, "\(node.process.transcript)")
            #expect(
                !node.process.stderrLines.contains { $0.contains("audit trail") }, "\(node.process.transcript)")

            // A new node on the same data: the trail, the codes and the tokens are there.
            let restarted = try await lineage.start()
            let trail = try await auditTrail(restarted.data)
            expectIncreasingIDs(trail)
            expectAudited(auditKeys(promisedBy: printed), in: trail)
            // What the devices were told is in the trail too: each "online", "request", "connected" a device printed
            // has its record (the node sends the frame only after the commit).
            var told: [(CLIProcess, String)] = devices.map { ($0.value, code($0.key)) }
            for device in churnDevices.withLock({ $0 }) { told.append((device, churnCode)) }
            expectDevicesToldOnlyAudited(told, trail: trail)

            let relisted = try await restarted.control(["list"])["codes"] as? [[String: Any]] ?? []
            let after = Dictionary(uniqueKeysWithValues: relisted.compactMap { entry in
                (entry["code"] as? String).map { ($0, ListedCode(entry)) }
            })
            #expect(Set(after.keys) == Set(before.keys), "\(relisted)")
            for (code, old) in before {
                guard let new = after[code] else { continue }
                #expect(new.type == old.type && new.description == old.description, "\(old.text) → \(new.text)")
                // A session the killed process held waits for its device to resume (its resume grace from the
                // start); any other code is open.
                #expect(new.state == "open" || new.reconnecting && new.state != "closed", "\(new.text)")
                // Every request was sent as Alice: one assigned before the kill stays; a later one may have landed.
                #expect(new.supporter == old.supporter || (old.supporter == nil && new.supporter == "alice"))
            }

            for (role, issued) in [(Role.waiting, token), (.waiting2, unusedToken)] {
                let device = try restarted.startDevice(
                    code: code(role), token: issued, trust: trust, extra: ["--auto-accept"])
                _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
                _ = try #require(
                    await restarted.waitForEvent("device_online", code: code(role)), "\(restarted.process.transcript)")
            }
            _ = try await restarted.connect(code(.waiting))
            _ = try #require(
                await restarted.waitForEvent("connected", code: code(.waiting)), "\(restarted.process.transcript)")

            // Killed again: both runs' printed events are in the trail, which only grew.
            restarted.process.signal(SIGKILL)
            #expect(await restarted.process.waitForExit() == 128 + SIGKILL)
            let finalTrail = try await auditTrail(restarted.data)
            expectIncreasingIDs(finalTrail)
            #expect(finalTrail.prefix(trail.count).map(\.id) == trail.map(\.id))
            expectAudited(
                auditKeys(promisedBy: printed) + auditKeys(promisedBy: printedEvents(restarted.process)), in: finalTrail)
        }
    }

    // MARK: bans

    @Test("an address blocked for failed registrations stays blocked after a restart", arguments: [SIGTERM, SIGKILL])
    func registrationBanSurvivesRestart(signal: Int32) async throws {
        try await withNodeLineage { certificates, lineage in
            let trust = ["--ca", certificates.caPath]
            let node = try await lineage.start()
            let token = try await node.issueToken()
            let code = try await node.createCode()
            // Failures on another code, so what blocks the valid registration below is the address alone.
            let decoy = code == "123-123-123" ? "321-321-321" : "123-123-123"
            // Failures, each after the last block ended, until the address is blocked for half a minute or more
            // (with the defaults, 3 free failures then 0.5 s doubling: the 9th failure blocks for 32 s).
            while true {
                let result = try await runCommand(
                    Binaries.device, ["connect", node.address, "--code", decoy, "--token", "rsk_wrong"] + trust)
                let line = result.errorLine ?? ""
                if line.contains("API token was refused") { continue }
                guard let wait = retryMilliseconds(line) else {
                    throw HarnessError("neither refused nor rate limited\n\(result)")
                }
                if wait >= 30_000 { break }
                // wall clock: waits out the block the node announced (its own real-time back-off), as a client must
                try await Task.sleep(for: .milliseconds(wait + 50))
            }
            // Blocked is the address: another invalid-token registration, on another code, is refused as well (a
            // valid device token is never judged by its address: SPEC §13.1).
            let refused = try await runCommand(
                Binaries.device, ["connect", node.address, "--code", code, "--token", "rsk_still-wrong"] + trust)
            expectError(refused, exitCode: 1, mentions: ["too many failed attempts"])
            #expect((retryMilliseconds(refused.errorLine ?? "") ?? 0) > 20_000, "\(refused)")

            node.process.signal(signal)
            #expect(await node.process.waitForExit() == (signal == SIGKILL ? 128 + SIGKILL : 0))
            let restarted = try await lineage.start()
            let again = try await runCommand(
                Binaries.device, ["connect", restarted.address, "--code", code, "--token", "rsk_still-wrong"] + trust)
            expectError(again, exitCode: 1, mentions: ["too many failed attempts"])
            let wait = retryMilliseconds(again.errorLine ?? "") ?? 0
            #expect(wait > 5_000 && wait <= 300_000, "\(again)")
            _ = token
        }
    }

    @Test(
        "bad bearer tokens are audited before they are answered; the REST back-off is in memory, so a restart forgets it",
        arguments: [SIGTERM, SIGKILL])
    func restFailuresAreAuditedAndTheirBackoffIsForgottenOnRestart(signal: Int32) async throws {
        try await withNodeLineage(extra: ["--api-listen", "127.0.0.1:0"]) { certificates, lineage in
            let node = try await lineage.start()
            let admin = try #require(try await node.control(["token", "--scope", "admin"])["token"] as? String)
            // Bad tokens, each after the last block ended, until the address must wait a few seconds.
            var sent = 0
            while true {
                let blocked = try await restList(node, bearer: "rsk_wrong", ca: certificates.caPath)
                sent += 1
                if blocked.status == 401 { continue }
                guard blocked.status == 429, let retryAfter = blocked.retryAfter else {
                    throw HarnessError("neither 401 nor 429 with Retry-After: \(blocked)")
                }
                if retryAfter >= 4 { break }
                // wall clock: waits out the Retry-After the node announced (its own real-time back-off), as a client must
                try await Task.sleep(for: .seconds(retryAfter))
            }
            // The block is on guesses: a good token is served.
            #expect(try await restList(node, bearer: admin, ca: certificates.caPath).status == 200)

            node.process.signal(signal)
            #expect(await node.process.waitForExit() == (signal == SIGKILL ? 128 + SIGKILL : 0))
            let restarted = try await lineage.start()
            // REST failures are kept in memory only: a proxy's address cannot carry a lock-out across restarts.
            let again = try await restList(restarted, bearer: "rsk_wrong", ca: certificates.caPath)
            #expect(again.status == 401, "\(again)")
            #expect(try await restList(restarted, bearer: admin, ca: certificates.caPath).status == 200)
            // The first failure was durable before its 401, even through kill -9; a clean stop also writes the count
            // of the failures it held back.
            let trail = try await auditTrail(restarted.data)
            let failed = trail.filter { $0.details["what"] == "rest_authentication_failed" }
            #expect(failed.first?.details["source_address"] == "127.0.0.1", "\(trail)")
            // Every guess before the stop is in the trail, as its own row or in a window's count — all of them after
            // a clean stop (it writes the open window's count), all but the open window's after kill -9. (Under load
            // the loop can outlast an audit window, which then closes with a row of its own.)
            let counted = trail.filter { $0.details["what"] == "rest_authentication_failures_suppressed" }
            let held = counted.compactMap { $0.details["count"].flatMap { Int($0) } }.reduce(0, +)
            let recorded = failed.count - 1 + held  // the restarted node's one guess is a row of its own
            if signal == SIGTERM {
                #expect(recorded == sent, "\(sent) guesses sent\n\(trail)")
            } else {
                #expect(recorded <= sent, "\(sent) guesses sent\n\(trail)")
            }
        }
    }

    // MARK: audit filters

    @Test("audit --code, --from, --to and --limit give exactly the matching events")
    func auditFiltersSelectExactly() async throws {
        try await withSupporter { certificates, node in
            let trust = ["--ca", certificates.caPath]
            let token = try await node.issueToken()
            let first = try await node.createCode()
            let second = try await node.createCode()
            // Three phases: a session on the first code, one on the second, then the first again. Each phase starts a
            // device process and waits for its exit, so phases are milliseconds apart; the windows below are checked to
            // separate them (and the expected rows use the same >=/< rule as the CLI, so rows sharing a millisecond
            // with a window's edge are expected exactly where the CLI puts them).
            for code in [first, second, first] {
                let device = try node.startDevice(code: code, token: token, trust: trust, extra: ["--auto-accept"])
                _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
                _ = try await node.connect(code)
                _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
                _ = try await node.control(["end", "--code", code])
                #expect(await device.waitForExit() == 0, "\(device.transcript)")
            }
            let all = try await auditTrail(node.data)
            // A window from the end of the first session to the start of the third: the second session and the
            // edges of the first and third.
            let firstEnd = try #require(all.firstIndex { $0.code == first && $0.kind == "device_offline" })
            let thirdStart = try #require(all.lastIndex { $0.code == first && $0.kind == "session_started" })
            let from = all[firstEnd]
            let to = all[thirdStart]
            #expect(from.milliseconds < to.milliseconds)

            let cases: [([String], [AuditRecord])] = [
                (["--code", first], all.filter { $0.code == first }),
                (["--code", second], all.filter { $0.code == second }),
                (["--code", "000-000-000"], []),
                (["--from", from.time], all.filter { $0.milliseconds >= from.milliseconds }),
                (["--to", to.time], all.filter { $0.milliseconds < to.milliseconds }),
                (
                    ["--from", from.time, "--to", to.time],
                    all.filter { $0.milliseconds >= from.milliseconds && $0.milliseconds < to.milliseconds }
                ),
                (
                    ["--code", first, "--from", from.time],
                    all.filter { $0.code == first && $0.milliseconds >= from.milliseconds }
                ),
                (
                    ["--code", second, "--from", from.time, "--to", to.time],
                    all.filter {
                        $0.code == second && $0.milliseconds >= from.milliseconds && $0.milliseconds < to.milliseconds
                    }
                ),
                (["--limit", "3"], Array(all.prefix(3))),
                (["--code", first, "--limit", "2"], Array(all.filter { $0.code == first }.prefix(2))),
            ]
            for (filters, expected) in cases {
                let selected = try await auditTrail(node.data, filters, limit: nil)
                #expect(selected.map(\.id) == expected.map(\.id), "audit \(filters.joined(separator: " "))")
            }
            // The bounds: `from` is included, `to` excluded.
            let window = try await auditTrail(node.data, ["--from", from.time, "--to", to.time])
            #expect(window.first?.id == all.first { $0.milliseconds == from.milliseconds }?.id)
            #expect(!window.contains { $0.id == to.id })
            #expect(Set(window.map(\.code)) == [first, second], "\(window)")
            // The window separates the phases: it holds the second session and neither the first's start nor the
            // third's.
            #expect(window.contains { $0.code == second && $0.kind == "session_started" }, "\(window)")
            #expect(!window.contains { $0.code == first && $0.kind == "session_started" }, "\(window)")
        }
    }
}

// MARK: - helpers

/// A count shared with a task.
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

/// Nodes started one after another on one data folder (restarts); all stopped, and the folder deleted, at the end.
final class NodeLineage: Sendable {
    let certificate: CertificateFile
    let extra: [String]
    let folder: TemporaryFolder
    private let nodes = Mutex<[SupporterServer]>([])

    init(certificate: CertificateFile, extra: [String]) throws {
        self.certificate = certificate
        self.extra = extra
        folder = try TemporaryFolder()
    }

    /// Starts a node on the lineage's data (end the previous one first).
    func start() async throws -> SupporterServer {
        let node = try await SupporterServer(certificate: certificate, extra: extra, reusing: folder)
        nodes.withLock { $0.append(node) }
        return node
    }

    func close() async {
        for node in nodes.withLock({ $0 }) { await node.close(keepingData: true) }
        folder.remove()
    }
}

func withNodeLineage<T>(
    extra: [String] = [], _ body: (TestCertificates, NodeLineage) async throws -> T
) async throws -> T {
    try await withCertificates { certificates in
        let lineage = try NodeLineage(certificate: certificates.server, extra: extra)
        do {
            let result = try await body(certificates, lineage)
            await lineage.close()
            return result
        } catch {
            await lineage.close()
            throw error
        }
    }
}

/// A code as `list --json` shows it.
struct ListedCode: Sendable {
    let type: String?
    let description: String?
    let state: String?
    let supporter: String?
    let reconnecting: Bool

    init(_ entry: [String: Any]) {
        type = entry["type"] as? String
        description = entry["description"] as? String
        state = entry["state"] as? String
        supporter = entry["supporter"] as? String
        reconnecting = entry["reconnecting"] as? Bool ?? false
    }

    var text: String {
        "\(type ?? "-") '\(description ?? "")' \(state ?? "-")\(reconnecting ? " reconnecting" : "") \(supporter ?? "-")"
    }
}

/// One line of `rsup-supporter audit --json`.
struct AuditRecord: Sendable, CustomStringConvertible {
    let id: Int
    /// As printed: RFC 3339 with milliseconds, fit for `--from` and `--to`.
    let time: String
    let milliseconds: Int64
    let code: String?
    let kind: String
    let details: [String: String]

    var description: String { "#\(id) \(time) \(code ?? "-") \(kind) \(details)" }

    /// What tells this record apart from others of its kind on its code, as far as a printed event can say.
    var key: AuditKey {
        let detail =
            switch kind {
            case "request_allowed", "session_started", "request_rejected", "request_timed_out":
                "request_id=" + (details["request_id"] ?? "")
            case "voip_state": "state=" + (details["state"] ?? "")
            case "session_ended", "device_offline": "reason=" + (details["reason"] ?? "")
            case "error": (details["what"] ?? "") + "/" + (details["reason"] ?? "")
            default: ""
            }
        return AuditKey(code: code, kind: kind, detail: detail)
    }
}

struct AuditKey: Hashable, Sendable, CustomStringConvertible {
    let code: String?
    let kind: String
    let detail: String
    var description: String { "\(code ?? "-") \(kind) \(detail)" }
}

/// The audit trail read straight from the data folder (`rsup-supporter audit --json`), node running or not.
func auditTrail(_ data: String, _ filters: [String] = [], limit: Int? = 1_000_000) async throws -> [AuditRecord] {
    let result = try await runCommand(
        Binaries.supporter, ["audit", "--data", data, "--json"] + (limit.map { ["--limit", "\($0)"] } ?? []) + filters)
    guard result.exitCode == 0 else { throw HarnessError("rsup-supporter audit failed\n\(result)") }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return try result.stdout.map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let id = object["id"] as? Int, let time = object["time"] as? String, let kind = object["kind"] as? String,
            let date = formatter.date(from: time)
        else { throw HarnessError("not an audit record: \(line)") }
        return AuditRecord(
            id: id, time: time, milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()),
            code: object["code"] as? String, kind: kind, details: object["details"] as? [String: String] ?? [:])
    }
}

/// The JSON events a node printed. A last line cut short by `kill -9` was never acknowledged and is left out.
func printedEvents(_ process: CLIProcess) -> [[String: Any]] {
    let lines = process.stdoutLines
    return lines.enumerated().compactMap { index, line in
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        if object == nil, index != lines.count - 1 { Issue.record("not a JSON event: \(line)") }
        return object
    }
}

/// Every event a device printed that the node could only tell it after a commit has its audit record: `online` a
/// `device_online`, `request` a `request_sent`, `connected` a `session_started` (counted per code).
func expectDevicesToldOnlyAudited(
    _ devices: [(CLIProcess, String)], trail: [AuditRecord], sourceLocation: SourceLocation = #_sourceLocation
) {
    let kinds = ["online": "device_online", "request": "request_sent", "connected": "session_started"]
    var told: [String: Int] = [:]
    for (device, code) in devices {
        for event in printedEvents(device) {
            guard let name = event["event"] as? String, let kind = kinds[name] else { continue }
            told[code + " " + kind, default: 0] += 1
        }
    }
    var recorded: [String: Int] = [:]
    for record in trail { recorded[(record.code ?? "-") + " " + record.kind, default: 0] += 1 }
    #expect(!told.isEmpty, sourceLocation: sourceLocation)
    for (key, count) in told {
        #expect(recorded[key, default: 0] >= count, "devices were told \(count)× \(key), the trail has \(recorded[key, default: 0])", sourceLocation: sourceLocation)
    }
}

/// The audit records the node wrote before printing `events` (in the order one node printed them).
func auditKeys(promisedBy events: [[String: Any]]) -> [AuditKey] {
    var active: Set<String> = []
    var keys: [AuditKey] = []
    for event in events {
        let name = event["event"] as? String ?? ""
        guard name != "listening", name != "stopping" else { continue }
        guard let code = event["code"] as? String else {
            Issue.record("an event without a code: \(event)")
            continue
        }
        func key(_ kind: String, _ detail: String = "") { keys.append(AuditKey(code: code, kind: kind, detail: detail)) }
        let request = "request_id=\(event["request_id"] as? Int ?? -1)"
        let reason = event["reason"] as? String ?? ""
        switch name {
        case "device_online":
            key("device_online")
        case "connected":
            active.insert(code)
            key("request_allowed", request)
            key("session_started", request)
        case "voip":
            key("voip_state", "state=" + (event["state"] as? String ?? ""))
        case "rejected":
            key(reason == "request_timed_out" ? "request_timed_out" : "request_rejected", request)
        case "request_timed_out":
            key("request_timed_out", request)
        case "ended":
            if active.remove(code) != nil { key("session_ended", "reason=" + reason) }
            key("device_offline", "reason=" + reason)
        case "registration_refused":
            key("error", "registration_refused/" + reason)
        case "session_error":
            key("error", "session_error/" + reason)
        case "granted":
            key("features_granted")
        case "features_denied":
            key("feature_denied")
        case "feature_granted":
            key("feature_granted")
        case "feature_refused":
            key("feature_refused")
        case "feature_revoked":
            key("feature_revoked")
        case "reconnecting":
            key("device_reconnecting")
        case "resumed":
            key("device_resumed")
        case "chat", "app_message", "file_progress", "file", "delivered", "message_refused", "undelivered":
            break  // message contents and deliveries are not audited (SPEC §15.4); the grants are
        default:
            Issue.record("a printed event this test does not know: \(event)")
        }
    }
    return keys
}

/// Every promised record is in `trail` (each record answering for one printed event).
func expectAudited(
    _ promised: [AuditKey], in trail: [AuditRecord], sourceLocation: SourceLocation = #_sourceLocation
) {
    var available: [AuditKey: Int] = [:]
    for record in trail { available[record.key, default: 0] += 1 }
    var missing: [AuditKey] = []
    for key in promised {
        if let count = available[key], count > 0 {
            available[key] = count - 1
        } else {
            missing.append(key)
        }
    }
    #expect(
        missing.isEmpty,
        "printed but not audited: \(missing)\ntrail:\n\(trail.map(\.description).joined(separator: "\n"))",
        sourceLocation: sourceLocation)
    #expect(promised.count > 20, "too few events to prove much: \(promised.count)", sourceLocation: sourceLocation)
}

func expectIncreasingIDs(_ trail: [AuditRecord], sourceLocation: SourceLocation = #_sourceLocation) {
    let ids = trail.map(\.id)
    #expect(!ids.isEmpty, sourceLocation: sourceLocation)
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "\(ids)", sourceLocation: sourceLocation)
    #expect(Set(ids).count == ids.count, sourceLocation: sourceLocation)
}

/// The wait in "retry in N ms" of a rate-limited registration's error line.
func retryMilliseconds(_ line: String) -> Int? {
    guard line.contains("too many failed attempts"), let range = line.range(of: #"retry in \d+ ms"#, options: .regularExpression)
    else { return nil }
    return Int(line[range].dropFirst("retry in ".count).dropLast(" ms".count))
}

/// What `GET /api/v1/sessions` answered.
struct RESTResponse: Sendable, CustomStringConvertible {
    let status: Int
    let retryAfter: Int?
    let headers: [String]
    var description: String { headers.joined(separator: "\n") }
}

/// `GET /api/v1/sessions` on `node`'s REST API with `curl`, as `bearer`.
func restList(_ node: SupporterServer, bearer: String, ca: String) async throws -> RESTResponse {
    guard let port = await node.process.waitForEvent("listening")?["api_port"] as? Int else {
        throw HarnessError("no api_port in 'listening'\n\(node.process.transcript)")
    }
    let result = try await runCommand(
        "/usr/bin/curl",
        [
            "--silent", "--show-error", "--max-time", "30", "--output", "/dev/null", "--dump-header", "-", "--cacert",
            ca, "--header", "Authorization: Bearer \(bearer)", "https://127.0.0.1:\(port)/api/v1/sessions",
        ])
    let headers = result.stdout.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    guard result.exitCode == 0, let statusLine = headers.first, statusLine.hasPrefix("HTTP/"),
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
    else { throw HarnessError("curl failed\n\(result)") }
    let retryAfter = headers.first { $0.lowercased().hasPrefix("retry-after:") }
        .flatMap { Int($0.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespaces)) }
    return RESTResponse(status: status, retryAfter: retryAfter, headers: headers)
}
