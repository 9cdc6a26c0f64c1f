import Foundation
import Synchronization
import SupportPostgres
import SupportRegistry

/// The PostgreSQL store: one thread that owns one ``PostgresConnection`` (libpq blocks, so never an event loop) and
/// works through a bounded FIFO of jobs, as ``StoreWriter`` does for SQLite.
///
/// Intent jobs are applied in batches (up to ``maximumBatch``), one transaction per batch and each job in its own
/// savepoint, so a bad job fails alone; completions run on the engine's thread after the commit. A failed job gets a
/// ``StoreError`` whose ``StoreError/underlying`` is the ``PostgresError`` (SQLSTATE included). The node's other calls
/// (token changes, reads) are queued on the same thread and waited for.
///
/// Lost connection: a batch that fails because the connection broke before its commit is retried once on a new
/// connection; while the server stays unreachable every job fails with ``StoreError/Kind/unavailable`` (nothing of it
/// is stored or acknowledged) and the next job tries to reconnect. A commit whose answer was lost is reported as a
/// failure: the node never acknowledges what it cannot be sure is stored.
///
/// Several nodes may share the database: the audit chain's head is a locked row (see ``PostgresStoreTransaction``).
final class PostgresStoreEngine: StoreEngine {
    private struct Job {
        var intents: [StoreIntent]
        var completion: @Sendable (StoreError?) -> Void
    }

    private enum Work {
        case job(Job)
        /// Returns true when the connection was found lost.
        case call(@Sendable (PostgresConnection) -> Bool)
    }

    private struct State: ~Copyable {
        var work: [Work] = []
        var head = 0
        var jobsWaiting = 0
        var stopping = false
        var statistics = StoreStatistics()
    }

    /// The connection, touched only by the engine's thread once it runs (and by `init` before that).
    private final class Owner: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    /// Most intent jobs waiting at once.
    let capacity: Int
    /// Most jobs in one transaction.
    let maximumBatch: Int
    /// The server, without a password.
    let location: String
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Connects, creates or migrates the schema (one transaction), and starts the engine's thread. Throws
    /// ``StoreError/Kind/unavailable`` when the server cannot be reached (libpq's reason in the message).
    init(connectionString: String, logger: NodeLogger, capacity: Int = 65_536, maximumBatch: Int = 256)
        throws(StoreError)
    {
        location = "PostgreSQL " + StoreBackend.redacted(connectionString)
        self.logger = logger
        self.capacity = max(1, capacity)
        self.maximumBatch = max(1, maximumBatch)
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(connectionString)
        } catch {
            throw Self.storeError(error, location: location)
        }
        try PostgresStoreSchema.migrate(connection, location: location)
        let owner = Owner(connection)
        let thread = Thread { [self] in self.run(owner.connection) }
        thread.name = "rsup-store-postgres"
        thread.start()
    }

    // MARK: the queue

    @discardableResult
    func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
        -> Bool
    {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping, state.jobsWaiting < capacity else { return false }
            state.work.append(.job(Job(intents: intents, completion: completion)))
            state.jobsWaiting += 1
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    func write(_ intents: [StoreIntent]) async throws(StoreError) {
        let failure: StoreError?? = await withCheckedContinuation { continuation in
            let queued = submit(intents, deferrable: false) { continuation.resume(returning: .some($0)) }
            if !queued { continuation.resume(returning: .none) }
        }
        switch failure {
        case .none:
            throw StoreError(
                kind: .busy, operation: "queue a write",
                message: "the node's store writer is full or stopped; try again", path: location)
        case .some(.none): return
        case .some(.some(let error)): throw error
        }
    }

    /// Runs `body` on the engine's thread and waits for it.
    private func perform<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        let outcome = Mutex<Swift.Result<Result, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let location = self.location
        let queued = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.work.append(
                .call { connection in
                    let result: Swift.Result<Result, StoreError>
                    do throws(StoreError) {
                        result = .success(try body(connection))
                    } catch {
                        result = .failure(error)
                    }
                    outcome.withLock { $0 = result }
                    done.signal()
                    if case .failure(let error) = result { return Self.isConnectionLoss(error) }
                    return false
                })
            return true
        }
        guard queued else {
            throw StoreError(kind: .busy, operation: operation, message: "the store has stopped", path: location)
        }
        wake.signal()
        done.wait()
        return try outcome.withLock { $0! }.get()  // safe: set before `done` is signalled
    }

    var statistics: StoreStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.queued = state.jobsWaiting
            return statistics
        }
    }

    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    /// Set by the engine's thread when a statement found the connection broken, even if libpq still calls it open.
    private nonisolated(unsafe) var connectionLost = false

    private func run(_ connection: PostgresConnection) {
        while true {
            wake.wait()
            while true {
                let (taken, stopping) = state.withLock { state -> ([Work], Bool) in
                    var taken: [Work] = []
                    while state.head < state.work.count {
                        let item = state.work[state.head]
                        if case .call = item {
                            if taken.isEmpty {
                                taken.append(item)
                                state.head += 1
                            }
                            break
                        }
                        guard taken.count < maximumBatch else { break }
                        taken.append(item)
                        state.head += 1
                        state.jobsWaiting -= 1
                    }
                    if state.head == state.work.count {
                        state.work.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return (taken, state.stopping)
                }
                if taken.isEmpty {
                    if stopping {
                        connection.close()
                        finished.signal()
                        return
                    }
                    break
                }
                if case .call(let body) = taken[0] {
                    reconnectIfNeeded(connection)
                    if body(connection) { connectionLost = true }
                    continue
                }
                apply(taken.compactMap { if case .job(let job) = $0 { job } else { nil } }, connection)
            }
        }
    }

    /// Opens the connection again when it broke; false when the server is still unreachable.
    @discardableResult
    private func reconnectIfNeeded(_ connection: PostgresConnection) -> Bool {
        guard connectionLost || !connection.isOpen else { return true }
        do {
            try connection.reconnect()
            connectionLost = false
            logger.log(.info, "store: reconnected to \(location)")
            return true
        } catch {
            return false
        }
    }

    // MARK: writing

    private func apply(_ batch: [Job], _ connection: PostgresConnection) {
        var failures: [StoreError?] = []
        for attempt in 1...2 {
            var committing = false
            do throws(StoreError) {
                guard reconnectIfNeeded(connection) else {
                    throw StoreError(
                        kind: .unavailable, operation: "reconnect",
                        message: "the PostgreSQL server cannot be reached; nothing was written", path: location)
                }
                failures = try applyOnce(batch, connection, committing: &committing)
                break
            } catch {
                let lost = Self.isConnectionLoss(error)
                if lost { connectionLost = true }
                if lost, !committing, attempt == 1, reconnectIfNeeded(connection) { continue }
                failures = Array(repeating: error, count: batch.count)
                break
            }
        }
        var failed = 0
        for (job, failure) in zip(batch, failures) {
            if let failure {
                failed += 1
                logger.log(
                    .error,
                    "store: cannot write \(job.intents.map(\.summary).joined(separator: ", ")): \(failure); "
                        + "what it records is refused, not acknowledged")
            }
            job.completion(failure)
        }
        state.withLock { state in
            state.statistics.jobsApplied += batch.count - failed
            state.statistics.jobsFailed += failed
            state.statistics.transactions += 1
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
        }
    }

    /// One transaction for the batch; returns each job's failure (nil when it is in the commit). Throws when the
    /// transaction failed as a whole.
    private func applyOnce(_ batch: [Job], _ connection: PostgresConnection, committing: inout Bool)
        throws(StoreError) -> [StoreError?]
    {
        var transaction = PostgresStoreTransaction(connection, location: location)
        try transaction.run("BEGIN", [], "begin transaction")
        do throws(StoreError) {
            var failures: [StoreError?] = []
            if batch.count == 1 {
                try transaction.apply(batch[0].intents)
                failures = [nil]
            } else {
                for job in batch {
                    try transaction.run("SAVEPOINT job", [], "savepoint")
                    let saved = transaction.savedHead
                    do throws(StoreError) {
                        try transaction.apply(job.intents)
                        try transaction.run("RELEASE SAVEPOINT job", [], "release savepoint")
                        failures.append(nil)
                    } catch {
                        if Self.isConnectionLoss(error) { throw error }
                        try transaction.run("ROLLBACK TO SAVEPOINT job", [], "roll back savepoint")
                        try transaction.run("RELEASE SAVEPOINT job", [], "release savepoint")
                        transaction.savedHead = saved
                        failures.append(error)
                    }
                }
            }
            try transaction.finish()
            committing = true
            try transaction.run("COMMIT", [], "commit")
            return failures
        } catch {
            if !committing { _ = try? connection.query("ROLLBACK", operation: "roll back") }
            throw error
        }
    }

    // MARK: the node's other calls

    func loadSnapshot(expiringLoginSessionsBefore expiredBefore: Date) throws(StoreError) -> StoreSnapshot {
        let location = self.location
        return try perform("load the store") { (connection: PostgresConnection) throws(StoreError) -> StoreSnapshot in
            var transaction = PostgresStoreTransaction(connection, location: location)
            try transaction.run("BEGIN", [], "begin transaction")
            do throws(StoreError) {
                try transaction.apply([.deleteLoginSessionsBefore(expiredBefore)])
                try transaction.run("COMMIT", [], "commit")
                try transaction.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [], "begin transaction")
                var snapshot = StoreSnapshot()
                snapshot.codes = try Self.codes(transaction)
                for row in try transaction.run(
                    "SELECT key, failures, blocked_until, last_failure FROM registration_backoff", [],
                    "read registration back-off"
                ).rows {
                    guard let key = row[0], let failures = row[1].flatMap({ Int($0) }),
                        let last = row[3].flatMap({ Int64($0) })
                    else { throw Self.invalidData("a back-off row lacks a required value", location) }
                    snapshot.backoff.append(
                        BackoffRow(
                            key: key, failures: failures,
                            blockedUntil: row[2].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)),
                            lastFailure: Date(unixMilliseconds: last)))
                }
                for row in try transaction.run(
                    "SELECT \(Self.tokenColumns), digest FROM api_tokens WHERE revoked_at IS NULL ORDER BY created_at, id",
                    [], "read API tokens"
                ).rows {
                    guard let digest = row[5].flatMap(PostgresStoreTransaction.bytes(bytea:)) else {
                        throw Self.invalidData("an API token digest is unreadable", location)
                    }
                    snapshot.activeTokens.append((digest, try Self.tokenRecord(row, location: location)))
                }
                for row in try transaction.run(
                    """
                    SELECT login, display_name, role, state, password_hash, created_at, updated_at
                    FROM supporter_accounts ORDER BY login
                    """, [], "list supporter accounts"
                ).rows {
                    guard let login = row[0], let name = row[1], let role = row[2].flatMap(SupporterRole.init),
                        let accountState = row[3].flatMap(SupporterAccountState.init), let hash = row[4],
                        let created = row[5].flatMap({ Int64($0) }), let updated = row[6].flatMap({ Int64($0) })
                    else { throw Self.invalidData("a supporter account row is unreadable", location) }
                    snapshot.accounts.append(
                        SupporterAccountRecord(
                            login: login, displayName: name, role: role, state: accountState, passwordHash: hash,
                            createdAt: Date(unixMilliseconds: created), updatedAt: Date(unixMilliseconds: updated)))
                }
                for row in try transaction.run(
                    "SELECT digest, id, login, csrf_token, created_at FROM login_sessions ORDER BY created_at", [],
                    "list login sessions"
                ).rows {
                    guard let digest = row[0].flatMap(PostgresStoreTransaction.bytes(bytea:)), let id = row[1],
                        let login = row[2], let csrf = row[3], let created = row[4].flatMap({ Int64($0) })
                    else { throw Self.invalidData("a login session row is unreadable", location) }
                    snapshot.loginSessions.append(
                        LoginSessionRecord(
                            digest: digest, id: id, login: login, csrfToken: csrf,
                            createdAt: Date(unixMilliseconds: created)))
                }
                try transaction.run("COMMIT", [], "commit")
                return snapshot
            } catch {
                _ = try? connection.query("ROLLBACK", operation: "roll back")
                throw error
            }
        }
    }

    private static func codes(_ transaction: PostgresStoreTransaction) throws(StoreError) -> [SessionCodeRecord] {
        let location = transaction.location
        var rules: [String: [Feature.ID: AccessRule]] = [:]
        for row in try transaction.run(
            "SELECT code, feature, rule FROM session_code_feature_rules", [], "read code rules"
        ).rows {
            guard let code = row[0], let feature = row[1].flatMap({ UInt16($0) }),
                let rule = row[2].flatMap({ UInt8($0) }).flatMap(AccessRule.init(rawValue:))
            else { throw invalidData("a code rule row is unreadable", location) }
            rules[code, default: [:]][Feature.ID(rawValue: feature)] = rule
        }
        var records: [SessionCodeRecord] = []
        for row in try transaction.run(
            """
            SELECT code, type, description, customer_name, customer_email, waiting_message, is_closed, created_at,
                valid_until, closed_at, assigned_supporter, default_feature_rule
            FROM session_codes ORDER BY created_at, code
            """, [], "list session codes"
        ).rows {
            guard let code = row[0], let type = row[1].flatMap({ UInt8($0) }).flatMap(SessionCodeType.init(rawValue:)),
                let closed = row[6], let created = row[7].flatMap({ Int64($0) }),
                let validUntil = row[8].flatMap({ Int64($0) }),
                let defaultRule = row[11].flatMap({ UInt8($0) }).flatMap(AccessRule.init(rawValue:))
            else { throw invalidData("a session code row is unreadable", location) }
            var featureRules = FeatureRules(default: defaultRule)
            featureRules.rules = rules[code] ?? [:]
            records.append(
                SessionCodeRecord(
                    code: code, type: type, description: row[2], customerName: row[3], customerEmail: row[4],
                    waitingMessage: row[5], isClosed: closed == "t", createdAt: Date(unixMilliseconds: created),
                    validUntil: Date(unixMilliseconds: validUntil),
                    closedAt: row[9].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)),
                    assignedSupporter: row[10], featureRules: featureRules))
        }
        return records
    }

    func addToken(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date,
        audit: @escaping @Sendable (APITokenRecord) -> AuditEvent
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) {
        let location = self.location
        return try perform("add API token") {
            (connection: PostgresConnection) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) in
            try Self.inTransaction(connection, location) { (transaction: inout PostgresStoreTransaction) throws(StoreError) in
                let added = try transaction.addToken(digest: digest, scope: scope, label: label, createdAt: createdAt)
                if added.isNew { try transaction.append(audit(added.record)) }
                return added
            }
        }
    }

    func revokeToken(id: String, at date: Date, audit: AuditEvent) throws(StoreError) -> Bool {
        let location = self.location
        return try perform("revoke API token") { (connection: PostgresConnection) throws(StoreError) -> Bool in
            try Self.inTransaction(connection, location) { (transaction: inout PostgresStoreTransaction) throws(StoreError) in
                guard try transaction.revokeToken(id: id, at: date) else { return false }
                try transaction.append(audit)
                return true
            }
        }
    }

    /// Runs `body` in one transaction on the engine's thread (the audit head written back before the commit).
    private static func inTransaction<Result>(
        _ connection: PostgresConnection, _ location: String,
        _ body: (inout PostgresStoreTransaction) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        var transaction = PostgresStoreTransaction(connection, location: location)
        try transaction.run("BEGIN", [], "begin transaction")
        do throws(StoreError) {
            let result = try body(&transaction)
            try transaction.finish()
            try transaction.run("COMMIT", [], "commit")
            return result
        } catch {
            _ = try? connection.query("ROLLBACK", operation: "roll back")
            throw error
        }
    }

    static let tokenColumns = "id, scope, label, created_at, revoked_at"

    static func tokenRecord(_ row: [String?], location: String) throws(StoreError) -> APITokenRecord {
        guard let id = row[0], let scope = row[1].flatMap(APITokenScope.init(rawValue:)),
            let created = row[3].flatMap({ Int64($0) })
        else { throw invalidData("an API token row is unreadable", location) }
        return APITokenRecord(
            id: id, scope: scope, label: row[2], createdAt: Date(unixMilliseconds: created),
            revokedAt: row[4].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)))
    }

    func tokens() throws(StoreError) -> [APITokenRecord] {
        let location = self.location
        return try perform("read API tokens") { (connection: PostgresConnection) throws(StoreError) -> [APITokenRecord] in
            let transaction = PostgresStoreTransaction(connection, location: location)
            var records: [APITokenRecord] = []
            for row in try transaction.run(
                "SELECT \(Self.tokenColumns) FROM api_tokens ORDER BY created_at, id", [], "read API tokens"
            ).rows {
                records.append(try Self.tokenRecord(row, location: location))
            }
            return records
        }
    }

    func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var parameters: [String?] = []
        func add(_ condition: String, _ value: String) {
            parameters.append(value)
            conditions.append(condition + " $\(parameters.count)")
        }
        if let code { add("code =", code) }
        if let from { add("time >=", String(from.unixMilliseconds)) }
        if let to { add("time <", String(to.unixMilliseconds)) }
        if let afterID { add("id >", String(afterID)) }
        if let beforeID { add("id <", String(beforeID)) }
        parameters.append(String(max(0, limit)))
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql =
            "SELECT id, time, code, kind, details FROM audit_events \(filter) ORDER BY id\(newestFirst ? " DESC" : "") "
            + "LIMIT $\(parameters.count)"
        let location = self.location
        let bound = parameters
        return try perform("read audit events") { (connection: PostgresConnection) throws(StoreError) -> [AuditEvent] in
            let transaction = PostgresStoreTransaction(connection, location: location)
            var events: [AuditEvent] = []
            for row in try transaction.run(sql, bound, "read audit events").rows {
                guard let id = row[0].flatMap({ Int64($0) }), let time = row[1].flatMap({ Int64($0) }),
                    let kind = row[3]
                else { throw Self.invalidData("an audit event row is unreadable", location) }
                events.append(
                    AuditEvent(
                        id: id, time: Date(unixMilliseconds: time), code: row[2], kind: AuditEvent.Kind(rawValue: kind),
                        details: try SessionStore.details(fromJSON: row[4] ?? "{}")))
            }
            return events
        }
    }

    func latestAuditID() throws(StoreError) -> Int64 {
        let location = self.location
        return try perform("read the newest audit id") { (connection: PostgresConnection) throws(StoreError) -> Int64 in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                "SELECT coalesce(max(id), 0) FROM audit_events", [], "read the newest audit id")
            return rows.rows.first?[0].flatMap { Int64($0) } ?? 0
        }
    }

    /// Walks the whole audit trail with the same ``AuditChainWalker`` as ``SessionStore/verifyAudit()``: every digest
    /// recomputed from the stored bytes, every link and id checked, and the chain's head compared with the last row.
    func verifyAudit() throws(StoreError) -> AuditVerification {
        let location = self.location
        return try perform("verify the audit trail") {
            (connection: PostgresConnection) throws(StoreError) -> AuditVerification in
            let transaction = PostgresStoreTransaction(connection, location: location)
            var walker = AuditChainWalker(after: 0, digest: AuditChain.genesis)
            var after: Int64 = 0
            while true {
                let rows = try transaction.run(
                    "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id > $1 ORDER BY id LIMIT 1000",
                    [String(after)], "read audit events"
                ).rows
                guard !rows.isEmpty else { break }
                for row in rows {
                    let id = row[0].flatMap { Int64($0) } ?? 0
                    walker.visit(
                        AuditChain.Row(
                            id: id, time: row[1].flatMap { Int64($0) } ?? 0, code: row[2].map { Array($0.utf8) },
                            kind: Array((row[3] ?? "").utf8), details: Array((row[4] ?? "").utf8),
                            previous: row[5].flatMap(PostgresStoreTransaction.bytes(bytea:)),
                            digest: row[6].flatMap(PostgresStoreTransaction.bytes(bytea:))))
                    after = id
                }
            }
            return walker.verification(anchor: nil)
        }
    }

    // MARK: errors

    /// A ``PostgresError`` as a ``StoreError`` of the matching kind, keeping it as ``StoreError/underlying``.
    static func storeError(_ error: PostgresError, location: String) -> StoreError {
        let kind: StoreError.Kind
        switch error.sqlState {
        case _ where error.kind == .connection || error.kind == .closed: kind = .unavailable
        case nil, "57P01", "57P02", "57P03": kind = .unavailable
        case let state? where state.hasPrefix("08"): kind = .unavailable
        case "23505": kind = .duplicate
        case let state? where state.hasPrefix("23"): kind = .constraint
        case "40001", "40P01", "55P03": kind = .busy
        case let state? where state.hasPrefix("28") || state == "3D000" || state == "42501": kind = .cantOpen
        default: kind = .postgres
        }
        return StoreError(
            kind: kind, operation: error.operation,
            message: error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? ""), path: location,
            underlying: error)
    }

    /// Whether `error` means the connection broke: libpq's own failures (no SQLSTATE), class 08 (connection
    /// exception) and the server shutting the session down (57P01–57P03).
    static func isConnectionLoss(_ error: StoreError) -> Bool {
        guard let underlying = error.underlying as? PostgresError else { return false }
        if underlying.kind == .connection || underlying.kind == .closed { return true }
        guard let state = underlying.sqlState else { return underlying.kind == .query }
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    }

    static func invalidData(_ message: String, _ location: String) -> StoreError {
        StoreError(kind: .invalidData, operation: "decode", message: message, path: location)
    }
}
