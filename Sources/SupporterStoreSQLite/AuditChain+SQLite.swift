package import SupporterCore
package import SupporterStore

extension AuditChain {
    // MARK: reading the store

    /// Reads the head the next append links to, inside the writing transaction.
    ///
    /// The digest is that of the newest event that has one (an event without one was not written by the store, and
    /// ``SessionStore/verifyAudit()`` reports it), else the newest archive anchor's, else ``genesis``. The id is one
    /// above the highest id ever used — the newest event's, the newest anchor's, or SQLite's AUTOINCREMENT counter,
    /// whichever is highest — so events deleted from the end leave a gap that verification reports.
    package static func head(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Head {
        let statement = try connection.prepare(
            """
            SELECT (SELECT id FROM audit_events ORDER BY id DESC LIMIT 1),
                (SELECT digest FROM audit_events WHERE digest IS NOT NULL ORDER BY id DESC LIMIT 1),
                (SELECT last_id FROM audit_anchors ORDER BY last_id DESC LIMIT 1),
                (SELECT last_digest FROM audit_anchors ORDER BY last_id DESC LIMIT 1),
                (SELECT seq FROM sqlite_sequence WHERE name = 'audit_events')
            """)
        guard try statement.step() else { return Head(digest: genesis, nextID: 1) }
        let highest = max(statement.int64(at: 0) ?? 0, statement.int64(at: 2) ?? 0, statement.int64(at: 4) ?? 0)
        let digest = statement.blob(at: 1) ?? statement.blob(at: 3) ?? genesis
        return Head(digest: digest, nextID: highest + 1)
    }

    /// The row the statement stands on, selected as `id, time, code, kind, details, prev_digest, digest`.
    package static func row(_ statement: borrowing SQLiteDatabase.Statement) -> Row {
        Row(
            id: statement.int64(at: 0) ?? 0, time: statement.int64(at: 1) ?? 0, code: statement.blob(at: 2),
            kind: statement.blob(at: 3) ?? [], details: statement.blob(at: 4) ?? [], previous: statement.blob(at: 5),
            digest: statement.blob(at: 6))
    }

}
