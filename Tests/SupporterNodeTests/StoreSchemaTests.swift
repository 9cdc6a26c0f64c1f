import Foundation
import Testing

@testable import SupporterNode

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
        "api_tokens", "audit_events", "audit_events_by_code_time", "audit_events_by_time", "audit_events_no_delete",
        "audit_events_no_replace", "audit_events_no_update", "registration_backoff",
        "registration_backoff_by_last_failure", "session_codes",
        "session_codes_by_created",
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

    @Test func migrationVersionsWithGapsAreRefused() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        let gap = StoreSchema.Migration(version: 3, summary: "gap", sql: "SELECT 1")
        #expect(throws: StoreError.self) { try StoreSchema.migrate(database, migrations: [gap]) }
        #expect(try StoreSchema.version(of: database) == 0)
    }
}
