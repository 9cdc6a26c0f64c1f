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

    /// Where a lone node keeps its data, and how its process stops.
    enum LoneStore: String, CaseIterable, Sendable { case sqlite, postgres }
    enum LoneStop: String, CaseIterable, Sendable { case sigterm, sigkill }

    /// A lone node's store arguments (`--store`, or none for the data folder's SQLite file) and the `audit` ones.
    private func loneStore(_ kind: LoneStore, _ database: ThrowawayPostgres?) -> (serve: [String], audit: (SupporterServer) -> [String]) {
        guard kind == .postgres, let database else { return ([], { ["--data", $0.data] }) }
        let uri = "postgres://rsup@127.0.0.1:\(database.port)/rsup"
        return (["--store", uri, "--presence-lease", "10s"], { _ in ["--store", uri] })
    }

    @Test(
        "a lone node restarted (SIGTERM or SIGKILL, start again on its port and data): its devices resume, nothing ends",
        arguments: LoneStore.allCases, LoneStop.allCases)
    func aLoneNodeRestartKeepsItsSessions(store kind: LoneStore, stop: LoneStop) async throws {
        let database = kind == .postgres ? try ThrowawayPostgres() : nil
        defer { database?.stop() }
        let (storeArguments, auditArguments) = loneStore(kind, database)
        try await withCertificates { certificates in
            let store = storeArguments + ["--resume-grace", "60s"]
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
                node.process.signal(stop == .sigterm ? SIGTERM : SIGKILL)
                let status = await node.process.waitForExit(timeout: patience)
                if stop == .sigterm { #expect(status == 0, "\(node.process.transcript)") }
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
                    let audit = try await runCommand(
                        Binaries.supporter, ["audit"] + auditArguments(again) + ["--code", code, "--json"])
                    rows += audit.stdout.filter { $0.contains("\"device_offline\"") || $0.contains("\"session_ended\"") }
                    let reconnecting = audit.stdout.filter { $0.contains("\"device_reconnecting\"") }
                    // A new process on PostgreSQL is a new node of the cluster; on SQLite it is the same node again.
                    #expect(reconnecting.count == 1, "\(reconnecting)")
                    if kind == .sqlite { #expect(reconnecting.first?.contains("node_restarted") == true, "\(reconnecting)") }
                }
                #expect(rows.count == 2 * codes.count, "one device_offline and one session_ended each:\n\(rows.joined(separator: "\n"))")
                #expect(!rows.contains { $0.contains("going_away") || $0.contains("connection_lost") }, "\(rows)")
                let verify = try await runCommand(Binaries.supporter, ["audit", "--verify"] + auditArguments(again))
                #expect(verify.exitCode == 0, "\(verify)")
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

    @Test("a lone node on SQLite restarted without its device: the session shows reconnecting, then ends after the grace")
    func aSessionNotResumedAfterARestartEnds() async throws {
        try await withCertificates { certificates in
            let store = ["--resume-grace", "3s"]
            let node = try await SupporterServer(certificate: certificates.server, extra: store)
            var restarted: SupporterServer?
            do {
                let token = try await node.issueToken()
                try await node.ensureAccount("alice", displayName: "Alice")
                let code = try await node.createCode()
                let device = try CLIProcess(
                    Binaries.device,
                    [
                        "connect", node.address, "--code", code, "--token", token, "--name", "phone", "--json",
                        "--ca", certificates.caPath, "--auto-accept",
                    ])
                _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
                _ = try await node.connect(code, as: "alice")
                _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
                node.process.signal(SIGTERM)
                #expect(await node.process.waitForExit(timeout: patience) == 0, "\(node.process.transcript)")
                // The device is gone for good before the node is back.
                await device.stop()
                await node.close(keepingData: true)
                let again = try await SupporterServer(
                    certificate: certificates.server, extra: store, reusing: node.folder, port: node.port)
                restarted = again
                let listed = try await again.control(["list"])
                let entry = (listed["codes"] as? [[String: Any]])?.first { $0["code"] as? String == code }
                #expect(entry?["reconnecting"] as? Bool == true, "\(listed)")
                _ = try #require(await again.waitForEvent("ended", code: code), "\(again.process.transcript)")
                let audit = try await runCommand(Binaries.supporter, ["audit", "--data", again.data, "--code", code, "--json"])
                let ends = audit.stdout.filter { $0.contains("\"device_offline\"") || $0.contains("\"session_ended\"") }
                #expect(ends.count == 2 && ends.allSatisfy { $0.contains("connection_lost") }, "\(ends)")
                #expect(!audit.stdout.contains { $0.contains("going_away") }, "\(audit.stdout)")
                // Its code is free again: a new device registers at once.
                let next = try CLIProcess(
                    Binaries.device,
                    [
                        "connect", again.address, "--code", code, "--token", token, "--name", "phone-2", "--json",
                        "--ca", certificates.caPath,
                    ])
                defer { Task { await next.stop() } }
                _ = try #require(await next.waitForEvent("online"), "\(next.transcript)")
            } catch {
                await restarted?.close()
                await node.close()
                throw error
            }
            await restarted?.close()
            await node.close()
        }
    }
}
