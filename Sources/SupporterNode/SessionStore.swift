import Foundation

/// The supporter node's durable store, one SQLite file: session codes, the append-only audit log, API token
/// digests, and registration back-off, so all of them survive a restart.
///
/// Thread-safe: every method may be called from any thread; calls are serialized on one connection (see
/// ``SQLiteDatabase``). Every method that writes has committed when it returns: with the default durability the
/// change survives the process being killed; with ``SQLiteDatabase/Durability/powerLoss`` it survives a power loss.
/// Calls block on disk I/O for microseconds to milliseconds: call them off latency-critical paths (not on an event
/// loop) when the durability is `.powerLoss`.
public final class SessionStore: Sendable {
    /// The database file, or `:memory:`.
    public var path: String { database.path }
    let database: SQLiteDatabase

    /// Opens (creating if needed) the store at `path` and migrates it to the current ``StoreSchema``.
    ///
    /// Throws a ``StoreError`` that names `path` when the file cannot be opened, is not a database, or was written by
    /// a newer node (``StoreError/Kind/schemaTooNew``).
    public init(path: String, durability: SQLiteDatabase.Durability = .processCrash) throws(StoreError) {
        database = try SQLiteDatabase(path: path, durability: durability)
        try StoreSchema.migrate(database)
    }

    // MARK: session codes

    private static let codeColumns = """
        code, type, description, customer_name, customer_email, waiting_message, is_closed, created_at, valid_until, \
        closed_at, assigned_supporter
        """

    /// Stores a new code. Throws ``StoreError/Kind/duplicate`` when the code exists already.
    public func insert(_ record: SessionCodeRecord) throws(StoreError) {
        try perform("insert session code") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                "INSERT INTO session_codes (\(Self.codeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            try Self.bind(record, to: statement)
            try statement.run()
        }
    }

    /// Replaces every field of the stored code `record.code`. Throws ``StoreError/Kind/notFound`` when there is none.
    public func update(_ record: SessionCodeRecord) throws(StoreError) {
        let changed = try perform("update session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int in
            let statement = try connection.prepare(
                """
                UPDATE session_codes SET type = ?2, description = ?3, customer_name = ?4, customer_email = ?5,
                    waiting_message = ?6, is_closed = ?7, created_at = ?8, valid_until = ?9, closed_at = ?10,
                    assigned_supporter = ?11
                WHERE code = ?1
                """)
            try Self.bind(record, to: statement)
            try statement.run()
            return connection.changes
        }
        guard changed > 0 else {
            throw StoreError(
                kind: .notFound, operation: "update session code", message: "no such session code", path: path)
        }
    }

    /// Deletes a code; true when it existed. Its audit events stay.
    @discardableResult
    public func delete(code: String) throws(StoreError) -> Bool {
        try perform("delete session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare("DELETE FROM session_codes WHERE code = ?")
            try statement.bind(code, at: 1)
            try statement.run()
            return connection.changes > 0
        }
    }

    /// The stored code `code`, or nil.
    public func record(code: String) throws(StoreError) -> SessionCodeRecord? {
        try perform("read session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> SessionCodeRecord? in
            let statement = try connection.prepare("SELECT \(Self.codeColumns) FROM session_codes WHERE code = ?")
            try statement.bind(code, at: 1)
            guard try statement.step() else { return nil }
            return try Self.record(from: statement)
        }
    }

    /// One page of codes, ordered by creation time then code, and how many codes there are in all (one snapshot).
    /// A negative `offset` or `limit` counts as 0.
    public func records(offset: Int, limit: Int) throws(StoreError) -> (records: [SessionCodeRecord], total: Int) {
        try perform("list session codes", transaction: .deferred) {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> ([SessionCodeRecord], Int) in
            let count = try connection.prepare("SELECT count(*) FROM session_codes")
            let total = try count.step() ? Int(count.int64(at: 0) ?? 0) : 0
            let page = try connection.prepare(
                "SELECT \(Self.codeColumns) FROM session_codes ORDER BY created_at, code LIMIT ? OFFSET ?")
            try page.bind(Int64(max(0, limit)), at: 1)
            try page.bind(Int64(max(0, offset)), at: 2)
            var records: [SessionCodeRecord] = []
            while try page.step() { records.append(try Self.record(from: page)) }
            return (records, total)
        }
    }

    /// Every stored code, ordered by creation time then code.
    public func allRecords() throws(StoreError) -> [SessionCodeRecord] {
        try perform("list session codes") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [SessionCodeRecord] in
            let statement = try connection.prepare(
                "SELECT \(Self.codeColumns) FROM session_codes ORDER BY created_at, code")
            var records: [SessionCodeRecord] = []
            while try statement.step() { records.append(try Self.record(from: statement)) }
            return records
        }
    }

    private static func bind(_ record: SessionCodeRecord, to statement: borrowing SQLiteDatabase.Statement)
        throws(StoreError)
    {
        try statement.bind(record.code, at: 1)
        try statement.bind(Int64(record.type.rawValue), at: 2)
        try statement.bind(record.description, at: 3)
        try statement.bind(record.customerName, at: 4)
        try statement.bind(record.customerEmail, at: 5)
        try statement.bind(record.waitingMessage, at: 6)
        try statement.bind(Int64(record.isClosed ? 1 : 0), at: 7)
        try statement.bind(record.createdAt.unixMilliseconds, at: 8)
        try statement.bind(record.validUntil.unixMilliseconds, at: 9)
        try statement.bind(record.closedAt?.unixMilliseconds, at: 10)
        try statement.bind(record.assignedSupporter, at: 11)
    }

    private static func record(from row: borrowing SQLiteDatabase.Statement) throws(StoreError) -> SessionCodeRecord {
        guard let code = row.text(at: 0), let rawType = row.int64(at: 1), let closed = row.int64(at: 6),
            let createdAt = row.int64(at: 7), let validUntil = row.int64(at: 8)
        else { throw invalidData("a session code row lacks a required value") }
        guard let typeValue = UInt8(exactly: rawType), let type = SessionCodeType(rawValue: typeValue) else {
            throw invalidData("a session code has the unknown type \(rawType)")
        }
        return SessionCodeRecord(
            code: code, type: type, description: row.text(at: 2), customerName: row.text(at: 3),
            customerEmail: row.text(at: 4), waitingMessage: row.text(at: 5), isClosed: closed != 0,
            createdAt: Date(unixMilliseconds: createdAt), validUntil: Date(unixMilliseconds: validUntil),
            closedAt: row.int64(at: 9).map(Date.init(unixMilliseconds:)), assignedSupporter: row.text(at: 10))
    }

    // MARK: audit log

    /// Appends one event (its `id` is ignored) and returns the id it was given. Committed when it returns.
    /// The audit log has no update or delete: a trigger refuses both even through raw SQL.
    @discardableResult
    public func append(_ event: AuditEvent) throws(StoreError) -> Int64 {
        let details = try json(event.details)
        return try perform("append audit event") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int64 in
            try Self.insert(event, details: details, into: connection)
        }
    }

    /// Appends events in one transaction, all or none; returns their ids in order.
    @discardableResult
    public func append(contentsOf events: [AuditEvent]) throws(StoreError) -> [Int64] {
        var encoded: [String] = []
        encoded.reserveCapacity(events.count)
        for event in events { encoded.append(try json(event.details)) }
        return try perform("append audit events", transaction: .immediate) {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [Int64] in
            var ids: [Int64] = []
            ids.reserveCapacity(events.count)
            for (event, details) in zip(events, encoded) {
                ids.append(try Self.insert(event, details: details, into: connection))
            }
            return ids
        }
    }

    /// Stored events in id order: those of `code` (all codes when nil), with `from <= time < to` (either bound
    /// optional), with an id greater than `afterID` (for paging: pass the last id seen), at most `limit` of them.
    public func auditEvents(
        code: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int = 1000, afterID: Int64? = nil
    ) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        if code != nil { conditions.append("code = :code") }
        if from != nil { conditions.append("time >= :from") }
        if to != nil { conditions.append("time < :to") }
        if afterID != nil { conditions.append("id > :after") }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT id, time, code, kind, details FROM audit_events \(filter) ORDER BY id LIMIT :limit"
        return try perform("read audit events") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [AuditEvent] in
            let statement = try connection.prepare(sql)
            // Named parameters take the next numbers in order of first appearance.
            var index = 1
            if let code { try statement.bind(code, at: index); index += 1 }
            if let from { try statement.bind(from.unixMilliseconds, at: index); index += 1 }
            if let to { try statement.bind(to.unixMilliseconds, at: index); index += 1 }
            if let afterID { try statement.bind(afterID, at: index); index += 1 }
            try statement.bind(Int64(max(0, limit)), at: index)
            var events: [AuditEvent] = []
            while try statement.step() {
                guard let id = statement.int64(at: 0), let time = statement.int64(at: 1),
                    let kind = statement.text(at: 3)
                else { throw Self.invalidData("an audit event row lacks a required value") }
                let details = try Self.details(fromJSON: statement.text(at: 4) ?? "{}")
                events.append(
                    AuditEvent(
                        id: id, time: Date(unixMilliseconds: time), code: statement.text(at: 2),
                        kind: AuditEvent.Kind(rawValue: kind), details: details))
            }
            return events
        }
    }

    private static func insert(
        _ event: AuditEvent, details: String, into connection: borrowing SQLiteDatabase.Connection
    ) throws(StoreError) -> Int64 {
        let statement = try connection.prepare(
            "INSERT INTO audit_events (time, code, kind, details) VALUES (?, ?, ?, ?)")
        try statement.bind(event.time.unixMilliseconds, at: 1)
        try statement.bind(event.code, at: 2)
        try statement.bind(event.kind.rawValue, at: 3)
        try statement.bind(details, at: 4)
        try statement.run()
        return connection.lastInsertRowID
    }

    private func json(_ details: [String: String]) throws(StoreError) -> String {
        if details.isEmpty { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(details), as: UTF8.self)
        } catch {
            var failure = Self.invalidData("audit details cannot be encoded as JSON: \(error)")
            failure.path = path
            throw failure
        }
    }

    private static func details(fromJSON text: String) throws(StoreError) -> [String: String] {
        if text == "{}" { return [:] }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        } catch {
            throw invalidData("an audit event's details are not a JSON object of strings")
        }
    }

    // MARK: API tokens

    /// Remembers the digest of an API token (never the token). True when it was new; adding a known digest again
    /// changes nothing.
    @discardableResult
    public func addTokenDigest(
        _ digest: [UInt8], scope: APITokenScope = .device, label: String? = nil, createdAt: Date
    ) throws(StoreError) -> Bool {
        try perform("add API token digest") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare(
                "INSERT INTO api_tokens (digest, label, created_at, scope) VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING")
            try statement.bind(blob: digest, at: 1)
            try statement.bind(label, at: 2)
            try statement.bind(createdAt.unixMilliseconds, at: 3)
            try statement.bind(scope.rawValue, at: 4)
            try statement.run()
            return connection.changes > 0
        }
    }

    /// Forgets a token digest (revokes the token); true when it was stored.
    @discardableResult
    public func removeTokenDigest(_ digest: [UInt8]) throws(StoreError) -> Bool {
        try perform("remove API token digest") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let statement = try connection.prepare("DELETE FROM api_tokens WHERE digest = ?")
            try statement.bind(blob: digest, at: 1)
            try statement.run()
            return connection.changes > 0
        }
    }

    /// Every stored token digest of `scope`, oldest first.
    public func tokenDigests(scope: APITokenScope = .device) throws(StoreError) -> [[UInt8]] {
        try perform("read API token digests") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [[UInt8]] in
            let statement = try connection.prepare(
                "SELECT digest FROM api_tokens WHERE scope = ? ORDER BY created_at, rowid")
            try statement.bind(scope.rawValue, at: 1)
            var digests: [[UInt8]] = []
            while try statement.step() {
                guard let digest = statement.blob(at: 0) else { throw Self.invalidData("an API token digest is NULL") }
                digests.append(digest)
            }
            return digests
        }
    }

    // MARK: registration back-off

    /// Stores (inserting or replacing) the back-off state of `key`.
    public func saveBackoff(key: String, failures: Int, blockedUntil: Date?, lastFailure: Date) throws(StoreError) {
        try perform("save registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
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
    public func deleteBackoff(key: String) throws(StoreError) {
        try perform("delete registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare("DELETE FROM registration_backoff WHERE key = ?")
            try statement.bind(key, at: 1)
            try statement.run()
        }
    }

    /// Every stored back-off state, by key.
    public func loadBackoff() throws(StoreError) -> [BackoffRow] {
        try perform("load registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [BackoffRow] in
            let statement = try connection.prepare(
                "SELECT key, failures, blocked_until, last_failure FROM registration_backoff ORDER BY key")
            var rows: [BackoffRow] = []
            while try statement.step() {
                guard let key = statement.text(at: 0), let failures = statement.int64(at: 1),
                    let lastFailure = statement.int64(at: 3)
                else { throw Self.invalidData("a back-off row lacks a required value") }
                rows.append(
                    BackoffRow(
                        key: key, failures: Int(clamping: failures),
                        blockedUntil: statement.int64(at: 2).map(Date.init(unixMilliseconds:)),
                        lastFailure: Date(unixMilliseconds: lastFailure)))
            }
            return rows
        }
    }

    /// Forgets keys whose last failure was before `date`, except keys still blocked at `date`. Returns how many.
    @discardableResult
    public func deleteBackoff(olderThan date: Date) throws(StoreError) -> Int {
        try perform("forget old registration back-off") {
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

    // MARK: helpers

    /// Runs `body` on the connection (in a transaction when `transaction` is given); errors name `operation`.
    private func perform<Result>(
        _ operation: String, transaction: SQLiteDatabase.TransactionKind? = nil,
        _ body: (borrowing SQLiteDatabase.Connection) throws(StoreError) -> sending Result
    ) throws(StoreError) -> sending Result {
        do {
            if let transaction {
                return try database.transaction(transaction, body)
            }
            return try database.withConnection(body)
        } catch {
            var named = error
            named.operation = "\(operation) (\(error.operation))"
            named.path = path
            throw named
        }
    }

    private static func invalidData(_ message: String) -> StoreError {
        StoreError(kind: .invalidData, operation: "decode", message: message, path: "")
    }
}
