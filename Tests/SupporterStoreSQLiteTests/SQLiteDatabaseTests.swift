import Foundation
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

@Suite struct SQLiteDatabaseTests {
    /// Reads the first column of the first row of `sql` as text.
    static func scalar(_ database: SQLiteDatabase, _ sql: String) throws -> String? {
        try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> String? in
            let statement = try connection.prepare(sql)
            return try statement.step() ? statement.text(at: 0) : nil
        }
    }

    struct Row: Equatable {
        var integer: Int64?
        var real: Double?
        var text: String?
        var blob: [UInt8]?
        var textType = "", blobType = ""
    }

    @Test func everyBindTypeReadsBackAsWritten() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        try database.execute("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)")
        let rows: [Row] = [
            Row(integer: .max, real: 1.5, text: "plain", blob: [0, 1, 2, 255], textType: "text", blobType: "blob"),
            // The empty string and the empty blob stay empty values, not NULL.
            Row(integer: .min, real: -0.25, text: "", blob: [], textType: "text", blobType: "blob"),
            Row(integer: 0, real: .infinity, text: "Grüße 👋🏽 مرحبا 你好 e\u{301}", blob: [0], textType: "text", blobType: "blob"),
            Row(integer: nil, real: nil, text: nil, blob: nil, textType: "null", blobType: "null"),
            Row(
                integer: 42, real: 1e-300, text: "with\u{0}nul", blob: Array(repeating: 7, count: 100_000),
                textType: "text", blobType: "blob"),
        ]
        try database.transaction { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            for row in rows {
                let insert = try connection.prepare("INSERT INTO t (i, d, s, b) VALUES (?, ?, ?, ?)")
                try insert.bind(row.integer, at: 1)
                try insert.bind(row.real, at: 2)
                try insert.bind(row.text, at: 3)
                try insert.bind(blob: row.blob, at: 4)
                try insert.run()
            }
        }
        let read = try database.withConnection {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [Row] in
            let select = try connection.prepare("SELECT i, d, s, b, typeof(s), typeof(b) FROM t ORDER BY rowid")
            var out: [Row] = []
            while try select.step() {
                out.append(
                    Row(
                        integer: select.int64(at: 0), real: select.double(at: 1), text: select.text(at: 2),
                        blob: select.blob(at: 3), textType: select.text(at: 4) ?? "",
                        blobType: select.text(at: 5) ?? ""))
            }
            return out
        }
        #expect(read == rows)
    }

    @Test func walModeAndPragmasAreOnForAFile() throws {
        let folder = try TemporaryFolder()
        let database = try SQLiteDatabase(path: folder.file("wal.sqlite"))
        #expect(database.journalMode == "wal")
        #expect(try Self.scalar(database, "PRAGMA journal_mode") == "wal")
        #expect(try Self.scalar(database, "PRAGMA synchronous") == "1")  // NORMAL
        #expect(try Self.scalar(database, "PRAGMA foreign_keys") == "1")
        #expect(try Self.scalar(database, "PRAGMA busy_timeout") == "5000")
        let full = try SQLiteDatabase(path: folder.file("full.sqlite"), durability: .powerLoss)
        #expect(try Self.scalar(full, "PRAGMA synchronous") == "2")  // FULL
        #expect(try Self.scalar(full, "PRAGMA journal_mode") == "wal")
    }

    @Test func newFilesAreReadableByTheOwnerOnly() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("private.sqlite")
        _ = try SQLiteDatabase(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func aFailingTransactionLeavesNothingBehind() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        try database.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        let error = #expect(throws: StoreError.self) {
            try database.transaction { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                try connection.execute("INSERT INTO t VALUES (1)")
                try connection.execute("INSERT INTO t VALUES (1)")
            }
        }
        #expect(error?.kind == .duplicate)
        #expect(try Self.scalar(database, "SELECT count(*) FROM t") == "0")
        #expect(try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) in
            connection.isInTransaction
        } == false)
    }

    @Test func aNestedTransactionRollsBackAloneAsASavepoint() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        try database.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        try database.transaction { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            try connection.execute("INSERT INTO t VALUES (1)")
            do {
                try connection.transaction { (inner: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                    try inner.execute("INSERT INTO t VALUES (2)")
                    try inner.execute("INSERT INTO t VALUES (1)")
                }
            } catch {}
            try connection.execute("INSERT INTO t VALUES (3)")
        }
        #expect(try Self.scalar(database, "SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)") == "1,3")
    }

    @Test func theSameStatementCanBeUsedTwiceAtOnce() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        try database.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)")
        let pairs = try database.withConnection {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int in
            let outer = try connection.prepare("SELECT x FROM t")
            var count = 0
            while try outer.step() {
                let inner = try connection.prepare("SELECT x FROM t")
                while try inner.step() { count += 1 }
            }
            return count
        }
        #expect(pairs == 9)
    }

    /// SQLite removes the WAL when the last connection closes cleanly; a statement left unfinalized would keep the
    /// connection open (a zombie) and the WAL on disk.
    @Test func releasingTheStoreFinalizesEveryStatementAndClosesTheFile() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("closed.sqlite")
        do {
            let store = try SessionStore(path: path)
            try store.insert(SessionCodeRecord(code: "1", createdAt: Date(), validUntil: Date()))
            _ = try store.records(offset: 0, limit: 5)
            try store.append(AuditEvent(time: Date(), kind: .codeCreated))
            _ = try store.auditEvents(code: "1")
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
        #expect(try SessionStore(path: path).allRecords().count == 1)
    }

    @Test func sqlErrorsCarrySQLitesMessageAndTheOperation() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        let error = #expect(throws: StoreError.self) { try database.execute("SELEC nonsense") }
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.operation == "execute")
        #expect(error?.path == ":memory:")
        let prepare = #expect(throws: StoreError.self) {
            try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                _ = try connection.prepare("SELECT * FROM missing_table")
            }
        }
        #expect(prepare?.message.contains("no such table") == true)
        #expect(prepare?.operation == "prepare")
    }

    @Test func aGarbageFileIsAClearErrorNotACrash() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("garbage.sqlite")
        var bytes = Array("this is not a database, just some text the operator pointed us at\n".utf8)
        var generator = SystemRandomNumberGenerator()
        bytes += (0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: StoreError.self) { _ = try SQLiteDatabase(path: path) }
        #expect(error?.kind == .corrupt)
        #expect(error?.message.contains("not a database") == true)
        #expect(error?.description.contains(path) == true)
    }

    @Test func anUnwritablePathIsAClearErrorNamingThePath() throws {
        let folder = try TemporaryFolder()
        // A regular file where a folder should be: fails even for root.
        let blocker = folder.file("not-a-folder")
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocker))
        let path = blocker + "/store.sqlite"
        let error = #expect(throws: StoreError.self) { _ = try SQLiteDatabase(path: path) }
        #expect(error?.kind == .cantOpen)
        #expect(error?.path == path)
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains("unable to open") == true)

        let missing = folder.file("no/such/folder/store.sqlite")
        let second = #expect(throws: StoreError.self) { _ = try SQLiteDatabase(path: missing) }
        #expect(second?.kind == .cantOpen)
        #expect(second?.description.contains(missing) == true)
    }
}
