import Foundation
import Glibc
import SupportPostgres

// The audit trail's integrity on PostgreSQL: verifying the chain, archiving old events, verifying archives. The same
// answers as SQLite's (SessionStore+Audit): one ``AuditChainWalker``, the same archive files (``AuditArchive``), the
// same anchors; PostgreSQL adds its own checks of the chain's head row, the triggers and the functions behind them.
extension PostgresStoreEngine {
    // MARK: verifying

    /// Walks the trail from the newest archive anchor (or the genesis digest) with the same ``AuditChainWalker`` as
    /// ``SessionStore/verifyAudit()``: every digest recomputed from the stored bytes, every link and id checked; then
    /// the chain's head (`audit_chain_head`) compared with the newest event (events cut from the end leave the head
    /// past them, as SQLite's id counter does), the append-only triggers checked present and enabled, the functions
    /// behind them unchanged, and the archive gate closed. One read-only snapshot, so a node appending meanwhile does
    /// not show as a problem.
    func verifyAudit() throws(StoreError) -> AuditVerification {
        let location = self.location
        return try perform("verify the audit trail") {
            (connection: PostgresConnection) throws(StoreError) -> AuditVerification in
            let transaction = PostgresStoreTransaction(connection, location: location)
            try transaction.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [], "begin transaction")
            do throws(StoreError) {
                let verification = try Self.verifyAudit(transaction)
                try transaction.run("COMMIT", [], "commit")
                return verification
            } catch {
                _ = try? connection.query("ROLLBACK", operation: "roll back")
                throw error
            }
        }
    }

    /// The whole check, inside `transaction`.
    static func verifyAudit(_ transaction: PostgresStoreTransaction) throws(StoreError) -> AuditVerification {
        let anchor = try anchors(transaction).last
        var walker = AuditChainWalker(after: anchor?.lastID ?? 0, digest: anchor?.digest ?? AuditChain.genesis)
        var after = anchor?.lastID ?? 0
        while true {
            let rows = try transaction.run(
                "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id > $1 ORDER BY id LIMIT 1000",
                [String(after)], "read audit events"
            ).rows
            guard !rows.isEmpty else { break }
            for row in rows {
                let event = chainRow(row)
                walker.visit(event)
                after = event.id
            }
        }
        // Events before the anchor that an archive should have removed, or rows put back behind its back.
        let stale = try transaction.run(
            "SELECT min(id) FROM audit_events WHERE id <= $1", [String(anchor?.lastID ?? 0)], "read archived ids")
        var extra: [AuditProblem] = []
        if let id = stale.rows.first?[0].flatMap({ Int64($0) }) {
            extra.append(
                AuditProblem(
                    .insertedRow, id: id,
                    "event \(id) lies in an archived range (up to \(anchor?.lastID ?? 0)): it was inserted behind the "
                        + "store's back"))
        }
        extra += try headProblems(transaction, newest: walker.lastID ?? walker.startID, digest: walker.previous)
        extra += try triggerProblems(transaction)
        let gate = try transaction.run("SELECT count(*) FROM audit_prune_gate", [], "read the archive gate")
        if let open = gate.rows.first?[0].flatMap({ Int64($0) }), open > 0 {
            extra.append(
                AuditProblem(
                    .openGate,
                    "the archive gate (audit_prune_gate) holds \(open) row(s) outside an archive: deletes of audit "
                        + "events are not refused"))
        }
        return walker.verification(anchor: anchor, extra: extra)
    }

    /// One `audit_events` row (``AuditChain/rowColumns``) as the chain sees it.
    static func chainRow(_ row: [String?]) -> AuditChain.Row {
        AuditChain.Row(
            id: row[0].flatMap { Int64($0) } ?? 0, time: row[1].flatMap { Int64($0) } ?? 0,
            code: row[2].map { Array($0.utf8) }, kind: Array((row[3] ?? "").utf8), details: Array((row[4] ?? "").utf8),
            previous: row[5].flatMap(PostgresStoreTransaction.bytes(bytea:)),
            digest: row[6].flatMap(PostgresStoreTransaction.bytes(bytea:)))
    }

    /// The append-only triggers `PostgresStoreSchema` creates, by table.
    static let auditTriggers = [
        ("audit_events", "audit_events_no_change"), ("audit_events", "audit_events_no_truncate"),
        ("audit_anchors", "audit_anchors_no_change"), ("audit_anchors", "audit_anchors_no_truncate"),
    ]

    /// The functions behind them, as `PostgresStoreSchema` defines them.
    static let auditGuards = [
        ("audit_events_append_only", PostgresStoreSchema.auditEventsGuard),
        ("audit_anchors_guard", PostgresStoreSchema.auditAnchorsGuard),
    ]

    /// The chain's head against the newest event: a head past it means the newest events were deleted; a head behind
    /// it, or with another digest, that rows were written around the store.
    private static func headProblems(_ transaction: PostgresStoreTransaction, newest: Int64, digest: [UInt8])
        throws(StoreError) -> [AuditProblem]
    {
        let rows = try transaction.run("SELECT next_id, digest FROM audit_chain_head", [], "read the audit chain's head")
        guard rows.count == 1, let next = rows[0, "next_id"].flatMap({ Int64($0) }),
            let head = rows[0, "digest"].flatMap(PostgresStoreTransaction.bytes(bytea:))
        else {
            return [AuditProblem(.insertedRow, "audit_chain_head does not hold one row: it was changed by hand")]
        }
        let highest = next - 1
        if highest > newest {
            let missing = highest == newest + 1 ? "event \(highest) is" : "events \(newest + 1)–\(highest) are"
            return [AuditProblem(.deletedRow, id: newest + 1, "\(missing) missing: the newest events were deleted")]
        }
        if highest < newest {
            return [
                AuditProblem(
                    .insertedRow, id: highest + 1,
                    "event \(highest + 1) lies past the chain's head (audit_chain_head): it was inserted behind the "
                        + "store's back")
            ]
        }
        if head != digest {
            return [
                AuditProblem(
                    .brokenLink, id: newest,
                    "the chain's head (audit_chain_head) is not event \(newest)'s digest: one of them was rewritten")
            ]
        }
        return []
    }

    /// Missing or disabled append-only triggers, and guard functions replaced.
    private static func triggerProblems(_ transaction: PostgresStoreTransaction) throws(StoreError) -> [AuditProblem] {
        var problems: [AuditProblem] = []
        for (table, name) in auditTriggers {
            let rows = try transaction.run(
                """
                SELECT tgenabled FROM pg_trigger
                WHERE tgrelid = $1::regclass AND tgname = $2 AND NOT tgisinternal
                """, [table, name], "read the audit trail's triggers")
            guard rows.count == 1 else {
                problems.append(
                    AuditProblem(
                        .missingTrigger, trigger: name,
                        "the append-only trigger \(name) is missing: someone dropped it, so the audit trail no longer "
                            + "refuses changes"))
                continue
            }
            if rows.rows[0][0] == "D" {
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: name,
                        "the append-only trigger \(name) is disabled (ALTER TABLE … DISABLE TRIGGER): the audit trail "
                            + "no longer refuses changes"))
            }
        }
        for (name, definition) in auditGuards {
            let rows = try transaction.run(
                "SELECT prosrc FROM pg_proc WHERE proname = $1", [name], "read the audit trail's guard functions")
            let expected = normalized(PostgresStoreSchema.body(of: definition))
            if rows.count != 1 || normalized(rows.rows[0][0] ?? "") != expected {
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: name,
                        "the function \(name) behind the append-only triggers is not the one the store created: it "
                            + "was replaced"))
            }
        }
        return problems
    }

    /// SQL with every run of white space made one space, for comparing function bodies.
    private static func normalized(_ sql: String) -> String {
        sql.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    // MARK: anchors

    /// Every archive anchor, oldest first.
    func auditAnchors() throws(StoreError) -> [AuditAnchor] {
        let location = self.location
        return try perform("read audit anchors") { (connection: PostgresConnection) throws(StoreError) -> [AuditAnchor] in
            try Self.anchors(PostgresStoreTransaction(connection, location: location))
        }
    }

    static func anchors(_ transaction: PostgresStoreTransaction) throws(StoreError) -> [AuditAnchor] {
        let rows = try transaction.run(
            "SELECT last_id, last_digest, archived_at, event_count FROM audit_anchors ORDER BY last_id", [],
            "read audit anchors")
        var anchors: [AuditAnchor] = []
        for row in rows.rows {
            guard let id = row[0].flatMap({ Int64($0) }),
                let digest = row[1].flatMap(PostgresStoreTransaction.bytes(bytea:)),
                let archivedAt = row[2].flatMap({ Int64($0) }), let count = row[3].flatMap({ Int64($0) })
            else {
                throw StoreError(
                    kind: .invalidData, operation: "read audit anchors",
                    message: "an audit anchor row lacks a required value", path: transaction.location)
            }
            anchors.append(
                AuditAnchor(
                    lastID: id, digest: digest, archivedAt: Date(unixMilliseconds: archivedAt),
                    eventCount: Int(clamping: count)))
        }
        return anchors
    }

    /// Checks an archive file against this database's anchors (``AuditArchive/verify(at:anchors:)``).
    func verifyArchive(at archivePath: String) throws(StoreError) -> AuditVerification {
        try AuditArchive.verify(at: archivePath, anchors: try auditAnchors())
    }

    // MARK: archiving

    /// Moves the oldest events into a new archive file, as ``SessionStore/archiveAudit(before:to:)`` does on SQLite:
    /// the same file, the same anchor, the same refusals (an existing file: ``StoreError/Kind/duplicate``; a trail
    /// that fails verification: ``StoreError/Kind/integrity``), nothing changed when it fails.
    ///
    /// One transaction that first locks the chain's head row, which every append from every node locks too: no node
    /// commits an audited event while the archive runs (they wait, then go on at the head, which the archive leaves as
    /// it was). An operator's command, not one for a busy hour.
    func archiveAudit(before cut: Date, to archivePath: String) throws(StoreError) -> ArchiveSummary {
        let operation = "archive audit events"
        try AuditArchive.refuseExisting(archivePath)
        let location = self.location
        return try perform(operation) { (connection: PostgresConnection) throws(StoreError) -> ArchiveSummary in
            let transaction = PostgresStoreTransaction(connection, location: location)
            try transaction.run("BEGIN", [], "begin transaction")
            var written: String?
            do throws(StoreError) {
                try transaction.run(
                    "SELECT next_id FROM audit_chain_head FOR UPDATE", [], "lock the audit chain's head")
                let summary = try Self.archive(transaction, before: cut, to: archivePath, wroteFile: &written)
                try transaction.run("COMMIT", [], "commit")
                return summary
            } catch {
                _ = try? connection.query("ROLLBACK", operation: "roll back")
                if let written { unlink(written) }
                throw error
            }
        }
    }

    /// The archive inside `transaction`, which holds the chain's head; sets `wroteFile` once the file exists.
    private static func archive(
        _ transaction: PostgresStoreTransaction, before cut: Date, to archivePath: String, wroteFile: inout String?
    ) throws(StoreError) -> ArchiveSummary {
        let verification = try verifyAudit(transaction)
        if let refusal = AuditArchive.refusal(verification, location: transaction.location) { throw refusal }
        // The last id to archive: the one before the first event at or after the cut, or the newest event.
        let last = try transaction.run(
            """
            SELECT coalesce((SELECT min(id) FROM audit_events WHERE time >= $1) - 1,
                (SELECT max(id) FROM audit_events))
            """, [String(cut.unixMilliseconds)], "find audit events to archive")
        let startID = (verification.anchor?.lastID ?? 0) + 1
        guard let lastID = last.rows.first?[0].flatMap({ Int64($0) }), lastID >= startID else {
            return ArchiveSummary(
                path: archivePath, eventCount: 0, firstID: nil, lastID: nil, anchor: nil, byteCount: 0)
        }
        let file = try ArchiveFile(creating: archivePath)
        wroteFile = archivePath
        var after = startID - 1
        while after < lastID {
            let rows = try transaction.run(
                "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id > $1 AND id <= $2 ORDER BY id LIMIT 1000",
                [String(after), String(lastID)], "read audit events to archive"
            ).rows
            guard !rows.isEmpty else { break }
            for row in rows {
                let event = chainRow(row)
                try file.append(event)
                after = event.id
            }
        }
        let lastDigest = file.lastDigest
        let byteCount = try file.finish()
        let count = Int(lastID - startID + 1)
        let archivedAt = Date(unixMilliseconds: Date().unixMilliseconds)
        try transaction.run("INSERT INTO audit_prune_gate (up_to_id) VALUES ($1)", [String(lastID)], "open the archive gate")
        let deleted = try transaction.run(
            "WITH deleted AS (DELETE FROM audit_events WHERE id <= $1 RETURNING 1) SELECT count(*) FROM deleted",
            [String(lastID)], "delete archived audit events")
        let deletedCount = deleted.rows.first?[0].flatMap { Int($0) } ?? -1
        guard deletedCount == count else {
            throw StoreError(
                kind: .integrity, operation: "delete",
                message: "expected to delete \(count) events, deleted \(deletedCount)", path: transaction.location)
        }
        try transaction.run(
            "INSERT INTO audit_anchors (last_id, last_digest, archived_at, event_count) VALUES ($1, $2, $3, $4)",
            [String(lastID), PostgresStoreTransaction.bytea(lastDigest), String(archivedAt.unixMilliseconds), String(count)],
            "store the audit anchor")
        try transaction.run("DELETE FROM audit_prune_gate", [], "close the archive gate")
        let anchor = AuditAnchor(lastID: lastID, digest: lastDigest, archivedAt: archivedAt, eventCount: count)
        return ArchiveSummary(
            path: archivePath, eventCount: count, firstID: startID, lastID: lastID, anchor: anchor, byteCount: byteCount)
    }
}
