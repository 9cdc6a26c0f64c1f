public import SupporterStore
public import Foundation
package import SupporterCore
import SupportWire
import SupportUtilities
public import SupporterModel

/// One write transaction on a ``SessionStore``, open inside ``SessionStore/write(_:)``: every write the store has,
/// applied together, committed together when the closure returns, all rolled back when it throws.
///
/// A single writer thread drains its queue into one transaction this way and pays for one commit (one `fsync` with
/// ``SQLiteDatabase/Durability/powerLoss``) instead of one per change:
///
/// ```swift
/// let ids = try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> [Int64] in
///     try transaction.update(record)
///     return try transaction.append(contentsOf: events)
/// }
/// ```
///
/// Non-copyable, made only by the store and lent `inout` to the closure: it cannot outlive the call, so nothing
/// touches the database outside the store's lock. Inside the closure, use only the transaction, never the store
/// (that would wait for itself; the program stops with a message instead). To keep one failing change from undoing
/// the others, wrap each in ``attempt(_:)``, or use ``SessionStore/write(each:_:)``.
///
/// Errors name the operation, as the store's one-call methods do (`insert session code (step)`).
public struct StoreTransaction: ~Copyable {
    package let connection: SQLiteDatabase.Connection
    /// The store's file, for errors.
    package let path: String
    /// Where the next audit event links; read at the first append, then kept.
    private var chainHead: AuditChain.Head?
    /// How many ``attempt(_:)`` savepoints are open.
    private var depth = 0

    /// `knownHead`: the chain's head, when the caller knows it is current (nothing changed the database since it was
    /// read); nil reads it from the database at the first append.
    package init(_ connection: consuming SQLiteDatabase.Connection, path: String, knownHead: AuditChain.Head? = nil) {
        self.connection = connection
        self.path = path
        self.chainHead = knownHead
    }

    /// Where the next audit event would link, if this transaction has read or moved the head.
    package var knownChainHead: AuditChain.Head? { chainHead }

    // MARK: session codes

    /// Stores a new code with its code rules. Throws ``StoreError/Kind/duplicate`` when the code exists already.
    public mutating func insert(_ record: SessionCodeRecord) throws(StoreError) {
        try run("insert session code") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                "INSERT INTO session_codes (\(SessionStore.codeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            try SessionStore.bind(record, to: statement)
            try statement.run()
            try SessionStore.saveFeatureRules(of: record, connection)
        }
    }

    /// Replaces every field of the stored code `record.code`, its code rules included. Throws
    /// ``StoreError/Kind/notFound`` when there is none.
    public mutating func update(_ record: SessionCodeRecord) throws(StoreError) {
        let changed = try run("update session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int in
            let statement = try connection.prepare(
                """
                UPDATE session_codes SET type = ?2, description = ?3, customer_name = ?4, customer_email = ?5,
                    waiting_message = ?6, is_closed = ?7, created_at = ?8, valid_until = ?9, closed_at = ?10,
                    assigned_supporter = ?11, default_feature_rule = ?12, media_descriptor = ?13
                WHERE code = ?1
                """)
            try SessionStore.bind(record, to: statement)
            try statement.run()
            let changed = connection.changes
            if changed > 0 { try SessionStore.saveFeatureRules(of: record, connection) }
            return changed
        }
        guard changed > 0 else {
            throw StoreError(
                kind: .notFound, operation: "update session code", message: "no such session code", path: path)
        }
    }

    /// Deletes a code; true when it existed. Its audit events stay.
    @discardableResult
    public mutating func delete(code: String) throws(StoreError) -> Bool {
        try run("delete session code") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare("DELETE FROM session_codes WHERE code = ?")
            try statement.bind(code, at: 1)
            try statement.run()
            return connection.changes > 0
        }
    }

    /// The stored code `code` as this transaction sees it, or nil: for read-modify-write.
    public func record(code: String) throws(StoreError) -> SessionCodeRecord? {
        try run("read session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> SessionCodeRecord? in
            let statement = try connection.prepare(
                "SELECT \(SessionStore.codeColumns) FROM session_codes WHERE code = ?")
            try statement.bind(code, at: 1)
            guard try statement.step() else { return nil }
            var record = try SessionStore.record(from: statement)
            record.featureRules.rules = try SessionStore.featureRules(of: code, connection)
            return record
        }
    }

    // MARK: audit trail

    /// Appends one event (its `id` is ignored), linked into the hash chain, and returns the id it was given.
    /// The audit trail has no update or delete: triggers refuse both even through raw SQL.
    @discardableResult
    public mutating func append(_ event: AuditEvent) throws(StoreError) -> Int64 {
        let details: String
        do { details = try SessionStore.json(event.details) } catch { throw named(error, "append audit event") }
        let head = try auditHead()
        let id = head.nextID
        let time = event.time.unixMilliseconds
        let digest = AuditChain.digest(
            previous: head.digest, id: id, time: time, code: event.code.map { Array($0.utf8) },
            kind: Array(event.kind.rawValue.utf8), details: Array(details.utf8))
        try run("append audit event") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                """
                INSERT INTO audit_events (id, time, code, kind, details, prev_digest, digest)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            try statement.bind(id, at: 1)
            try statement.bind(time, at: 2)
            try statement.bind(event.code, at: 3)
            try statement.bind(event.kind.rawValue, at: 4)
            try statement.bind(details, at: 5)
            try statement.bind(blob: head.digest, at: 6)
            try statement.bind(blob: digest, at: 7)
            try statement.run()
        }
        chainHead = AuditChain.Head(digest: digest, nextID: id + 1)
        return id
    }

    /// Appends events in order; returns their ids in order.
    @discardableResult
    public mutating func append(contentsOf events: [AuditEvent]) throws(StoreError) -> [Int64] {
        var ids: [Int64] = []
        ids.reserveCapacity(events.count)
        for event in events { ids.append(try append(event)) }
        return ids
    }

    private mutating func auditHead() throws(StoreError) -> AuditChain.Head {
        if let chainHead { return chainHead }
        let head = try run("read the audit chain's head") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> AuditChain.Head in
            try AuditChain.head(connection)
        }
        chainHead = head
        return head
    }

    // MARK: resume records

    /// Stores (inserting or replacing) the resume record of the session on `code` (``StoredResumeState`` JSON).
    public mutating func saveResumeRecord(code: String, state: String) throws(StoreError) {
        try run("save a resume record") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                "INSERT INTO resume_records (code, state) VALUES (?, ?) ON CONFLICT (code) DO UPDATE SET state = excluded.state")
            try statement.bind(code, at: 1)
            try statement.bind(state, at: 2)
            try statement.run()
        }
    }

    /// Forgets the resume record of `code` (its session ended, or a new registration took the code).
    public mutating func deleteResumeRecord(code: String) throws(StoreError) {
        try run("delete a resume record") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare("DELETE FROM resume_records WHERE code = ?")
            try statement.bind(code, at: 1)
            try statement.run()
        }
    }

    // MARK: registration back-off

    /// Stores (inserting or replacing) the back-off state of `key`.
    public mutating func saveBackoff(key: String, failures: Int, blockedUntil: Date?, lastFailure: Date)
        throws(StoreError)
    {
        try run("save registration back-off") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                """
                INSERT INTO registration_backoff (key, failures, blocked_until, last_failure) VALUES (?, ?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, blocked_until = excluded.blocked_until,
                    last_failure = excluded.last_failure
                """)
            try statement.bind(key, at: 1)
            try statement.bind(Int64(failures), at: 2)
            try statement.bind(blockedUntil?.unixMilliseconds, at: 3)
            try statement.bind(lastFailure.unixMilliseconds, at: 4)
            try statement.run()
        }
    }

    /// Forgets the back-off state of `key` (after a success).
    public mutating func deleteBackoff(key: String) throws(StoreError) {
        try run("delete registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare("DELETE FROM registration_backoff WHERE key = ?")
            try statement.bind(key, at: 1)
            try statement.run()
        }
    }

    /// Forgets keys whose last failure was before `date`, except keys still blocked at `date`. Returns how many.
    @discardableResult
    public mutating func deleteBackoff(olderThan date: Date) throws(StoreError) -> Int {
        try run("forget old registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int in
            let statement = try connection.prepare(
                """
                DELETE FROM registration_backoff
                WHERE last_failure < ?1 AND (blocked_until IS NULL OR blocked_until <= ?1)
                """)
            try statement.bind(date.unixMilliseconds, at: 1)
            try statement.run()
            return connection.changes
        }
    }

    // MARK: API tokens

    /// Stores the digest of an API token (never the token) with a new public id, and returns its record. Adding a
    /// digest that is stored already changes nothing and returns the stored record; adding one that was revoked throws
    /// ``StoreError/Kind/revoked``: a revoked token is never accepted again.
    @discardableResult
    public mutating func addToken(
        digest: [UInt8], scope: APITokenScope = .device, label: String? = nil, createdAt: Date
    ) throws(StoreError) -> APITokenRecord {
        try addTokenReportingNew(digest: digest, scope: scope, label: label, createdAt: createdAt).record
    }

    package mutating func addTokenReportingNew(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) {
        let operation = "add API token"
        if let stored = try token(digest: digest, includingRevoked: true, operation: operation) {
            guard let revokedAt = stored.revokedAt else { return (stored, false) }
            throw StoreError(
                kind: .revoked, operation: operation,
                message:
                    "this API token (id \(stored.id)) was revoked at \(revokedAt) and is never accepted again: "
                    + "issue a new one with 'rsup-supporter token'",
                path: path)
        }
        // Ids are random: on the rare clash with a stored id, draw again.
        for _ in 0..<8 {
            let record = APITokenRecord(id: APITokenRecord.makeID(), scope: scope, label: label, createdAt: createdAt)
            let outcome = attempt { (transaction: inout StoreTransaction) throws(StoreError) in
                try transaction.run(operation) { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                    let statement = try connection.prepare(
                        "INSERT INTO api_tokens (digest, id, label, created_at, scope) VALUES (?, ?, ?, ?, ?)")
                    try statement.bind(blob: digest, at: 1)
                    try statement.bind(record.id, at: 2)
                    try statement.bind(label, at: 3)
                    try statement.bind(createdAt.unixMilliseconds, at: 4)
                    try statement.bind(scope.rawValue, at: 5)
                    try statement.run()
                }
            }
            switch outcome {
            case .success: return (record, true)
            case .failure(let error) where error.kind == .duplicate: continue
            case .failure(let error): throw error
            }
        }
        throw StoreError(
            kind: .duplicate, operation: operation, message: "no unused token id found in 8 draws", path: path)
    }

    /// Revokes the token with public id `id` at `date`: it is never accepted again, and its row stays for the audit
    /// trail. True when it was valid until now; false when there is no such token or it was revoked already.
    @discardableResult
    public mutating func revokeToken(id: String, at date: Date = Date()) throws(StoreError) -> Bool {
        try run("revoke API token") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare(
                "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
            try statement.bind(date.unixMilliseconds, at: 1)
            try statement.bind(id, at: 2)
            try statement.run()
            return connection.changes > 0
        }
    }

    /// Revokes the token whose digest is `digest`; true when it was valid until now.
    @discardableResult
    package mutating func revokeToken(digest: [UInt8], at date: Date) throws(StoreError) -> Bool {
        try run("revoke API token") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare(
                "UPDATE api_tokens SET revoked_at = ? WHERE digest = ? AND revoked_at IS NULL")
            try statement.bind(date.unixMilliseconds, at: 1)
            try statement.bind(blob: digest, at: 2)
            try statement.run()
            return connection.changes > 0
        }
    }

    package func token(digest: [UInt8], includingRevoked: Bool, operation: String) throws(StoreError) -> APITokenRecord? {
        try run(operation) { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> APITokenRecord? in
            let statement = try connection.prepare(
                "SELECT \(SessionStore.tokenColumns) FROM api_tokens WHERE digest = ?")
            try statement.bind(blob: digest, at: 1)
            guard try statement.step() else { return nil }
            let record = try SessionStore.tokenRecord(from: statement)
            return includingRevoked || !record.isRevoked ? record : nil
        }
    }

    // MARK: isolating one change

    /// Runs `body` in a savepoint: when it throws, only its own changes are undone and the transaction goes on;
    /// the error is returned, not thrown. For a batch in which one bad change must not undo the others.
    ///
    /// When SQLite itself had to end the whole transaction (a full disk, an I/O error), every later write in it throws
    /// and ``SessionStore/write(_:)`` throws that error: nothing is committed.
    public mutating func attempt<Result>(
        _ body: (inout StoreTransaction) throws(StoreError) -> Result
    ) -> Swift.Result<Result, StoreError> {
        let name = "attempt_\(depth)"
        do {
            try run("begin savepoint") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                try connection.executeCached("SAVEPOINT \(name)", operation: "savepoint")
            }
        } catch {
            return .failure(error)
        }
        depth += 1
        defer { depth -= 1 }
        let headBefore = chainHead
        do {
            let result = try body(&self)
            try connection.executeCached("RELEASE \(name)", operation: "release savepoint")
            return .success(result)
        } catch {
            chainHead = headBefore
            if connection.isInTransaction {
                try? connection.execute("ROLLBACK TO \(name); RELEASE \(name)", operation: "roll back savepoint")
            }
            return .failure(error)
        }
    }

    // MARK: helpers

    /// Runs `body` on the connection while the transaction is open; errors name `operation` and the store's file.
    package func run<Result>(
        _ operation: String, _ body: (borrowing SQLiteDatabase.Connection) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        guard connection.isInTransaction else {
            throw StoreError(
                kind: .sqlite, operation: operation,
                message:
                    "the transaction has ended: SQLite rolled it back after an earlier error, so nothing more is "
                    + "written in it; run the changes again in a new write",
                path: path)
        }
        do {
            return try body(connection)
        } catch {
            throw named(error, operation)
        }
    }

    package func named(_ error: StoreError, _ operation: String) -> StoreError {
        var named = error
        named.operation = "\(operation) (\(error.operation))"
        named.path = path
        return named
    }
}
