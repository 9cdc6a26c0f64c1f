public import SupporterStore
public import SupporterCore
public import Foundation
import Glibc
import SupportWire
import SupportUtilities
import SupporterModel

// The audit trail's integrity: verifying the hash chain, archiving old events, verifying archives.
extension SessionStore {
    // MARK: verifying

    /// Checks the whole audit trail: every event's digest against its contents, every link to the event before, ids
    /// without gaps from the newest archive anchor (or from 1) up to the highest id SQLite ever gave out, every
    /// append-only trigger present and unchanged, and the archive gate closed.
    ///
    /// Reads every event once, in one read transaction, holding the store's lock (seconds for millions of events):
    /// run it from a tool or a background task, not on an event loop. Returns what it found; throws only when the
    /// database cannot be read.
    public func verifyAudit() throws(StoreError) -> AuditVerification {
        try perform("verify audit trail", transaction: .deferred) {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> AuditVerification in
            try Self.verifyAudit(connection)
        }
    }

    package static func verifyAudit(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> AuditVerification {
        let anchor = try anchors(connection).last
        var walker = AuditChainWalker(after: anchor?.lastID ?? 0, digest: anchor?.digest ?? AuditChain.genesis)
        do {
            let rows = try connection.prepare("SELECT \(AuditChain.rowColumns) FROM audit_events ORDER BY id")
            while try rows.step() { walker.visit(AuditChain.row(rows)) }
        }
        var extra: [AuditProblem] = []
        // Events cut from the end leave SQLite's AUTOINCREMENT counter above the newest id.
        let sequence = try connection.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'audit_events'")
        let highest = try sequence.step() ? sequence.int64(at: 0) ?? 0 : 0
        let newest = walker.lastID ?? walker.startID
        if highest > newest {
            let missing = highest == newest + 1 ? "event \(highest) is" : "events \(newest + 1)–\(highest) are"
            extra.append(
                AuditProblem(.deletedRow, id: newest + 1, "\(missing) missing: the newest events were deleted"))
        }
        extra += try schemaProblems(connection)
        return walker.verification(anchor: anchor, extra: extra)
    }

    /// Missing or changed append-only triggers, and an open archive gate.
    private static func schemaProblems(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError)
        -> [AuditProblem]
    {
        var problems: [AuditProblem] = []
        for trigger in StoreSchema.auditTriggers {
            let statement = try connection.prepare(
                "SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?")
            try statement.bind(trigger.name, at: 1)
            guard try statement.step() else {
                problems.append(
                    AuditProblem(
                        .missingTrigger, trigger: trigger.name,
                        "the append-only trigger \(trigger.name) is missing: someone dropped it, so the audit trail no "
                            + "longer refuses changes"))
                continue
            }
            if normalized(statement.text(at: 0) ?? "") != normalized(trigger.sql) {
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: trigger.name,
                        "the append-only trigger \(trigger.name) is not the one the store created: it was replaced"))
            }
        }
        let gate = try connection.prepare("SELECT count(*) FROM audit_prune_gate")
        if try gate.step(), let open = gate.int64(at: 0), open > 0 {
            problems.append(
                AuditProblem(
                    .openGate,
                    "the archive gate (audit_prune_gate) holds \(open) row(s) outside an archive: deletes of audit "
                        + "events are not refused"))
        }
        return problems
    }

    /// SQL with every run of white space made one space, for comparing trigger definitions (on either engine).
    package static func normalized(_ sql: String) -> String {
        sql.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// Every archive anchor, oldest first.
    public func auditAnchors() throws(StoreError) -> [AuditAnchor] {
        try perform("read audit anchors") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [AuditAnchor] in
            try Self.anchors(connection)
        }
    }

    package static func anchors(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [AuditAnchor] {
        let statement = try connection.prepare(
            "SELECT last_id, last_digest, archived_at, event_count FROM audit_anchors ORDER BY last_id")
        var anchors: [AuditAnchor] = []
        while try statement.step() {
            guard let id = statement.int64(at: 0), let digest = statement.blob(at: 1),
                let archivedAt = statement.int64(at: 2), let count = statement.int64(at: 3)
            else { throw invalidData("an audit anchor row lacks a required value") }
            anchors.append(
                AuditAnchor(
                    lastID: id, digest: digest, archivedAt: Date(unixMilliseconds: archivedAt),
                    eventCount: Int(clamping: count)))
        }
        return anchors
    }

    // MARK: archiving

    /// Moves the oldest events out of the database into a new archive file, keeping the chain verifiable across the
    /// cut: the events from the oldest up to (not including) the first one whose time is `cut` or later are written to
    /// `archivePath` as JSON lines (one object per event: `id`, `time` in Unix milliseconds, `code`, `kind`, `details`
    /// as the stored JSON text, `prev_digest` and `digest` in hexadecimal), the file is flushed to the disk
    /// (`fsync`, then its folder's), and then, in the same transaction that read them, the events are deleted through
    /// the archive gate and an anchor (the last archived id and its digest) is stored. ``verifyAudit()`` starts from
    /// the newest anchor; ``verifyArchive(at:)`` checks a file against the anchors.
    ///
    /// Ids are the chain's order; times are stamped by callers and need not increase with them. So an event older
    /// than the cut that follows a newer one stays until that newer one is older than a later cut.
    ///
    /// Refuses, with nothing changed: an existing `archivePath` (``StoreError/Kind/duplicate``: archives are never
    /// overwritten), and a trail that fails ``verifyAudit()`` (``StoreError/Kind/integrity``: archiving would bury
    /// the evidence). The file is made readable by its owner only (`0600`). When there is nothing to archive, no file
    /// is made and the summary counts 0. When the database part fails after the file was written, the file is
    /// removed again.
    ///
    /// Holds the store's write lock while it writes the file: an operator's command, not one for a busy hour.
    public func archiveAudit(before cut: Date, to archivePath: String) throws(StoreError) -> ArchiveSummary {
        let operation = "archive audit events"
        try AuditArchive.refuseExisting(archivePath)
        var written: String?
        do {
            return try write(operation) { (transaction: inout StoreTransaction) throws(StoreError) -> ArchiveSummary in
                try transaction.archiveAudit(before: cut, to: archivePath, wroteFile: &written)
            }
        } catch {
            if let written { unlink(written) }
            throw error
        }
    }

    // MARK: verifying an archive

    /// Checks an archive file made by ``archiveAudit(before:to:)`` against this database's anchors
    /// (``AuditArchive/verify(at:anchors:)``). Throws when the file cannot be read; every other finding is a problem in
    /// the result.
    public func verifyArchive(at archivePath: String) throws(StoreError) -> AuditVerification {
        try AuditArchive.verify(at: archivePath, anchors: try auditAnchors())
    }
}

extension StoreTransaction {
    /// The database side of ``SessionStore/archiveAudit(before:to:)``; sets `wroteFile` once the file exists.
    package mutating func archiveAudit(before cut: Date, to archivePath: String, wroteFile: inout String?) throws(StoreError)
        -> ArchiveSummary
    {
        let verification = try run("verify audit trail") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> AuditVerification in
            try SessionStore.verifyAudit(connection)
        }
        if let refusal = AuditArchive.refusal(verification, location: path) { throw refusal }
        // The last id to archive: the one before the first event at or after the cut, or the newest event.
        let lastID = try run("find audit events to archive") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int64? in
            let statement = try connection.prepare(
                """
                SELECT coalesce((SELECT min(id) FROM audit_events WHERE time >= ?) - 1,
                    (SELECT max(id) FROM audit_events))
                """)
            try statement.bind(cut.unixMilliseconds, at: 1)
            return try statement.step() ? statement.int64(at: 0) : nil
        }
        let startID = (verification.anchor?.lastID ?? 0) + 1
        guard let lastID, lastID >= startID else {
            return ArchiveSummary(
                path: archivePath, eventCount: 0, firstID: nil, lastID: nil, anchor: nil, byteCount: 0)
        }
        let file = try ArchiveFile(creating: archivePath)
        wroteFile = archivePath
        try run("write audit archive") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let rows = try connection.prepare(
                "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id <= ? ORDER BY id")
            try rows.bind(lastID, at: 1)
            while try rows.step() { try file.append(AuditChain.row(rows)) }
        }
        let lastDigest = file.lastDigest
        let byteCount = try file.finish()
        let count = Int(lastID - startID + 1)
        let anchor = AuditAnchor(lastID: lastID, digest: lastDigest, archivedAt: Date(), eventCount: count)
        try run("delete archived audit events") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let open = try connection.prepare("INSERT INTO audit_prune_gate (up_to_id) VALUES (?)")
            try open.bind(lastID, at: 1)
            try open.run()
            let delete = try connection.prepare("DELETE FROM audit_events WHERE id <= ?")
            try delete.bind(lastID, at: 1)
            try delete.run()
            guard connection.changes == count else {
                throw StoreError(
                    kind: .integrity, operation: "delete", message: "expected to delete \(count) events, deleted "
                        + "\(connection.changes)", path: path)
            }
            let store = try connection.prepare(
                "INSERT INTO audit_anchors (last_id, last_digest, archived_at, event_count) VALUES (?, ?, ?, ?)")
            try store.bind(anchor.lastID, at: 1)
            try store.bind(blob: anchor.digest, at: 2)
            try store.bind(anchor.archivedAt.unixMilliseconds, at: 3)
            try store.bind(Int64(count), at: 4)
            try store.run()
            try connection.execute("DELETE FROM audit_prune_gate", operation: "close the archive gate")
        }
        return ArchiveSummary(
            path: archivePath, eventCount: count, firstID: startID, lastID: lastID,
            anchor: AuditAnchor(
                lastID: anchor.lastID, digest: anchor.digest,
                archivedAt: Date(unixMilliseconds: anchor.archivedAt.unixMilliseconds), eventCount: count),
            byteCount: byteCount)
    }
}
