import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// Three `rsup-supporter serve` processes on one PostgreSQL server (docs/cluster.md) and a real device process that
/// knows two of them: a supporter on node 2 serves a device on node 1; node 1 is killed with SIGKILL mid-session and
/// the device resumes its session on node 3, where node 2's supporter still reaches it.
@Suite("several nodes, one service", .serialized)
struct ClusterFailoverTests {
    @Test("node 1 killed mid-session: the device resumes on node 3 and node 2's supporter ends the session there")
    func aSessionSurvivesTheDeathOfItsNode() async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        try await withCertificates { certificates in
            let store = ["--store", uri, "--presence-lease", "2s", "--resume-grace", "60s", "--keepalive", "5s"]
            var nodes: [SupporterServer] = []
            var device: CLIProcess?
            do {
                for _ in 0..<3 { nodes.append(try await SupporterServer(certificate: certificates.server, extra: store)) }
                device = try await failover(nodes, uri: uri, caPath: certificates.caPath) { device = $0 }
            } catch {
                await device?.stop()
                for node in nodes { await node.close() }
                throw error
            }
            await device?.stop()
            for node in nodes { await node.close() }
        }
    }

    private func failover(
        _ nodes: [SupporterServer], uri: String, caPath: String, started: (CLIProcess) -> Void
    ) async throws -> CLIProcess {
        let (first, second, third) = (nodes[0], nodes[1], nodes[2])
        let token = try await first.issueToken()
        let code = try await second.createCode()
        try await second.ensureAccount("alice", displayName: "Alice")
        let device = try CLIProcess(
            Binaries.device,
            [
                "connect", first.address, third.address, "--code", code, "--token", token, "--name", "phone", "--json",
                "--ca", caPath, "--auto-accept",
            ])
        started(device)
        _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
        _ = try await second.connect(code, as: "alice")
        _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
        _ = try #require(await first.waitForEvent("connected", code: code), "\(first.process.transcript)")

        let killedAt = ContinuousClock.now
        first.process.signal(SIGKILL)
        _ = try #require(await device.waitForEvent("reconnecting"), "\(device.transcript)")
        _ = try #require(
            await device.waitForEvent("resumed", timeout: .seconds(30)),
            "\(device.transcript)\n\(third.process.transcript)")
        print("cluster failover: node killed → session resumed on another node in \(ContinuousClock.now - killedAt)")
        _ = try #require(await third.waitForEvent("resumed", code: code), "\(third.process.transcript)")

        // Node 2 sees the session active on node 3, and ends it there.
        let listed = try await second.control(["list"])
        let entry = (listed["codes"] as? [[String: Any]] ?? []).first { $0["code"] as? String == code }
        #expect(entry?["state"] as? String == "active", "\(listed)")
        #expect(entry?["node"] != nil, "\(listed)")
        _ = try await second.control(["end", "--code", code])
        _ = try #require(await device.waitForEvent("disconnected"), "\(device.transcript)")

        // One audit trail: the takeover is in it, as any node (or the offline audit command) reads it.
        let audit = try await runCommand(Binaries.supporter, ["audit", "--store", uri, "--code", code, "--json"])
        let text = audit.stdout.joined(separator: "\n")
        for kind in [
            "device_online", "request_sent", "session_started", "device_reconnecting", "device_resumed", "session_ended",
        ] {
            #expect(text.contains("\"\(kind)\""), "no \(kind) in\n\(audit)")
        }
        return device
    }
}
