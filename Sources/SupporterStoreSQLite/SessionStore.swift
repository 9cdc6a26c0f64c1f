public import SupporterStore
public import Foundation
import Synchronization
import SupportSession
import SupportWire
import SupporterCore
import SupportUtilities
import SupportVocabulary
public import SupporterModel

/// The supporter node's durable store, one SQLite file: session codes, the append-only, hash-chained audit trail, API
/// token digests with their public ids, and registration back-off, so all of them survive a restart.
///
/// Thread-safe: every method may be called from any thread; calls are serialized on one connection (see
/// ``SQLiteDatabase``). Every method that writes has committed when it returns: with the default durability the
/// change survives the process being killed; with ``SQLiteDatabase/Durability/powerLoss`` it survives a power loss.
/// Calls block on disk I/O for microseconds to milliseconds: call them off latency-critical paths (not on an event
/// loop) when the durability is `.powerLoss`.
///
/// Many changes at once: ``write(_:)`` applies them in one transaction (one commit), ``write(each:_:)`` does so with
/// each item isolated. Each one-call write method is one such transaction.
///
/// The audit trail: ``verifyAudit()`` checks its hash chain, ``archiveAudit(before:to:)`` moves old events to a file
/// and keeps the chain verifiable across the cut (see `SessionStore+Audit.swift`).
public final class SessionStore: Sendable {
    /// The database file, or `:memory:`.
    public var path: String { database.path }
    package let database: SQLiteDatabase
    /// The audit chain's head after the last write through this store that read or moved it, and the database's data
    /// version right after that commit. A write that finds the same data version (nothing at all changed the file
    /// since, through this connection or any other) starts from it instead of querying the head again (a tenth of the
    /// store writer's time per audit row). Read and written only under the database's lock.
    private let chainCache = Mutex<(head: AuditChain.Head, dataVersion: UInt32)?>(nil)

    /// Opens (creating if needed) the store at `path` and migrates it to the current ``StoreSchema``.
    ///
    /// Throws a ``StoreError`` that names `path` when the file cannot be opened, is not a database, or was written by
    /// a newer node (``StoreError/Kind/schemaTooNew``).
    public init(path: String, durability: SQLiteDatabase.Durability = .processCrash) throws(StoreError) {
        database = try SQLiteDatabase(path: path, durability: durability)
        try StoreSchema.migrate(database)
    }

    // MARK: writing

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE` … `COMMIT`) and returns what it returns: every change
    /// it makes through the ``StoreTransaction`` is committed together when it returns, and all are rolled back when it
    /// throws (the error is rethrown). Committed, with the store's durability, when this returns.
    ///
    /// Holds the store's lock for the whole call: keep `body` to database work, and inside it use only the
    /// transaction, never this store (the program stops with a message rather than wait for itself).
    public func write<Result>(
        _ body: (inout StoreTransaction) throws(StoreError) -> sending Result
    ) throws(StoreError) -> sending Result {
        do {
            return try database.withConnection {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> sending Result in
                let cached = chainCache.withLock { $0 }
                let (result, head) = try connection.transaction(.immediate) {
                    (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> sending (
                        Result, AuditChain.Head?
                    ) in
                    // Checked inside the transaction: BEGIN has looked for other connections' commits by now.
                    let known = cached.flatMap { connection.dataVersion == $0.dataVersion ? $0.head : nil }
                    var transaction = StoreTransaction(connection.view(), path: path, knownHead: known)
                    let result = try body(&transaction)
                    return (result, transaction.knownChainHead)
                }
                // A write that did not touch the chain leaves the cache: if it changed anything, the data version
                // moved and the cache no longer matches.
                if let head {
                    let version = connection.dataVersion
                    chainCache.withLock { $0 = version.map { (head, $0) } }
                }
                return result
            }
        } catch {
            var named = error
            named.path = path
            throw named
        }
    }

    /// Applies `items` in one transaction, each in its own savepoint (``StoreTransaction/attempt(_:)``): an item whose
    /// `body` throws is undone alone and its error returned in its place, the others are committed together. Returns
    /// one result per item, in order. This is the batch a single writer wants: one commit for the whole queue, and a
    /// bad item (a duplicate code, a row that no longer exists) costs only itself.
    ///
    /// Throws, with nothing committed, only when the transaction as a whole fails (the lock cannot be taken, the disk
    /// is full, the commit fails): then every item failed the same way, and the caller may retry them, together or one
    /// by one (`write(each: [item], body)`), or report them lost.
    public func write<Item, Success: Sendable>(
        each items: [Item], _ body: (inout StoreTransaction, Item) throws(StoreError) -> Success
    ) throws(StoreError) -> [Swift.Result<Success, StoreError>] {
        try write { (transaction: inout StoreTransaction) throws(StoreError) -> [Swift.Result<Success, StoreError>] in
            var results: [Swift.Result<Success, StoreError>] = []
            results.reserveCapacity(items.count)
            for item in items {
                results.append(
                    transaction.attempt { (transaction: inout StoreTransaction) throws(StoreError) -> Success in
                        try body(&transaction, item)
                    })
            }
            return results
        }
    }

    /// One change in its own transaction, for the one-call methods; errors name `operation`.
    package func write<Result>(
        _ operation: String, _ body: (inout StoreTransaction) throws(StoreError) -> sending Result
    ) throws(StoreError) -> sending Result {
        do {
            return try write(body)
        } catch {
            guard !error.operation.hasPrefix(operation) else { throw error }
            var named = error
            named.operation = "\(operation) (\(error.operation))"
            throw named
        }
    }

    // MARK: session codes

    package static let codeColumns = """
        code, type, description, customer_name, customer_email, waiting_message, is_closed, created_at, valid_until, \
        closed_at, assigned_supporter, default_feature_rule, media_descriptor
        """

    /// Stores a new code. Throws ``StoreError/Kind/duplicate`` when the code exists already.
    public func insert(_ record: SessionCodeRecord) throws(StoreError) {
        try write("insert session code") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.insert(record)
        }
    }

    /// Replaces every field of the stored code `record.code`. Throws ``StoreError/Kind/notFound`` when there is none.
    public func update(_ record: SessionCodeRecord) throws(StoreError) {
        try write("update session code") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.update(record)
        }
    }

    /// Deletes a code; true when it existed. Its audit events stay.
    @discardableResult
    public func delete(code: String) throws(StoreError) -> Bool {
        try write("delete session code") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            try transaction.delete(code: code)
        }
    }

    /// The stored code `code`, or nil.
    public func record(code: String) throws(StoreError) -> SessionCodeRecord? {
        try perform("read session code") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> SessionCodeRecord? in
            let statement = try connection.prepare("SELECT \(Self.codeColumns) FROM session_codes WHERE code = ?")
            try statement.bind(code, at: 1)
            guard try statement.step() else { return nil }
            var record = try Self.record(from: statement)
            record.featureRules.rules = try Self.featureRules(of: code, connection)
            return record
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
            for index in records.indices {
                records[index].featureRules.rules = try Self.featureRules(of: records[index].code, connection)
            }
            return (records, total)
        }
    }

    /// Every stored code, ordered by creation time then code.
    public func allRecords() throws(StoreError) -> [SessionCodeRecord] {
        try perform("list session codes", transaction: .deferred) {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [SessionCodeRecord] in
            let statement = try connection.prepare(
                "SELECT \(Self.codeColumns) FROM session_codes ORDER BY created_at, code")
            var records: [SessionCodeRecord] = []
            while try statement.step() { records.append(try Self.record(from: statement)) }
            let rules = try Self.allFeatureRules(connection)
            for index in records.indices {
                records[index].featureRules.rules = rules[records[index].code] ?? [:]
            }
            return records
        }
    }

    package static func bind(_ record: SessionCodeRecord, to statement: borrowing SQLiteDatabase.Statement)
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
        try statement.bind(Int64(record.featureRules.defaultRule.rawValue), at: 12)
        try statement.bind(blob: record.mediaDescriptor, at: 13)
    }

    /// The code's row, with its default rule but without its per-feature rules (read those with
    /// ``featureRules(of:_:)``).
    package static func record(from row: borrowing SQLiteDatabase.Statement) throws(StoreError) -> SessionCodeRecord {
        guard let code = row.text(at: 0), let rawType = row.int64(at: 1), let closed = row.int64(at: 6),
            let createdAt = row.int64(at: 7), let validUntil = row.int64(at: 8)
        else { throw invalidData("a session code row lacks a required value") }
        guard let typeValue = UInt8(exactly: rawType), let type = SessionCodeType(rawValue: typeValue) else {
            throw invalidData("a session code has the unknown type \(rawType)")
        }
        let defaultRule = try accessRule(row.int64(at: 11), of: code)
        return SessionCodeRecord(
            code: code, type: type, description: row.text(at: 2), customerName: row.text(at: 3),
            customerEmail: row.text(at: 4), waitingMessage: row.text(at: 5), isClosed: closed != 0,
            createdAt: Date(unixMilliseconds: createdAt), validUntil: Date(unixMilliseconds: validUntil),
            closedAt: row.int64(at: 9).map(Date.init(unixMilliseconds:)), assignedSupporter: row.text(at: 10),
            featureRules: FeatureRules(default: defaultRule), mediaDescriptor: row.blob(at: 12))
    }

    // MARK: audit log

    /// Appends one event (its `id` is ignored), linked into the hash chain, and returns the id it was given.
    /// Committed when it returns. The audit log has no update or delete: triggers refuse both even through raw SQL.
    @discardableResult
    public func append(_ event: AuditEvent) throws(StoreError) -> Int64 {
        try write("append audit event") { (transaction: inout StoreTransaction) throws(StoreError) -> Int64 in
            try transaction.append(event)
        }
    }

    /// Appends events in one transaction, all or none; returns their ids in order.
    @discardableResult
    public func append(contentsOf events: [AuditEvent]) throws(StoreError) -> [Int64] {
        try write("append audit events") { (transaction: inout StoreTransaction) throws(StoreError) -> [Int64] in
            try transaction.append(contentsOf: events)
        }
    }

    /// Stored events in id order: those of `code` (all codes when nil), with `from <= time < to` (either bound
    /// optional), with an id greater than `afterID` (for paging: pass the last id seen), at most `limit` of them.
    public func auditEvents(
        code: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int = 1000, afterID: Int64? = nil,
        beforeID: Int64? = nil, newestFirst: Bool = false
    ) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        if code != nil { conditions.append("code = :code") }
        if from != nil { conditions.append("time >= :from") }
        if to != nil { conditions.append("time < :to") }
        if afterID != nil { conditions.append("id > :after") }
        if beforeID != nil { conditions.append("id < :before") }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let order = newestFirst ? "id DESC" : "id"
        let sql = "SELECT id, time, code, kind, details FROM audit_events \(filter) ORDER BY \(order) LIMIT :limit"
        return try perform("read audit events") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [AuditEvent] in
            let statement = try connection.prepare(sql)
            // Named parameters take the next numbers in order of first appearance.
            var index = 1
            if let code { try statement.bind(code, at: index); index += 1 }
            if let from { try statement.bind(from.unixMilliseconds, at: index); index += 1 }
            if let to { try statement.bind(to.unixMilliseconds, at: index); index += 1 }
            if let afterID { try statement.bind(afterID, at: index); index += 1 }
            if let beforeID { try statement.bind(beforeID, at: index); index += 1 }
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

    /// The id of the newest audit event (0 when there is none).
    public func latestAuditID() throws(StoreError) -> Int64 {
        try perform("read the newest audit id") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int64 in
            let statement = try connection.prepare("SELECT coalesce(max(id), 0) FROM audit_events")
            guard try statement.step() else { return 0 }
            return statement.int64(at: 0) ?? 0
        }
    }

    /// The details as the store keeps them (``AuditDetailsJSON/json(_:)``).
    package static func json(_ details: [String: String]) throws(StoreError) -> String {
        try AuditDetailsJSON.json(details)
    }

    /// Details read back (``AuditDetailsJSON/details(fromJSON:)``).
    package static func details(fromJSON text: String) throws(StoreError) -> [String: String] {
        try AuditDetailsJSON.details(fromJSON: text)
    }

    // MARK: helpers

    /// Runs `body` on the connection (in a transaction when `transaction` is given); errors name `operation`.
    package func perform<Result>(
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

    package static func invalidData(_ message: String) -> StoreError {
        StoreError(kind: .invalidData, operation: "decode", message: message, path: "")
    }
}
