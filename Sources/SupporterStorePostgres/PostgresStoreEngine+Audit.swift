package import SupporterStore
package import SupporterCore
package import Foundation
import Glibc
import SupportPostgres
import SupportWire
import SupportUtilities
import SupporterModel

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
    package func verifyAudit() throws(StoreError) -> AuditVerification {
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
    package static func verifyAudit(_ transaction: PostgresStoreTransaction) throws(StoreError) -> AuditVerification {
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
    package static func chainRow(_ row: [String?]) -> AuditChain.Row {
        AuditChain.Row(
            id: row[0].flatMap { Int64($0) } ?? 0, time: row[1].flatMap { Int64($0) } ?? 0,
            code: row[2].map { Array($0.utf8) }, kind: Array((row[3] ?? "").utf8), details: Array((row[4] ?? "").utf8),
            previous: row[5].flatMap(PostgresStoreTransaction.bytes(bytea:)),
            digest: row[6].flatMap(PostgresStoreTransaction.bytes(bytea:)))
    }

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

    /// Append-only triggers missing, disabled or fired only for replication, changed (other events, a `WHEN`
    /// condition, a column list, another function), and guard functions replaced or no longer pinned to the store's
    /// schema (``PostgresStoreSchema/auditGuards``).
    private static func triggerProblems(_ transaction: PostgresStoreTransaction) throws(StoreError) -> [AuditProblem] {
        var problems: [AuditProblem] = []
        var functionsChecked: Set<String> = []
        for expected in PostgresStoreSchema.auditGuards {
            let rows = try transaction.run(
                """
                SELECT t.tgenabled, t.tgtype, t.tgqual IS NULL AND t.tgattr::text = '', p.proname, p.prosrc,
                    n.nspname = current_schema()
                    AND p.proconfig = ARRAY['search_path=' || quote_ident(current_schema()) || ', pg_temp']
                FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE t.tgrelid = $1::regclass AND t.tgname = $2 AND NOT t.tgisinternal
                """, [expected.table, expected.trigger], "read the audit trail's triggers")
            let name = expected.trigger
            guard rows.count == 1 else {
                problems.append(
                    AuditProblem(
                        .missingTrigger, trigger: name,
                        "the append-only trigger \(name) is missing: someone dropped it, so the audit trail no longer "
                            + "refuses changes"))
                continue
            }
            let row = rows.rows[0]
            switch row[0] {
            case "O", "A": break
            case "R":
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: name,
                        "the append-only trigger \(name) fires only for replication (ALTER TABLE … ENABLE REPLICA "
                            + "TRIGGER): the audit trail no longer refuses changes"))
            default:
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: name,
                        "the append-only trigger \(name) is disabled (ALTER TABLE … DISABLE TRIGGER): the audit trail "
                            + "no longer refuses changes"))
            }
            guard row[1].flatMap({ Int($0) }) == expected.type, row[2] == "t", row[3] == expected.function else {
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: name,
                        "the append-only trigger \(name) is not the one the store created (its events, condition or "
                            + "function differ): it was replaced"))
                continue
            }
            guard functionsChecked.insert(expected.function).inserted else { continue }
            if AuditDetailsJSON.normalized(row[4] ?? "") != AuditDetailsJSON.normalized(expected.body) || row[5] != "t" {
                problems.append(
                    AuditProblem(
                        .alteredTrigger, trigger: expected.function,
                        "the function \(expected.function) behind the append-only triggers is not the one the store "
                            + "created: it was replaced"))
            }
        }
        return problems
    }

    // MARK: anchors

    /// Every archive anchor, oldest first.
    package func auditAnchors() throws(StoreError) -> [AuditAnchor] {
        let location = self.location
        return try perform("read audit anchors") { (connection: PostgresConnection) throws(StoreError) -> [AuditAnchor] in
            try Self.anchors(PostgresStoreTransaction(connection, location: location))
        }
    }

    package static func anchors(_ transaction: PostgresStoreTransaction) throws(StoreError) -> [AuditAnchor] {
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
    package func verifyArchive(at archivePath: String) throws(StoreError) -> AuditVerification {
        try AuditArchive.verify(at: archivePath, anchors: try auditAnchors())
    }

    // MARK: archiving

    /// Moves the oldest events into a new archive file, as ``SessionStore/archiveAudit(before:to:)`` does on SQLite:
    /// the same file, the same anchor, the same refusals (an existing file: ``StoreError/Kind/duplicate``; a trail
    /// that fails verification: ``StoreError/Kind/integrity``), nothing changed when it fails.
    ///
    /// One REPEATABLE READ transaction: it verifies, writes and deletes what one snapshot shows. Nodes go on appending
    /// meanwhile (new events get ids past the snapshot's, and archived events never change, so nothing conflicts);
    /// two archives take turns (an advisory lock). When the connection fails during the commit, whether the events were
    /// removed is unknown: the file is kept, and `audit --verify --archive` tells.
    package func archiveAudit(before cut: Date, to archivePath: String) throws(StoreError) -> ArchiveSummary {
        let operation = "archive audit events"
        try AuditArchive.refuseExisting(archivePath)
        let location = self.location
        return try perform(operation) { (connection: PostgresConnection) throws(StoreError) -> ArchiveSummary in
            let transaction = PostgresStoreTransaction(connection, location: location)
            // Taken before the transaction's snapshot, so a second archive sees what the first one left.
            try transaction.run("SELECT pg_advisory_lock($1::bigint)", [Self.archiveLock], "wait for another archive")
            defer {
                _ = try? connection.query(
                    "SELECT pg_advisory_unlock($1::bigint)", [Self.archiveLock], operation: "let the next archive run")
            }
            try transaction.run("BEGIN ISOLATION LEVEL REPEATABLE READ", [], "begin transaction")
            var written: String?
            let summary: ArchiveSummary
            do throws(StoreError) {
                summary = try Self.archive(transaction, before: cut, to: archivePath, wroteFile: &written)
            } catch {
                _ = try? connection.query("ROLLBACK", operation: "roll back")
                if let written { unlink(written) }
                throw error
            }
            do throws(StoreError) {
                try transaction.run("COMMIT", [], "commit")
            } catch {
                // The server may have committed before the connection failed: the file may be the only copy left.
                guard written != nil else { throw error }
                throw StoreError(
                    kind: error.kind, operation: "commit the audit archive",
                    message:
                        "the connection failed during the commit, so it is unknown whether the archived events were "
                        + "removed; the archive file is kept: 'rsup-supporter audit --verify --archive "
                        + "\(archivePath)' verifies it if they were (\(error.message))",
                    path: location)
            }
            return summary
        }
    }

    /// An arbitrary constant for `pg_advisory_lock`: one archive at a time.
    package static let archiveLock = "727375700013"

    /// The archive inside `transaction`; sets `wroteFile` once the file exists.
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
