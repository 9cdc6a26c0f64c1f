public import SupporterStore
import Foundation
import Synchronization
import SupportPostgres
public import SupporterCore
public import SupportUtilities
public import SupportMetrics
import SupportWire

/// The PostgreSQL store: one ``PostgresConnection`` (libpq blocks, so never an event loop) owned by the thread of the
/// one writer queue every engine runs on (``StoreWriteQueue``), which works through a bounded FIFO of jobs.
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
/// Conflicts: a batch whose transaction the server aborted with a serialization failure (SQLSTATE 40001) or as a
/// deadlock's victim (40P01) — another node or a person's session holding rows it needs — is rolled back as a whole
/// and run again, up to ``conflictRetries`` times after a short random pause, before its jobs fail with
/// ``StoreError/Kind/busy``. Nothing of an aborted attempt is stored, and completions run once, after the attempt that
/// committed (or the last one), in submission order.
///
/// Several nodes may share the database: the audit chain's head is a locked row (see ``PostgresStoreTransaction``).
public final class PostgresStoreEngine: StoreEngine {
    /// Most intent jobs waiting at once.
    var capacity: Int { queue.capacity }
    /// Most jobs in one transaction.
    var maximumBatch: Int { queue.maximumBatch }
    /// How many times a batch aborted by a serialization failure or a deadlock is run again.
    static let conflictRetries = 3
    /// The server, without a password.
    public let location: String
    /// This node among several sharing the database (presence leases renewed, changes announced), or nil alone.
    let member: ClusterMember?
    fileprivate let writer: PostgresBatchWriter
    /// The one writer queue every engine runs on; the reads and one-off transactions are calls on it too.
    private let queue: StoreWriteQueue

    /// Connects, creates or migrates the schema (one transaction), and starts the engine's thread. Throws
    /// ``StoreError/Kind/unavailable`` when the server cannot be reached (libpq's reason in the message).
    ///
    /// `migrating` false (tools that only read a node's store): nothing is created or changed, and a database without
    /// the store's tables, or with another schema version, is refused (see ``PostgresStoreSchema/check(_:location:)``).
    public init(
        connectionString: String, logger: NodeLogger, capacity: Int = 65_536, maximumBatch: Int = 256,
        migrating: Bool = true, member: ClusterMember? = nil
    ) throws(StoreError) {
        location = "PostgreSQL " + StoreBackend.redacted(connectionString)
        self.member = member
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(connectionString)
        } catch {
            throw Self.storeError(error, location: location)
        }
        if migrating {
            try PostgresStoreSchema.migrate(connection, location: location)
        } else {
            try PostgresStoreSchema.check(connection, location: location)
        }
        writer = PostgresBatchWriter(connection: connection, location: location, member: member, logger: logger)
        queue = StoreWriteQueue(
            threadName: "rsup-store-postgres", location: location, worker: writer, logger: logger,
            capacity: capacity, maximumBatch: maximumBatch)
    }

    // MARK: the queue

    @discardableResult
    public func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
        -> Bool
    {
        queue.submit(intents, deferrable: deferrable, completion: completion)
    }

    public func write(_ intents: [StoreIntent]) async throws(StoreError) { try await queue.write(intents) }

    /// Runs `body` on the engine's thread and waits for it (the reads in PostgresStoreEngine+Reads.swift).
    func perform<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        let outcome = Mutex<Swift.Result<Result, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        try enqueue(operation, body) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()  // safe: set before `done` is signalled
    }

    /// Runs `body` on the engine's thread; the caller waits without holding a thread.
    func perform<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        let result: Swift.Result<Result, StoreError> = await withCheckedContinuation { continuation in
            do throws(StoreError) {
                try enqueue(operation, body) { continuation.resume(returning: $0) }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    private func enqueue<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) throws(StoreError) -> Result,
        completion: @escaping @Sendable (Swift.Result<Result, StoreError>) -> Void
    ) throws(StoreError) {
        let writer = self.writer
        let queued = queue.call { completion(writer.run(body)) }
        guard queued else {
            throw StoreError(kind: .busy, operation: operation, message: "the store has stopped", path: location)
        }
    }

    public var commitLatency: MetricHistogram { queue.commitLatency }

    /// What the cluster bus on this engine counts (its lease renewals here; the rest in ``ClusterPeers``).
    public var clusterMetrics: ClusterMetrics { writer.clusterMetrics }

    public var statistics: StoreStatistics {
        var statistics = queue.statistics
        statistics.conflictRetries = writer.conflictRetries
        return statistics
    }

    public func stop() { queue.stop() }

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

    /// Whether the server aborted the transaction as a serialization failure (40001) or a deadlock's victim (40P01):
    /// nothing of it is stored, and running it again may succeed.
    static func isConflict(_ error: StoreError) -> Bool {
        (error.underlying as? PostgresError)?.isRetryable == true
    }

    static func invalidData(_ message: String, _ location: String) -> StoreError {
        StoreError(kind: .invalidData, operation: "decode", message: message, path: location)
    }
}

extension PostgresStoreEngine {
    /// From now on presence renewal renews only the codes `watch` names as held (``PresenceWatch``).
    public func watchPresence(_ watch: PresenceWatch) { writer.watch.withLock { $0 = watch } }
}

/// PostgreSQL's side of the writer queue: the one connection (libpq blocks, so never an event loop), one
/// transaction per batch with its retries, the presence leases, and the calls run on the connection. Used only on
/// the queue's thread, except `conflictRetries` (under its lock) and the `let`s.
private final class PostgresBatchWriter: StoreQueueWorker, @unchecked Sendable {
    // @unchecked: `connection` and `connectionLost` are touched only on the queue's one thread (every method but
    // `conflictRetries` is called there, by the queue or by a call it runs); the rest are `let`s of Sendable types.
    let connection: PostgresConnection
    let location: String
    let member: ClusterMember?
    let logger: NodeLogger
    /// Set when a statement found the connection broken, even if libpq still calls it open.
    private var connectionLost = false
    private let conflictCount = Mutex(0)
    /// What the node holds, for renewal; nil until the node sets it (then every row of the node is renewed).
    let watch = Mutex<PresenceWatch?>(nil)
    /// Lease renewals and rows held, counted here; the cluster bus counts the rest.
    let clusterMetrics = ClusterMetrics()

    init(connection: PostgresConnection, location: String, member: ClusterMember?, logger: NodeLogger) {
        self.connection = connection
        self.location = location
        self.member = member
        self.logger = logger
    }

    /// Transactions run again after a serialization failure or a deadlock.
    var conflictRetries: Int { conflictCount.withLock { $0 } }

    /// Leases are renewed a third of a lease apart, between batches too: never behind a long queue by more than one
    /// batch, and a queue that never empties (a reconnect storm) does not starve them.
    var housekeepingInterval: Duration? { member.map { .milliseconds(Int64($0.leaseMilliseconds / 3)) } }

    func housekeep() {
        if let member { renewPresence(member) }
    }

    /// A clean stop: this node's codes are free at once, not after the lease.
    func finish() {
        if let member, reconnectIfNeeded() {
            _ = try? connection.query(
                // Rows handed over by a drain are lapsed already and keep their resume records.
                "UPDATE device_presence SET lease_until = 0, resume = NULL, state = 'online' WHERE node_id = $1 AND lease_until > 0",
                [member.nodeID], operation: "release device presence")
        }
        connection.close()
    }

    /// Runs one call on the connection (reconnecting first when it broke), noting a connection it found lost.
    func run<Result: Sendable>(_ body: (PostgresConnection) throws(StoreError) -> Result) -> Swift.Result<
        Result, StoreError
    > {
        reconnectIfNeeded()
        do throws(StoreError) {
            return .success(try body(connection))
        } catch {
            if PostgresStoreEngine.isConnectionLoss(error) { connectionLost = true }
            return .failure(error)
        }
    }

    /// Opens the connection again when it broke; false when the server is still unreachable.
    @discardableResult
    private func reconnectIfNeeded() -> Bool {
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

    /// Extends the leases of the codes this node holds (one statement, the codes as one array parameter), frees its
    /// other rows, and tells the node which of its committed codes another node claimed meanwhile (fencing).
    private func renewPresence(_ member: ClusterMember) {
        guard reconnectIfNeeded() else {
            clusterMetrics.leaseRenewalFailures.increment()
            return
        }
        let watch = self.watch.withLock { $0 }
        do throws(PostgresError) {
            if let watch {
                let held = watch.held()
                let codes = PostgresArray.text(held.all.sorted())
                let renewed = try connection.query(
                    """
                    UPDATE device_presence SET lease_until = rsup_now_ms() + $2
                    WHERE node_id = $1 AND code = ANY($3::text[]) RETURNING code
                    """, [member.nodeID, String(member.leaseMilliseconds), codes], operation: "renew device presence")
                // Rows of codes this node no longer serves: a release that failed while the database was away, or a
                // device that left meanwhile. Left alone, they would keep the code from every other node.
                try connection.query(
                    """
                    UPDATE device_presence SET lease_until = 0, resume = NULL, state = 'online'
                    WHERE node_id = $1 AND lease_until > 0 AND NOT (code = ANY($2::text[]))
                    """, [member.nodeID, codes], operation: "free device presence no longer held")
                let still = Set(renewed.rows.compactMap { $0[0] })
                clusterMetrics.presenceRowsHeld = still.count
                let lost = held.committed.subtracting(still)
                if !lost.isEmpty { watch.lost(lost.sorted()) }
            } else {
                try connection.query(
                    "UPDATE device_presence SET lease_until = rsup_now_ms() + $2 WHERE node_id = $1",
                    [member.nodeID, String(member.leaseMilliseconds)], operation: "renew device presence")
            }
            // Routed commands are answered within seconds or never: keep the table small.
            try connection.query(
                "DELETE FROM node_commands WHERE created_at < rsup_now_ms() - 60000", operation: "forget old commands")
            clusterMetrics.leaseRenewals.increment()
        } catch {
            clusterMetrics.leaseRenewalFailures.increment()
            if PostgresStoreEngine.isConnectionLoss(PostgresStoreEngine.storeError(error, location: location)) {
                connectionLost = true
            }
            logger.log(
                .warning,
                "store: cannot renew this node's device presence (\(error)); other nodes may take its codes once the "
                    + "lease of \(member.presenceLease) runs out")
        }
    }

    func afterBatch() {}

    func apply(_ batch: [[StoreIntent]]) -> [StoreError?] {
        var reconnected = false
        var conflicts = 0
        while true {
            var committing = false
            do throws(StoreError) {
                guard reconnectIfNeeded() else {
                    throw StoreError(
                        kind: .unavailable, operation: "reconnect",
                        message: "the PostgreSQL server cannot be reached; nothing was written", path: location)
                }
                return try applyOnce(batch, committing: &committing)
            } catch {
                let lost = PostgresStoreEngine.isConnectionLoss(error)
                if lost { connectionLost = true }
                if lost, !committing, !reconnected, reconnectIfNeeded() {
                    reconnected = true
                    continue
                }
                // The server rolled the whole transaction back (a failed COMMIT included): running it again is safe.
                if PostgresStoreEngine.isConflict(error), conflicts < PostgresStoreEngine.conflictRetries {
                    conflicts += 1
                    conflictCount.withLock { $0 += 1 }
                    logger.log(
                        .warning,
                        "store: a transaction of \(batch.count) job(s) was aborted (\(error.message)); running it again "
                            + "(\(conflicts) of \(PostgresStoreEngine.conflictRetries))")
                    // 5–15 ms, then 10–30 ms, then 15–45 ms: the other transaction finishes, and two nodes that
                    // collided do not collide again in step.
                    Thread.sleep(forTimeInterval: Double(conflicts) * Double.random(in: 0.005...0.015))
                    continue
                }
                return Array(repeating: error, count: batch.count)
            }
        }
    }

    /// One transaction for the batch; returns each job's failure (nil when it is in the commit). Throws when the
    /// transaction failed as a whole.
    private func applyOnce(_ batch: [[StoreIntent]], committing: inout Bool) throws(StoreError) -> [StoreError?] {
        var transaction = PostgresStoreTransaction(connection, location: location, member: member)
        try transaction.run("BEGIN", [], "begin transaction")
        do throws(StoreError) {
            var failures: [StoreError?] = []
            if batch.count == 1 {
                try transaction.apply(batch[0])
                failures = [nil]
            } else {
                for intents in batch {
                    try transaction.run("SAVEPOINT job", [], "savepoint")
                    let saved = transaction.savedHead
                    do throws(StoreError) {
                        try transaction.apply(intents)
                        try transaction.run("RELEASE SAVEPOINT job", [], "release savepoint")
                        failures.append(nil)
                    } catch {
                        // A lost connection or a conflict ends the whole transaction: every job is run again.
                        if PostgresStoreEngine.isConnectionLoss(error) || PostgresStoreEngine.isConflict(error) {
                            throw error
                        }
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
}
