import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-supporter audit --store`: the offline audit commands on the store a node serves with, PostgreSQL (a real
/// throwaway cluster) or SQLite; tampering found the same way on both engines; prune and archives on PostgreSQL.
@Suite("audit --store", .serialized)
struct AuditStoreTests {
    static let psqlPath = "/usr/bin/psql"

    /// Runs `sql` with psql as the cluster's superuser; stdout's lines.
    @discardableResult
    static func psql(_ connectionString: String, _ sql: String) async throws -> [String] {
        let result = try await runCommand(Self.psqlPath, [connectionString, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
        #expect(result.exitCode == 0, "\(result)")
        return result.stdout
    }

    /// The same forgeries in an SQLite store, each trigger put back exactly as it was, so that only the rows differ.
    static func sqlite(_ file: String, _ statements: [String], bypassing triggers: [String]) async throws {
        var saved: [String] = []
        for trigger in triggers {
            let sql = try await runCommand(
                AuditCLITests.sqlite3, [file, "SELECT sql FROM sqlite_schema WHERE name = '\(trigger)'"])
            saved.append(sql.stdout.joined(separator: "\n"))
        }
        let script = ["BEGIN"] + triggers.map { "DROP TRIGGER \($0)" } + statements + saved + ["COMMIT"]
        let result = try await runCommand(AuditCLITests.sqlite3, [file, script.joined(separator: ";\n")])
        #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(result)")
    }

    /// `--verify --json`'s problems as (kind, id, message).
    static func problems(_ result: CommandResult) -> [String] {
        guard let line = result.stdout.first, let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)),
            let problems = (object as? [String: Any])?["problems"] as? [[String: Any]]
        else {
            Issue.record("no JSON verification: \(result)")
            return []
        }
        return problems.map { "\($0["kind"] ?? "-") \($0["id"] ?? "-") \($0["message"] ?? "-")" }
    }

    @Test("on PostgreSQL: list and --verify; an edited and a deleted event are found as on SQLite; prune then refuses")
    func postgresListVerifyAndTampering() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(cluster.port)/rsup"
        try await withCertificates { certificates in
            // The same history on both engines: a node that makes three codes and stops.
            let postgresNode = try await SupporterServer(certificate: certificates.server, extra: ["--store", uri])
            let sqliteNode = try await SupporterServer(certificate: certificates.server)
            defer { sqliteNode.folder.remove() }
            for node in [postgresNode, sqliteNode] {
                for _ in 0..<3 { _ = try await node.createCode() }
                await node.close(keepingData: true)
            }
            postgresNode.folder.remove()

            let listed = try await supporter("audit", "--store", uri, "--json")
            #expect(listed.exitCode == 0, "\(listed)")
            #expect(listed.stdout.filter { $0.contains("\"code_created\"") }.count == 3, "\(listed)")
            let verified = try #require(AuditCLITests.verified(try await supporter("audit", "--verify", "--store", uri)))
            let sqliteVerified = try #require(
                AuditCLITests.verified(try await supporter("audit", "--verify", "--data", sqliteNode.data)))
            #expect(verified.0 == sqliteVerified.0 && verified.0 >= 3)
            let head = try await Self.psql(cluster.connectionString, "SELECT encode(digest, 'hex') FROM audit_chain_head")
            #expect(head.first?.hasPrefix(verified.1) == true, "\(head) vs \(verified)")

            // Forged behind the store's back: event 2 edited, the newest event deleted.
            let last = verified.0
            try await Self.psql(
                cluster.connectionString,
                """
                SET session_replication_role = replica;
                UPDATE audit_events SET details = '{"forged":"yes"}' WHERE id = 2;
                DELETE FROM audit_events WHERE id = \(last)
                """)
            try await Self.sqlite(
                sqliteNode.data + "/supporter.sqlite",
                ["UPDATE audit_events SET details = '{\"forged\":\"yes\"}' WHERE id = 2", "DELETE FROM audit_events WHERE id = \(last)"],
                bypassing: ["audit_events_no_update", "audit_events_no_delete"])
            let broken = try await supporter("audit", "--verify", "--store", uri)
            expectError(broken, exitCode: 1, mentions: ["audit trail check failed", "event 2 was changed", "1 more"])
            let onPostgres = Self.problems(try await supporter("audit", "--verify", "--json", "--store", uri))
            let onSQLite = Self.problems(try await supporter("audit", "--verify", "--json", "--data", sqliteNode.data))
            #expect(onPostgres.count == 2 && onPostgres == onSQLite, "PostgreSQL \(onPostgres), SQLite \(onSQLite)")
            #expect(onPostgres.first?.hasPrefix("editedRow 2 ") == true, "\(onPostgres)")
            #expect(onPostgres.last?.hasPrefix("deletedRow \(last) ") == true, "\(onPostgres)")

            // A disabled append-only trigger is found too (SQLite's counterpart: a dropped one, in AuditCLITests).
            try await Self.psql(cluster.connectionString, "ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_change")
            let unguarded = Self.problems(try await supporter("audit", "--verify", "--json", "--store", uri))
            #expect(unguarded.last?.hasPrefix("alteredTrigger - the append-only trigger audit_events_no_change is disabled") == true, "\(unguarded)")

            // A trail that fails verification is not archived (that would bury the evidence): nothing written.
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let archive = folder.file("archive.jsonl")
            let pruned = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", archive, "--store", uri)
            expectError(pruned, exitCode: 1, mentions: ["fails verification, so nothing is archived"])
            #expect(!FileManager.default.fileExists(atPath: archive))
            #expect(try await Self.psql(cluster.connectionString, "SELECT count(*) FROM audit_events") == ["\(last - 1)"])
        }
    }

    /// Puts a store of the current schema back to what version 2 had (no anchors, no gate, the guard function that
    /// refuses everything; no message contents, no media descriptors, no webhooks), events kept: a database that a
    /// node of an earlier version left.
    static let backToVersion2 = """
        DROP TRIGGER audit_events_webhook_outbox ON audit_events; DROP FUNCTION audit_events_webhook_outbox();
        DROP TABLE webhook_deliveries; DROP TABLE webhook_endpoints;
        DROP TABLE session_contents; ALTER TABLE session_codes DROP COLUMN media_descriptor;
        DROP TABLE audit_anchors; DROP TABLE audit_prune_gate; DROP FUNCTION audit_anchors_guard();
        CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit events are append-only'; END $$;
        ALTER FUNCTION audit_events_append_only() RESET ALL;
        UPDATE schema_version SET version = 2
        """

    @Test("on PostgreSQL: a version 2 store migrates; prune archives while a node runs; trail and archives verify")
    func postgresPruneAndArchives() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let uri = "postgres://rsup@127.0.0.1:\(cluster.port)/rsup"
        try await withCertificates { certificates in
            // Events written under schema version 2, then a node of this version migrates the store.
            let older = try await SupporterServer(certificate: certificates.server, extra: ["--store", uri])
            for _ in 0..<3 { _ = try await older.createCode() }
            await older.close()
            try await Self.psql(cluster.connectionString, Self.backToVersion2)
            let node = try await SupporterServer(certificate: certificates.server, extra: ["--store", uri])
            defer { Task { await node.close() } }
            #expect(try await Self.psql(cluster.connectionString, "SELECT version FROM schema_version") == ["6"])
            let (before, _) = try #require(AuditCLITests.verified(try await supporter("audit", "--verify", "--store", uri)))
            let folder = try TemporaryFolder()
            defer { folder.remove() }

            // Everything so far, while the node runs; then the node goes on appending after the cut.
            let first = folder.file("first.jsonl")
            let pruned = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", first, "--store", uri)
            #expect(pruned.exitCode == 0, "\(pruned)")
            let summary = try #require(pruned.stdout.first)
            #expect(summary.hasPrefix("archived \(before) events (ids 1–\(before)) to \(first); anchor "), "\(summary)")
            let anchor = String(summary.suffix(12))
            #expect((try FileManager.default.attributesOfItem(atPath: first)[.posixPermissions] as? Int) == 0o600)
            #expect(try await Self.psql(cluster.connectionString, "SELECT count(*) FROM audit_events") == ["0"])
            let empty = try #require(AuditCLITests.verified(try await supporter("audit", "--verify", "--store", uri)))
            #expect(empty == (0, anchor))
            for _ in 0..<2 { _ = try await node.createCode() }
            let (after, _) = try #require(AuditCLITests.verified(try await supporter("audit", "--verify", "--store", uri)))
            #expect(after == 2)

            // A second cut; both archives check against the database's anchors.
            let second = folder.file("second.jsonl")
            let prunedAgain = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", second, "--store", uri)
            #expect(prunedAgain.stdout.first?.hasPrefix("archived 2 events (ids \(before + 1)–\(before + 2))") == true,
                "\(prunedAgain)")
            let checkedFirst = try await supporter("audit", "--verify", "--archive", first, "--store", uri)
            #expect(checkedFirst.stdout == ["archive verified: \(before) events (ids 1–\(before)), anchor \(anchor)"],
                "\(checkedFirst)")
            let checkedSecond = try await supporter("audit", "--verify", "--archive", second, "--store", uri)
            #expect(checkedSecond.exitCode == 0, "\(checkedSecond)")
            let again = try await supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", first, "--store", uri)
            expectError(again, exitCode: 1, mentions: [first, "never overwritten"])

            // A third cut while the node appends: the node's events wait for nothing, and whatever the archive did
            // not take stays in the trail, linked to its anchor.
            let third = folder.file("third.jsonl")
            async let prunedWhileAppending = supporter(
                "audit", "prune", "--before", "2999-01-01T00:00:00Z", "--archive", third, "--store", uri)
            for _ in 0..<20 { _ = try await node.createCode() }
            #expect(await (try prunedWhileAppending).exitCode == 0)
            let (left, _) = try #require(AuditCLITests.verified(try await supporter("audit", "--verify", "--store", uri)))
            #expect(left <= 20)
            let checkedThird = try await supporter("audit", "--verify", "--archive", third, "--store", uri)
            #expect(checkedThird.exitCode == 0 || !FileManager.default.fileExists(atPath: third), "\(checkedThird)")

            // Outside an archive the rows and the anchors still refuse changes, a temporary table does not stand in
            // for the gate.
            _ = try await node.createCode()
            for sql in ["DELETE FROM audit_events", "DELETE FROM audit_anchors",
                "INSERT INTO audit_anchors VALUES (99, decode(repeat('00', 32), 'hex'), 0, 1)",
                "CREATE TEMP TABLE audit_prune_gate (up_to_id bigint); INSERT INTO audit_prune_gate VALUES (1000000); "
                    + "DELETE FROM audit_events"]
            {
                let refused = try await runCommand(
                    Self.psqlPath, [cluster.connectionString, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
                #expect(refused.exitCode != 0 && refused.stderr.joined().contains("audit"), "\(sql): \(refused)")
            }
            // A trigger switched to replication only, or made conditional, is found.
            try await Self.psql(
                cluster.connectionString, "ALTER TABLE audit_anchors ENABLE REPLICA TRIGGER audit_anchors_no_change")
            try await Self.psql(
                cluster.connectionString,
                """
                CREATE OR REPLACE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
                FOR EACH ROW WHEN (false) EXECUTE FUNCTION audit_events_append_only()
                """)
            let switched = Self.problems(try await supporter("audit", "--verify", "--json", "--store", uri))
            #expect(switched.contains { $0.contains("audit_events_no_change is not the one the store created") },
                "\(switched)")
            #expect(switched.contains { $0.contains("audit_anchors_no_change fires only for replication") }, "\(switched)")
            // A guard function replaced by one that lets everything through is found.
            try await Self.psql(
                cluster.connectionString,
                """
                CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RETURN OLD; END $$
                """)
            let unguarded = Self.problems(try await supporter("audit", "--verify", "--json", "--store", uri))
            #expect(unguarded.contains { $0.hasPrefix("alteredTrigger - the function audit_events_append_only") },
                "\(unguarded)")
        }
    }

    @Test("a database without a node's store is refused and left untouched; --store sqlite:DIR reads the data folder")
    func emptyDatabaseAndSQLiteFolder() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let empty = try await supporter(
            "audit", "--verify", "--store", "postgres://rsup:secret@127.0.0.1:\(cluster.port)/rsup")
        expectError(empty, exitCode: 1, mentions: ["cannot open the audit trail", "holds no supporter node store"])
        #expect(!empty.stderr.joined().contains("secret"), "the password was printed: \(empty)")
        #expect(try await Self.psql(cluster.connectionString, "SELECT to_regclass('schema_version') IS NULL") == ["t"])

        try await withSupporter { _, node in
            _ = try await node.createCode()
            let byData = try await supporter("audit", "--verify", "--data", node.data)
            let byStore = try await supporter("audit", "--verify", "--store", "sqlite:" + node.data)
            #expect(AuditCLITests.verified(byStore) != nil)
            #expect(byStore.stdout == byData.stdout, "\(byStore) vs \(byData)")
            let listed = try await supporter("audit", "--store", "sqlite:" + node.data)
            #expect(listed.exitCode == 0 && listed.stdout.contains { $0.contains("code_created") }, "\(listed)")
            let both = try await supporter("audit", "--store", "sqlite:" + node.data, "--data", node.data)
            expectError(both, exitCode: 2, mentions: ["--data does not go with --store"])
        }
    }
}
