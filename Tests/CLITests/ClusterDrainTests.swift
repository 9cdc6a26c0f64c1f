import Foundation
import TestSupport
import Testing

/// A clean stop of one node of three (SIGTERM) while its devices are in active sessions: it hands each session over
/// (GOAWAY `going_away` with `resume_elsewhere`, SPEC §15.5 "Drain") and every device resumes on another node — a
/// rolling restart loses nothing (issue 22, item 6).
@Suite("a node drains", .serialized)
struct ClusterDrainTests {
    static let devices = 4

    /// How the node is told to stop.
    enum Stop: String, CaseIterable, Sendable { case sigterm, drainCommand }

    @Test(
        "SIGTERM or drain on a node with active sessions: every device resumes elsewhere, nothing ends, exit 0",
        arguments: Stop.allCases)
    func aDrainedNodeHandsItsSessionsOver(stop: Stop) async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        try await withCertificates { certificates in
            let store = ["--store", uri, "--presence-lease", "10s", "--resume-grace", "60s"]
            var nodes: [SupporterServer] = []
            var devices: [CLIProcess] = []
            do {
                for _ in 0..<3 { nodes.append(try await SupporterServer(certificate: certificates.server, extra: store)) }
                try await drain(nodes, uri: uri, caPath: certificates.caPath, stop: stop) { devices.append($0) }
            } catch {
                for device in devices { await device.stop() }
                for node in nodes { await node.close() }
                throw error
            }
            for device in devices { await device.stop() }
            for node in nodes { await node.close() }
        }
    }

    private func drain(
        _ nodes: [SupporterServer], uri: String, caPath: String, stop: Stop, started: (CLIProcess) -> Void
    ) async throws {
        let (first, second) = (nodes[0], nodes[1])
        let token = try await first.issueToken()
        try await second.ensureAccount("alice", displayName: "Alice")
        var codes: [String] = []
        var devices: [CLIProcess] = []
        for index in 0..<Self.devices {
            let code = try await second.createCode()
            codes.append(code)
            let device = try CLIProcess(
                Binaries.device,
                ["connect"] + nodes.map(\.address) + [
                    "--code", code, "--token", token, "--name", "phone-\(index)", "--json", "--ca", caPath,
                    "--auto-accept",
                ])
            started(device)
            devices.append(device)
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try await second.connect(code, as: "alice")
            _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
        }

        switch stop {
        case .sigterm: first.process.signal(SIGTERM)
        case .drainCommand:
            // It waits for the node to stop and says whether the sessions were handed over.
            let reply = try await first.control(["drain"])
            #expect(reply["hands_over"] as? Bool == true && reply["stopped"] as? Bool == true, "\(reply)")
        }
        #expect(await first.process.waitForExit(timeout: patience) == 0, "\(first.process.transcript)")
        for device in devices {
            let lost = try #require(await device.waitForEvent("reconnecting"), "\(device.transcript)")
            let resumed = try #require(await device.waitForEvent("resumed"), "\(device.transcript)")
            let took = ClusterFreezeTests.seconds(from: lost, to: resumed) ?? -1
            print("drain: device told to resume elsewhere → resumed in \(took) s")
            #expect(device.exitStatus == nil, "the device must keep its session: \(device.transcript)")
        }
        // The sessions go on: node 2's supporter still reaches every device, and ends each session there.
        for (code, device) in zip(codes, devices) {
            _ = try await second.control(["end", "--code", code])
            _ = try #require(await device.waitForEvent("disconnected"), "\(device.transcript)")
        }
        var rows: [String] = []
        for code in codes {
            let audit = try await runCommand(Binaries.supporter, ["audit", "--store", uri, "--code", code, "--json"])
            rows += audit.stdout.filter { $0.contains("\"device_offline\"") || $0.contains("\"session_ended\"") }
        }
        #expect(rows.count == 2 * Self.devices, "one device_offline and one session_ended each:\n\(rows.joined(separator: "\n"))")
        #expect(!rows.contains { $0.contains("going_away") || $0.contains("connection_lost") }, "\(rows)")
        let verify = try await runCommand(Binaries.supporter, ["audit", "--verify", "--store", uri])
        #expect(verify.exitCode == 0, "\(verify)")
    }

    @Test("a lone node on PostgreSQL restarted (SIGTERM, start again on its port): its devices resume, nothing ends")
    func aLoneNodeRestartKeepsItsSessions() async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        try await withCertificates { certificates in
            let store = ["--store", uri, "--presence-lease", "10s", "--resume-grace", "60s"]
            let node = try await SupporterServer(certificate: certificates.server, extra: store)
            var restarted: SupporterServer?
            var devices: [CLIProcess] = []
            do {
                let token = try await node.issueToken()
                try await node.ensureAccount("alice", displayName: "Alice")
                var codes: [String] = []
                for index in 0..<2 {
                    let code = try await node.createCode()
                    codes.append(code)
                    let device = try CLIProcess(
                        Binaries.device,
                        [
                            "connect", node.address, "--code", code, "--token", token, "--name", "phone-\(index)",
                            "--json", "--ca", certificates.caPath, "--auto-accept",
                        ])
                    devices.append(device)
                    _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
                    _ = try await node.connect(code, as: "alice")
                    _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
                }
                node.process.signal(SIGTERM)
                #expect(await node.process.waitForExit(timeout: patience) == 0, "\(node.process.transcript)")
                for device in devices {
                    _ = try #require(await device.waitForEvent("reconnecting"), "\(device.transcript)")
                }
                await node.close(keepingData: true)
                let again = try await SupporterServer(
                    certificate: certificates.server, extra: store, reusing: node.folder, port: node.port)
                restarted = again
                for device in devices {
                    _ = try #require(await device.waitForEvent("resumed"), "\(device.transcript)")
                    #expect(device.exitStatus == nil, "the device must keep its session: \(device.transcript)")
                }
                for (code, device) in zip(codes, devices) {
                    _ = try await again.control(["end", "--code", code])
                    _ = try #require(await device.waitForEvent("disconnected"), "\(device.transcript)")
                }
                var rows: [String] = []
                for code in codes {
                    let audit = try await runCommand(Binaries.supporter, ["audit", "--store", uri, "--code", code, "--json"])
                    rows += audit.stdout.filter { $0.contains("\"device_offline\"") || $0.contains("\"session_ended\"") }
                }
                #expect(rows.count == 2 * codes.count, "one device_offline and one session_ended each:\n\(rows.joined(separator: "\n"))")
                #expect(!rows.contains { $0.contains("going_away") || $0.contains("connection_lost") }, "\(rows)")
            } catch {
                for device in devices { await device.stop() }
                await restarted?.close()
                await node.close()
                throw error
            }
            for device in devices { await device.stop() }
            await restarted?.close()
            await node.close()
        }
    }
}
