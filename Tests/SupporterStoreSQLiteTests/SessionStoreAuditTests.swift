import Foundation
import Glibc
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// The hash-chained audit trail: verification finds every kind of tampering, archiving keeps the chain verifiable.
@Suite struct SessionStoreAuditTests {
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    static func event(_ ms: Int64, _ code: String? = "482913067", _ kind: AuditEvent.Kind = .requestSent)
        -> AuditEvent
    {
        AuditEvent(time: date(ms), code: code, kind: kind, details: ["supporter": "Alice", "n": "\(ms)"])
    }

    /// A store on a file with events at times 1000, 2000, … (ids 1, 2, …), and the file's path.
    static func store(events count: Int, in folder: TemporaryFolder) throws -> (SessionStore, String) {
        let path = folder.file("audit.sqlite")
        let store = try SessionStore(path: path)
        try store.append(contentsOf: (1...count).map { event(Int64($0) * 1000) })
        return (store, path)
    }

    /// Runs `sql` on a second connection to the file: what someone with the file and the `sqlite3` tool can do.
    static func forge(_ path: String, _ sql: String) throws {
        try SQLiteDatabase(path: path).execute(sql)
    }

    // MARK: verifying

    @Test func anUntouchedTrailVerifies() throws {
        let folder = try TemporaryFolder()
        let (store, _) = try Self.store(events: 5, in: folder)
        try store.append(Self.event(9000, nil, .error))
        let verification = try store.verifyAudit()
        #expect(verification.isVerified, "\(verification.problems)")
        #expect(verification.eventCount == 6)
        #expect(verification.firstID == 1 && verification.lastID == 6)
        #expect(verification.anchor == nil)
        #expect(verification.head.count == 32 && verification.head != AuditChain.genesis)

        let empty = try SessionStore(path: ":memory:").verifyAudit()
        #expect(empty.isVerified && empty.eventCount == 0 && empty.head == AuditChain.genesis)
    }

    @Test func aRowInsertedByRawSQLIsReportedAsInserted() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 5, in: folder)
        try Self.forge(path, "INSERT INTO audit_events (time, code, kind) VALUES (3500, '482913067', 'request_allowed')")
        let problem = try #require(try store.verifyAudit().problem)
        #expect(problem.kind == .insertedRow)
        #expect(problem.id == 6)
        #expect(problem.message.contains("event 6"))
        // The store appends past the forged row; the forgery is still the only problem.
        try store.append(Self.event(7000))
        let after = try store.verifyAudit()
        #expect(after.problems.map(\.kind) == [.insertedRow])
        #expect(after.lastID == 7)
    }

    @Test func aRowUpdatedAfterDroppingTheTriggerIsReportedAsEdited() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 5, in: folder)
        try Self.forge(
            path,
            """
            DROP TRIGGER audit_events_no_update;
            UPDATE audit_events SET details = '{"supporter":"Mallory"}' WHERE id = 3;
            """)
        let verification = try store.verifyAudit()
        #expect(verification.problems.map(\.kind) == [.editedRow, .missingTrigger])
        #expect(verification.problem?.id == 3)
        #expect(verification.problems.last?.trigger == "audit_events_no_update")
    }

    @Test func aRowRewrittenWithARecomputedDigestBreaksTheLinkToTheNext() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 5, in: folder)
        let previous = try #require(try store.auditRow(2).digest)
        let forged = AuditChain.digest(
            previous: previous, id: 3, time: 3000, code: Array("482913067".utf8), kind: Array("request_sent".utf8),
            details: Array(#"{"supporter":"Mallory"}"#.utf8))
        try Self.forge(
            path,
            """
            DROP TRIGGER audit_events_no_update;
            UPDATE audit_events SET details = '{"supporter":"Mallory"}', digest = x'\(AuditChain.hex(forged))'
            WHERE id = 3;
            CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
            BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
            """)
        let verification = try store.verifyAudit()
        #expect(verification.problems.map(\.kind) == [.brokenLink])
        #expect(verification.problem?.id == 4)
    }

    @Test(arguments: [3, 1, 5] as [Int64])
    func aDeletedRowIsReportedAsDeleted(id: Int64) throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 5, in: folder)
        try Self.forge(path, "DROP TRIGGER audit_events_no_delete; DELETE FROM audit_events WHERE id = \(id);")
        let verification = try store.verifyAudit()
        #expect(verification.problems.map(\.kind) == [.deletedRow, .missingTrigger], "\(verification.problems)")
        #expect(verification.problem?.id == id)
        #expect(verification.problem?.message.contains("event \(id) is missing") == true)
        // Appending after the newest event was cut leaves the gap in place: it is still reported.
        try store.append(Self.event(9000))
        #expect(try store.verifyAudit().problem?.kind == .deletedRow)
    }

    @Test(arguments: StoreSchema.auditTriggers.map(\.name))
    func aDroppedTriggerAloneIsReported(trigger: String) throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 3, in: folder)
        try Self.forge(path, "DROP TRIGGER \(trigger)")
        let verification = try store.verifyAudit()
        #expect(verification.problems.map(\.kind) == [.missingTrigger])
        #expect(verification.problem?.trigger == trigger)
        #expect(verification.problem?.id == nil)
        #expect(verification.eventCount == 3)
    }

    @Test func aReplacedTriggerIsReportedAsAltered() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 3, in: folder)
        try Self.forge(
            path,
            """
            DROP TRIGGER audit_events_no_delete;
            CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events WHEN 0
            BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
            """)
        let verification = try store.verifyAudit()
        #expect(verification.problems.map(\.kind) == [.alteredTrigger])
        #expect(verification.problem?.trigger == "audit_events_no_delete")
    }

    @Test func anOpenArchiveGateIsReported() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 3, in: folder)
        try Self.forge(path, "INSERT INTO audit_prune_gate (up_to_id) VALUES (2)")
        #expect(try store.verifyAudit().problems.map(\.kind) == [.openGate])
    }

    // MARK: archiving

    @Test func archivingMovesOldEventsToAFileAndTheChainStillVerifies() throws {
        let folder = try TemporaryFolder()
        let (store, _) = try Self.store(events: 10, in: folder)
        let headBefore = try store.verifyAudit().head
        let archive = folder.file("2026-01.jsonl")
        let summary = try store.archiveAudit(before: Self.date(6000), to: archive)
        #expect(summary.eventCount == 5 && summary.firstID == 1 && summary.lastID == 5)
        let anchor = try #require(summary.anchor)
        #expect(anchor.lastID == 5 && anchor.eventCount == 5)
        #expect(anchor.digest == (try #require(try store.auditRow(6).previous)))

        // The file: one JSON object per event, readable by its owner only.
        let attributes = try FileManager.default.attributesOfItem(atPath: archive)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int) == summary.byteCount)
        let lines = try String(contentsOfFile: archive, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5)
        let first = try #require(
            try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(Set(first.keys) == ["id", "time", "code", "kind", "details", "prev_digest", "digest"])
        #expect(first["id"] as? Int == 1 && first["time"] as? Int == 1000)
        #expect(first["prev_digest"] as? String == AuditChain.hex(AuditChain.genesis))

        // The database: events 6–10, verified from the anchor; the head is unchanged.
        #expect(try store.auditEvents().map(\.id) == Array(6...10))
        var verification = try store.verifyAudit()
        #expect(verification.isVerified, "\(verification.problems)")
        #expect(verification.eventCount == 5 && verification.anchor == anchor && verification.head == headBefore)
        let archived = try store.verifyArchive(at: archive)
        #expect(archived.isVerified, "\(archived.problems)")
        #expect(archived.eventCount == 5 && archived.lastID == 5 && archived.anchor == anchor)

        // Appends continue the chain; a second archive starts at the first anchor, and both files still verify.
        try store.append(Self.event(11_000))
        let second = folder.file("2026-02.jsonl")
        let next = try store.archiveAudit(before: Self.date(20_000), to: second)
        #expect(next.firstID == 6 && next.lastID == 11 && next.eventCount == 6)
        #expect(try store.auditEvents().isEmpty)
        verification = try store.verifyAudit()
        #expect(verification.isVerified && verification.eventCount == 0 && verification.anchor == next.anchor)
        #expect(try store.verifyArchive(at: second).isVerified)
        #expect(try store.verifyArchive(at: archive).isVerified)
        #expect(try store.auditAnchors().map(\.lastID) == [5, 11])
        // Ids go on after the anchor even when every event was archived.
        #expect(try store.append(Self.event(30_000)) == 12)
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func onlyTheArchiveCanDelete() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 4, in: folder)
        _ = try store.archiveAudit(before: Self.date(3000), to: folder.file("a.jsonl"))
        for sql in [
            "DELETE FROM audit_events", "DELETE FROM audit_events WHERE id = 4",
            "DELETE FROM audit_anchors", "UPDATE audit_anchors SET last_id = 1",
            "INSERT INTO audit_anchors (last_id, last_digest, archived_at, event_count) VALUES (3, zeroblob(32), 0, 1)",
        ] {
            let error = #expect(throws: StoreError.self, "\(sql)") { try Self.forge(path, sql) }
            #expect(error?.kind == .constraint, "\(sql)")
        }
        #expect(try store.auditEvents().map(\.id) == [3, 4])
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func eventsAreArchivedInIDOrderUpToTheFirstNewerOne() throws {
        let store = try SessionStore(path: ":memory:")
        try store.append(contentsOf: [1000, 5000, 2000, 3000].map { Self.event($0) })
        let folder = try TemporaryFolder()
        let summary = try store.archiveAudit(before: Self.date(4000), to: folder.file("a.jsonl"))
        // Event 2 (time 5000) is newer than the cut: events 3 and 4 stay with it.
        #expect(summary.lastID == 1)
        #expect(try store.auditEvents().map(\.id) == [2, 3, 4])
    }

    @Test func nothingToArchiveWritesNoFile() throws {
        let folder = try TemporaryFolder()
        let (store, _) = try Self.store(events: 3, in: folder)
        let archive = folder.file("none.jsonl")
        let summary = try store.archiveAudit(before: Self.date(500), to: archive)
        #expect(summary.eventCount == 0 && summary.anchor == nil)
        #expect(!FileManager.default.fileExists(atPath: archive))
        #expect(try store.auditEvents().count == 3)
    }

    @Test func anExistingArchiveFileIsNeverOverwritten() throws {
        let folder = try TemporaryFolder()
        let (store, _) = try Self.store(events: 3, in: folder)
        let archive = folder.file("taken.jsonl")
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: archive))
        let error = #expect(throws: StoreError.self) {
            _ = try store.archiveAudit(before: Self.date(10_000), to: archive)
        }
        #expect(error?.kind == .duplicate)
        #expect(error?.message.contains("never overwritten") == true)
        #expect(try String(contentsOfFile: archive, encoding: .utf8) == "keep me\n")
        #expect(try store.auditEvents().count == 3)
    }

    @Test func aTamperedTrailIsNotArchived() throws {
        let folder = try TemporaryFolder()
        let (store, path) = try Self.store(events: 3, in: folder)
        try Self.forge(path, "INSERT INTO audit_events (time, kind) VALUES (1500, 'error')")
        let archive = folder.file("a.jsonl")
        let error = #expect(throws: StoreError.self) {
            _ = try store.archiveAudit(before: Self.date(10_000), to: archive)
        }
        #expect(error?.kind == .integrity)
        #expect(error?.message.contains("event 4") == true)
        #expect(!FileManager.default.fileExists(atPath: archive))
        #expect(try store.auditEvents().count == 4)
    }

    @Test func aChangedArchiveFileFailsItsVerification() throws {
        let folder = try TemporaryFolder()
        let (store, _) = try Self.store(events: 6, in: folder)
        let archive = folder.file("a.jsonl")
        _ = try store.archiveAudit(before: Self.date(5000), to: archive)
        let lines = try String(contentsOfFile: archive, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)

        func verify(_ lines: [String]) throws -> [AuditProblem] {
            let copy = folder.file("copy-\(UUID().uuidString).jsonl")
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: copy))
            return try store.verifyArchive(at: copy).problems
        }
        var edited = lines
        edited[1] = edited[1].replacingOccurrences(of: "request_sent", with: "request_allowed")
        #expect(try verify(edited).map(\.kind) == [.editedRow])
        #expect(try verify(edited).first?.id == 2)
        var removed = lines
        removed.remove(at: 2)
        #expect(try verify(removed).map(\.kind) == [.deletedRow])
        #expect(try verify(Array(lines.dropLast())).map(\.kind) == [.anchorMismatch])
        // Starts where no anchor is, and holds fewer events than the anchor it ends at says.
        #expect(try verify(Array(lines.dropFirst())).map(\.kind) == [.anchorMismatch, .anchorMismatch])
        #expect(try verify(lines + ["not json"]).map(\.kind) == [.malformedArchive])
        #expect(try verify([]).map(\.kind) == [.malformedArchive])
        // An archive of another database matches none of this one's anchors.
        let other = try SessionStore(path: folder.file("other.sqlite"))
        #expect(try other.verifyArchive(at: archive).problems.map(\.kind) == [.anchorMismatch])
        #expect(throws: StoreError.self) { _ = try store.verifyArchive(at: folder.file("missing.jsonl")) }
    }

    // MARK: size

    /// Prints what the audit trail costs per event on disk, in the database and in an archive; asserts only that the
    /// chain adds what it should (two 32-byte digests and their headers) and not much more.
    @Test func printsAuditBytesPerEvent() throws {
        let folder = try TemporaryFolder()
        let count = 20_000
        // A typical event: a code, a kind, two details.
        let events = (0..<count).map { index in
            AuditEvent(
                time: Self.date(1_700_000_000_000 + Int64(index) * 250), code: "482913067",
                kind: index % 2 == 0 ? .requestSent : .requestAllowed,
                details: ["supporter": "Alice Martin", "type": "screen"])
        }
        func fileBytes(_ database: SQLiteDatabase) throws -> Int {
            try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            let size = try SQLiteDatabaseTests.scalar(
                database, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
            return Int(size ?? "") ?? 0
        }
        // With the chain (the current schema), and without (schema version 2, the same rows through raw SQL).
        let chained = try SessionStore(path: folder.file("chained.sqlite"))
        let emptyChained = try fileBytes(chained.database)
        try chained.append(contentsOf: events)
        let chainedBytes = try fileBytes(chained.database) - emptyChained

        let plain = try SQLiteDatabase(path: folder.file("plain.sqlite"))
        try StoreSchema.migrate(plain, migrations: Array(StoreSchema.migrations.prefix(2)))
        let emptyPlain = try fileBytes(plain)
        try plain.transaction { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            for event in events {
                let insert = try connection.prepare(
                    "INSERT INTO audit_events (time, code, kind, details) VALUES (?, ?, ?, ?)")
                try insert.bind(event.time.unixMilliseconds, at: 1)
                try insert.bind(event.code, at: 2)
                try insert.bind(event.kind.rawValue, at: 3)
                try insert.bind(try SessionStore.json(event.details), at: 4)
                try insert.run()
            }
        }
        let plainBytes = try fileBytes(plain) - emptyPlain

        let archive = folder.file("size.jsonl")
        let summary = try chained.archiveAudit(before: Date.distantFuture, to: archive)
        #expect(summary.eventCount == count)
        let perChained = Double(chainedBytes) / Double(count), perPlain = Double(plainBytes) / Double(count)
        let perArchived = Double(summary.byteCount) / Double(count)
        print(
            "audit bytes per event (\(count) events, 2 details each): database \(Int(perChained.rounded())) with the "
                + "hash chain, \(Int(perPlain.rounded())) without (schema 2); archive \(Int(perArchived.rounded()))")
        #expect(perChained - perPlain > 60 && perChained - perPlain < 120)
    }
}

extension SessionStore {
    /// The stored chain columns of event `id`.
    func auditRow(_ id: Int64) throws -> AuditChain.Row {
        try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id = ?")
            try statement.bind(id, at: 1)
            guard try statement.step() else {
                throw StoreError(kind: .notFound, operation: "test", message: "no event \(id)", path: path)
            }
            return AuditChain.row(statement)
        }
    }
}
