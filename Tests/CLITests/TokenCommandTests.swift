import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-supporter token`, `token list` and `token revoke` against a running node.
@Suite("rsup-supporter token", .serialized)
struct TokenCommandTests {
    @Test("a token is listed by id and label, never shown again; revoking it refuses its next registration")
    func listAndRevoke() async throws {
        try await withSupporter { certificates, server in
            let issued = try await server.control(["token", "--label", "field tablet 7"])
            let token = try #require(issued["token"] as? String)
            let listed = try #require(try await server.control(["token", "list"])["tokens"] as? [[String: Any]])
            let entry = try #require(listed.first { $0["label"] as? String == "field tablet 7" })
            let id = try #require(entry["id"] as? String)
            #expect(entry["scope"] as? String == "device")
            #expect(entry["revoked_at"] == nil)
            #expect(!listed.description.contains(token))

            let code = try await server.createCode()
            _ = try await server.control(["token", "revoke", "--id", id])
            let after = try #require(try await server.control(["token", "list"])["tokens"] as? [[String: Any]])
            #expect(after.first { $0["id"] as? String == id }?["revoked_at"] != nil)

            let refused = try await runCommand(
                Binaries.device, ["connect", server.address, "--code", code, "--token", token, "--ca", certificates.caPath])
            expectError(refused, exitCode: 1, mentions: ["API token was refused"])

            let again = try await runCommand(
                Binaries.supporter, ["token", "revoke", "--id", id, "--data", server.data])
            #expect(again.exitCode == 1, "\(again)")

            let trail = try await runCommand(Binaries.supporter, ["audit", "--data", server.data, "--json"])
            let kinds = trail.stdout.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["kind"] as? String
            }
            #expect(kinds.contains("token_issued"))
            #expect(kinds.contains("token_revoked"))
        }
    }
}
