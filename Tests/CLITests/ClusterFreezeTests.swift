import Foundation
import TestSupport
import Testing

/// Three `rsup-supporter serve` processes on one PostgreSQL server; node 1 is frozen (SIGSTOP) past its presence lease
/// while its devices are in active sessions, they resume on node 3, and node 1 is thawed (SIGCONT): fencing (issue 22,
/// docs/cluster.md "Fencing") makes node 1 drop those sessions without a word in the audit trail.
@Suite("a frozen node comes back", .serialized)
struct ClusterFreezeTests {
    static let devices = 3

    @Test("SIGSTOP past the lease, resume elsewhere, SIGCONT: no code listed by two nodes, no false end rows")
    func aThawedNodeDropsTheSessionsItLost() async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        try await withCertificates { certificates in
            let store = ["--store", uri, "--presence-lease", "2s", "--resume-grace", "60s", "--keepalive", "2s"]
            var nodes: [SupporterServer] = []
            var devices: [CLIProcess] = []
            do {
                for _ in 0..<3 { nodes.append(try await SupporterServer(certificate: certificates.server, extra: store)) }
                try await freezeAndThaw(nodes, uri: uri, caPath: certificates.caPath) { devices.append($0) }
            } catch {
                nodes[0].process.signal(SIGCONT)
                for device in devices { await device.stop() }
                for node in nodes { await node.close() }
                throw error
            }
            for device in devices { await device.stop() }
            for node in nodes { await node.close() }
        }
    }

    /// Seconds between two device events, by their `time` fields.
    static func seconds(from start: [String: Any], to end: [String: Any]) -> Double? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let a = (start["time"] as? String).flatMap(format.date(from:)),
            let b = (end["time"] as? String).flatMap(format.date(from:))
        else { return nil }
        return b.timeIntervalSince(a)
    }

    /// The codes `node` lists as held by a device on itself (not on another node, not open).
    private func heldHere(_ node: SupporterServer) async throws -> Set<String> {
        let listed = try await node.control(["list"])
        let entries = listed["codes"] as? [[String: Any]] ?? []
        return Set(
            entries.compactMap { entry in
                guard entry["node"] == nil, let state = entry["state"] as? String, state != "open" else { return nil }
                return entry["code"] as? String
            })
    }

    private func endRows(_ uri: String, _ codes: [String]) async throws -> [String] {
        var rows: [String] = []
        for code in codes {
            let audit = try await runCommand(Binaries.supporter, ["audit", "--store", uri, "--code", code, "--json"])
            rows += audit.stdout.filter { $0.contains("\"device_offline\"") || $0.contains("\"session_ended\"") }
        }
        return rows
    }

    private func freezeAndThaw(
        _ nodes: [SupporterServer], uri: String, caPath: String, started: (CLIProcess) -> Void
    ) async throws {
        let (first, second, third) = (nodes[0], nodes[1], nodes[2])
        let token = try await first.issueToken()
        try await second.ensureAccount("alice", displayName: "Alice")
        var codes: [String] = []
        var devices: [CLIProcess] = []
        for index in 0..<Self.devices {
            let code = try await second.createCode()
            codes.append(code)
            let device = try CLIProcess(
                Binaries.device,
                [
                    "connect", first.address, third.address, "--code", code, "--token", token, "--name", "phone-\(index)",
                    "--json", "--ca", caPath, "--auto-accept", "--keepalive", "2s",
                ])
            started(device)
            devices.append(device)
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try await second.connect(code, as: "alice")
            _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
        }
        #expect(try await heldHere(first) == Set(codes))

        first.process.signal(SIGSTOP)
        for device in devices {
            let lost = try #require(await device.waitForEvent("reconnecting"), "\(device.transcript)")
            let resumed = try #require(
                await device.waitForEvent("resumed", timeout: .seconds(50)), "\(device.transcript)\n\(third.process.transcript)")
            // The frozen node accepts TCP (the kernel does) and never finishes TLS: one redial timeout (3 s) on it,
            // then node 3, where node 1's lease (2 s) has run out by then.
            let took = try #require(Self.seconds(from: lost, to: resumed))
            print("frozen node: device link lost → resumed on node 3 in \(took) s")
            #expect(took < 3 + 2 + 3, "\(device.transcript)")
        }
        #expect(try await heldHere(third) == Set(codes))

        first.process.signal(SIGCONT)
        let thawed = ContinuousClock.now
        var stillHeld = Set(codes)
        while !stillHeld.isEmpty, ContinuousClock.now - thawed < .seconds(1) {
            stillHeld = try await heldHere(first).intersection(codes)
        }
        print("frozen node thawed: its lost sessions dropped after \(ContinuousClock.now - thawed)")
        #expect(stillHeld.isEmpty, "node 1 still lists \(stillHeld) 1 s after SIGCONT\n\(first.process.transcript)")
        #expect(try await heldHere(third) == Set(codes))
        // The sessions go on: node 2's supporter still reaches every device (on node 3 now).
        for (code, device) in zip(codes, devices) {
            _ = try await second.control(["end", "--code", code])
            _ = try #require(await device.waitForEvent("disconnected"), "\(device.transcript)")
        }
        // Node 1 stops cleanly: were it still holding any of them, its stop would end them (`going_away`) too.
        await first.close()
        let rows = try await endRows(uri, codes)
        #expect(rows.count == 2 * Self.devices, "end rows (one device_offline and one session_ended each):\n\(rows.joined(separator: "\n"))")
        #expect(!rows.contains { $0.contains("going_away") || $0.contains("connection_lost") }, "\(rows)")
        let verify = try await runCommand(Binaries.supporter, ["audit", "--verify", "--store", uri])
        #expect(verify.exitCode == 0, "\(verify)")
        #expect(verify.stdout.first?.hasPrefix("audit trail verified: ") == true, "\(verify)")
    }
}
