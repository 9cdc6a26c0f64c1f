import Foundation
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

@Suite struct StoreSchemaTests {
    static func tables(_ database: SQLiteDatabase) throws -> [String] {
        try database.withConnection {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [String] in
            let statement = try connection.prepare(
                """
                SELECT name FROM sqlite_schema
                WHERE type IN ('table', 'index', 'trigger') AND name NOT LIKE 'sqlite_%' ORDER BY name
                """)
            var names: [String] = []
            while try statement.step() { names.append(statement.text(at: 0) ?? "") }
            return names
        }
    }

    static let everything = [
        "api_tokens", "api_tokens_by_id", "audit_anchors", "audit_anchors_no_delete", "audit_anchors_no_update",
        "audit_anchors_through_the_gate", "audit_events", "audit_events_by_code_time", "audit_events_by_time",
        "audit_events_no_delete", "audit_events_no_replace", "audit_events_no_update", "audit_events_webhook_outbox",
        "audit_prune_gate", "login_sessions", "login_sessions_by_login",
        "registration_backoff", "registration_backoff_by_last_failure", "resume_records", "session_code_feature_rules",
        "session_codes",
        "session_codes_by_assignee", "session_codes_by_created", "session_contents", "session_contents_by_time",
        "supporter_accounts", "webhook_deliveries", "webhook_deliveries_by_endpoint", "webhook_deliveries_finished",
        "webhook_deliveries_pending", "webhook_endpoints",
    ]

    @Test func migrationsCountUpFromOne() {
        #expect(!StoreSchema.migrations.isEmpty)
        for (offset, migration) in StoreSchema.migrations.enumerated() {
            #expect(migration.version == Int32(offset + 1))
        }
        #expect(StoreSchema.currentVersion == Int32(StoreSchema.migrations.count))
    }

    @Test func anEmptyFileIsMigratedToTheCurrentVersion() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("empty.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let store = try SessionStore(path: path)
        #expect(try StoreSchema.version(of: store.database) == StoreSchema.currentVersion)
        #expect(try Self.tables(store.database) == Self.everything)
    }

    @Test func reopeningACurrentDatabaseRunsNoMigration() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("current.sqlite")
        _ = try SessionStore(path: path)
        let database = try SQLiteDatabase(path: path)
        #expect(try StoreSchema.migrate(database) == StoreSchema.currentVersion)
        #expect(try Self.tables(database) == Self.everything)
    }

    @Test func anOlderDatabaseIsMigratedAndKeepsItsRows() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("older.sqlite")
        let first = StoreSchema.migrations
        do {
            let store = try SessionStore(path: path)
            try store.insert(SessionCodeRecord(code: "123456789", createdAt: Date(), validUntil: Date()))
        }
        let second = StoreSchema.Migration(
            version: Int32(first.count + 1), summary: "notes on codes",
            sql: "ALTER TABLE session_codes ADD COLUMN note TEXT; CREATE TABLE extra (x INTEGER) STRICT;")
        let database = try SQLiteDatabase(path: path)
        #expect(try StoreSchema.migrate(database, migrations: first + [second]) == StoreSchema.currentVersion)
        #expect(try StoreSchema.version(of: database) == second.version)
        #expect(try SQLiteDatabaseTests.scalar(database, "SELECT count(note) + count(*) FROM session_codes") == "1")
        #expect(try Self.tables(database).contains("extra"))
    }

    @Test func aFailingMigrationChangesNothing() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("failing.sqlite")
        _ = try SessionStore(path: path)
        let broken = StoreSchema.Migration(
            version: StoreSchema.currentVersion + 1, summary: "broken",
            sql: "CREATE TABLE half_done (x INTEGER); ALTER TABLE no_such_table ADD COLUMN y TEXT;")
        let database = try SQLiteDatabase(path: path)
        let error = #expect(throws: StoreError.self) {
            try StoreSchema.migrate(database, migrations: StoreSchema.migrations + [broken])
        }
        #expect(error?.operation.contains("migrate to schema version \(broken.version)") == true)
        #expect(error?.message.contains("no such table") == true)
        #expect(try StoreSchema.version(of: database) == StoreSchema.currentVersion)
        #expect(try !Self.tables(database).contains("half_done"))
    }

    @Test func aNewerDatabaseIsRefusedAndLeftAlone() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("newer.sqlite")
        do {
            let database = try SQLiteDatabase(path: path)
            try database.execute("CREATE TABLE from_the_future (x INTEGER); PRAGMA user_version = 99")
        }
        let error = #expect(throws: StoreError.self) { _ = try SessionStore(path: path) }
        #expect(error?.kind == .schemaTooNew)
        #expect(
            error?.message
                == "database schema version 99 is newer than this node supports (\(StoreSchema.currentVersion))")
        #expect(error?.description.contains(path) == true)
        let database = try SQLiteDatabase(path: path)
        #expect(try StoreSchema.version(of: database) == 99)
        #expect(try Self.tables(database) == ["from_the_future"])
    }

    /// A file as version 2 left it: audit events without digests, token digests without ids.
    @Test func aVersion2DatabaseGetsItsEventsChainedAndItsTokensIDs() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("version2.sqlite")
        do {
            let database = try SQLiteDatabase(path: path)
            try StoreSchema.migrate(database, migrations: Array(StoreSchema.migrations.prefix(2)))
            // More than one batch of the migration's step (1000 events).
            var sql = "BEGIN;"
            for index in 1...2500 {
                let code = index % 3 == 0 ? "NULL" : "'code\(index % 7)'"
                sql += "INSERT INTO audit_events (time, code, kind, details) VALUES (\(index), \(code), "
                    + "'device_online', '{\"n\":\"\(index)\"}');"
            }
            sql += "INSERT INTO api_tokens (digest, label, created_at, scope) VALUES (x'01', 'old', 5, 'admin');"
            sql += "INSERT INTO api_tokens (digest, created_at) VALUES (x'02', 6); COMMIT;"
            try database.execute(sql)
        }
        let store = try SessionStore(path: path)
        #expect(try StoreSchema.version(of: store.database) == StoreSchema.currentVersion)
        #expect(try Self.tables(store.database) == Self.everything)
        let verification = try store.verifyAudit()
        #expect(verification.isVerified, "\(verification.problems.prefix(3))")
        #expect(verification.eventCount == 2500)
        #expect(try store.append(AuditEvent(time: Date(), kind: .error)) == 2501)
        #expect(try store.verifyAudit().isVerified)
        // The first event links to the genesis digest; the step computes what appends compute.
        let first = try store.auditRow(1)
        #expect(first.previous == AuditChain.genesis)
        #expect(first.digest == first.computedDigest(after: AuditChain.genesis))

        let tokens = try store.tokens()
        #expect(tokens.map(\.label) == ["old", nil])
        #expect(tokens.map(\.scope) == [.admin, .device])
        #expect(Set(tokens.map(\.id)).count == 2 && tokens.allSatisfy { $0.id.count == 12 && !$0.isRevoked })
        #expect(try store.token(digest: [0x01])?.id == tokens[0].id)
        // The triggers are back after the step: the chained events cannot be changed.
        #expect(throws: StoreError.self) { try store.database.execute("UPDATE audit_events SET kind = 'x'") }
    }

    @Test func aFailingMigrationStepChangesNothing() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        let failing = StoreSchema.Migration(
            version: 1, summary: "half", sql: "CREATE TABLE half_done (x INTEGER)",
            then: { (_: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                throw StoreError(kind: .invalidData, operation: "compute", message: "refused by the test", path: "")
            })
        let error = #expect(throws: StoreError.self) { try StoreSchema.migrate(database, migrations: [failing]) }
        #expect(error?.operation == "migrate to schema version 1 (half) (compute)")
        #expect(try StoreSchema.version(of: database) == 0)
        #expect(try Self.tables(database).isEmpty)
    }

    @Test func migrationVersionsWithGapsAreRefused() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        let gap = StoreSchema.Migration(version: 3, summary: "gap", sql: "SELECT 1")
        #expect(throws: StoreError.self) { try StoreSchema.migrate(database, migrations: [gap]) }
        #expect(try StoreSchema.version(of: database) == 0)
    }
}
