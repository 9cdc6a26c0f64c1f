import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-supporter serve --store`: the node's durable state in PostgreSQL (a real throwaway cluster), with a real
/// device process; bad store options and an unreachable server end the start with one clear line.
@Suite("serve --store", .serialized)
struct ServeStoreTests {
    @Test("serve --store postgres://…: a device registers, a request connects, and the state outlives the node")
    func postgresStoreServesADeviceAndKeepsState() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(cluster.port)/rsup"
        try await withCertificates { certificates in
            let node = try await SupporterServer(certificate: certificates.server, extra: ["--store", uri])
            let token = try await node.issueToken()
            let code = try await node.createCode()
            let device = try node.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath], extra: ["--auto-accept"])
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try #require(await node.waitForEvent("device_online", code: code), "\(node.process.transcript)")
            _ = try await node.connect(code)
            _ = try #require(await node.waitForEvent("connected", code: code), "\(node.process.transcript)")
            #expect(!FileManager.default.fileExists(atPath: node.data + "/supporter.sqlite"))
            await node.close(keepingData: true)

            // The same database, a new process: the account, the token and the code are there.
            let again = try await SupporterServer(certificate: certificates.server, extra: ["--store", uri], reusing: node.folder)
            let users = try await again.control(["user", "list"])
            #expect((users["users"] as? [[String: Any]] ?? []).contains { $0["login"] as? String == "alice" }, "\(users)")
            let second = try again.startDevice(code: code, token: token, trust: ["--ca", certificates.caPath])
            _ = try #require(await second.waitForEvent("online"), "\(second.transcript)")
            await again.close()
        }
    }

    @Test("two nodes on one PostgreSQL: list on one names the node holding the device; connect and end there are routed")
    func controlCommandsOnOneNodeReachADeviceOnAnother() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let store = ["--store", "postgres://rsup@127.0.0.1:\(cluster.port)/rsup"]
        try await withCertificates { certificates in
            let holder = try await SupporterServer(certificate: certificates.server, extra: store)
            let other = try await SupporterServer(certificate: certificates.server, extra: store)
            let holderID = try #require(await holder.process.waitForEvent("listening")?["node_id"] as? String)
            let token = try await holder.issueToken()
            let code = try await holder.createCode()
            let device = try holder.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath], extra: ["--auto-accept"])
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            func entry(on node: SupporterServer) async throws -> [String: Any]? {
                try await node.control(["list"])["codes"].flatMap { $0 as? [[String: Any]] }?
                    .first { $0["code"] as? String == code }
            }
            func waitFor(_ state: String, on node: SupporterServer) async throws -> [String: Any]? {
                let found = try? await retrying("the code \(state) on the node") { () async throws -> [String: Any] in
                    guard let found = try await entry(on: node), found["state"] as? String == state else {
                        throw WaitTimeout(description: "not \(state) yet")
                    }
                    return found
                }
                if let found { return found }
                return try await entry(on: node)
            }
            let online = try await waitFor("online", on: other)
            #expect(online?["node"] as? String == holderID, "\(String(describing: online))")
            #expect(try await entry(on: holder)?["node"] == nil)  // its own device

            _ = try await other.connect(code)
            _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
            _ = try #require(await holder.waitForEvent("connected", code: code), "\(holder.process.transcript)")
            #expect(try await waitFor("active", on: other)?["state"] as? String == "active")
            _ = try await other.control(["end", "--code", code])
            let ended = try #require(await device.waitForEvent("disconnected"), "\(device.transcript)")
            #expect(ended["reason"] as? String == "ended_by_supporter")
            await holder.close()
            await other.close()
        }
    }

    @Test("an unreachable PostgreSQL server is one line and exit 1, an unknown store a usage error")
    func unreachableOrUnknownStoreIsOneLine() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let common = [
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"), "--cert",
                certificates.server.certificatePath, "--key", certificates.server.keyPath,
            ]
            let unreachable = try await runCommand(
                Binaries.supporter, common + ["--store", "postgres://rsup:secret@127.0.0.1:1/rsup?connect_timeout=2"])
            #expect(unreachable.exitCode == 1, "\(unreachable)")
            #expect(unreachable.stderr.count == 1, "\(unreachable)")
            #expect(unreachable.stderr.first?.contains("connect to PostgreSQL") == true, "\(unreachable)")
            #expect(!unreachable.stderr.joined().contains("secret"), "the password was printed: \(unreachable)")
            let unknown = try await runCommand(Binaries.supporter, common + ["--store", "mysql://db/rsup"])
            #expect(unknown.exitCode == 2, "\(unknown)")
            #expect(unknown.stderr.first?.contains("--store") == true, "\(unknown)")
        }
    }
}
