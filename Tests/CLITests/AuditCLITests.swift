import Foundation
import Testing
import DeviceNode
import SupportWire
import TestSupport

/// `rsup-supporter audit --verify` and `audit prune` as programs, on the data folder of a running node.
@Suite("rsup-supporter audit --verify and prune", .serialized)
struct AuditCLITests {
    static let sqlite3 = "/usr/bin/sqlite3"

    /// `audit trail verified: N events, head <12 hex digits>`: N and the head.
    static func verified(_ result: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) -> (Int, String)? {
        #expect(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
        #expect(result.stderr.isEmpty, "\(result)", sourceLocation: sourceLocation)
        guard result.stdout.count == 1, let line = result.stdout.first,
            let match = line.wholeMatch(of: /audit trail verified: (\d+) events, head ([0-9a-f]{12})/),
            let count = Int(match.1)
        else {
            Issue.record("not a verification line: \(result)", sourceLocation: sourceLocation)
            return nil
        }
        return (count, String(match.2))
    }

    @Test("verify, prune to an archive, verify the archive, and a dropped trigger fails verification")
    func verifyPruneAndDetect() async throws {
        try await withSupporter { _, node in
            for _ in 0..<3 { _ = try await node.createCode() }
            let (before, _) = try #require(Self.verified(try await supporter("audit", "--verify", "--data", node.data)))
            #expect(before >= 3)

            // Everything so far goes to an archive; the node keeps appending after the cut.
            let archive = node.folder.file("audit-archive.jsonl")
            let pruned = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", archive, "--data", node.data)
            #expect(pruned.exitCode == 0, "\(pruned)")
            let summary = try #require(pruned.stdout.first)
            #expect(summary.hasPrefix("archived \(before) events (ids 1–\(before)) to \(archive); anchor "), "\(summary)")
            let anchor = String(summary.suffix(12))
            let attributes = try FileManager.default.attributesOfItem(atPath: archive)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)

            let empty = try #require(Self.verified(try await supporter("audit", "--verify", "--data", node.data)))
            #expect(empty == (0, anchor))
            _ = try await node.createCode()
            let (after, _) = try #require(Self.verified(try await supporter("audit", "--verify", "--data", node.data)))
            #expect(after >= 1)

            let checked = try await supporter("audit", "--verify", "--archive", archive, "--data", node.data)
            #expect(checked.exitCode == 0, "\(checked)")
            #expect(checked.stdout == ["archive verified: \(before) events (ids 1–\(before)), anchor \(anchor)"])

            // The archive is never overwritten.
            let again = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", archive, "--data", node.data)
            expectError(again, exitCode: 1, mentions: [archive, "never overwritten"])

            guard FileManager.default.isExecutableFile(atPath: Self.sqlite3) else { return }
            let forged = try await runCommand(
                Self.sqlite3, [node.data + "/supporter.sqlite", "DROP TRIGGER audit_events_no_update"])
            #expect(forged.exitCode == 0, "\(forged)")
            let broken = try await supporter("audit", "--verify", "--data", node.data)
            expectError(broken, exitCode: 1, mentions: ["audit trail check failed", "audit_events_no_update", "missing"])
            #expect(broken.stdout.isEmpty)
        }
    }

    @Test(
        "audit --verify and prune usage errors: exit 2",
        arguments: [
            (["audit", "prune", "--archive", "a.jsonl"], "--before is required"),
            (["audit", "prune", "--before", "2026-01-01T00:00:00Z"], "--archive is required"),
            (["audit", "prune", "--before", "yesterday", "--archive", "a.jsonl"], "RFC 3339"),
            (["audit", "--verify", "--code", "123-456-789"], "--code does not go with --verify"),
            (["audit", "--archive", "a.jsonl"], "--archive goes with --verify or prune"),
            (["audit", "prune", "extra", "--before", "2026-01-01T00:00:00Z", "--archive", "a"], "unexpected argument"),
        ])
    func usageErrors(arguments: [String], words: String) async throws {
        let result = try await runCommand(Binaries.supporter, arguments)
        expectError(result, exitCode: 2, mentions: [words])
    }

    @Test("audit --verify without a store names the folder, exit 1")
    func verifyWithoutAStore() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let result = try await supporter("audit", "--verify", "--data", folder.path)
        expectError(result, exitCode: 1, mentions: [folder.path, "no audit trail"])
    }
}
