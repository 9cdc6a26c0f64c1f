public import SupporterStore
import Foundation
import Synchronization
import SupportPostgres
public import SupporterCore
public import SupportUtilities
import SupportWire

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
/// Conflicts: a batch whose transaction the server aborted with a serialization failure (SQLSTATE 40001) or as a
/// deadlock's victim (40P01) — another node or a person's session holding rows it needs — is rolled back as a whole
/// and run again, up to ``conflictRetries`` times after a short random pause, before its jobs fail with
/// ``StoreError/Kind/busy``. Nothing of an aborted attempt is stored, and completions run once, after the attempt that
/// committed (or the last one), in submission order.
///
/// Several nodes may share the database: the audit chain's head is a locked row (see ``PostgresStoreTransaction``).
public final class PostgresStoreEngine: StoreEngine {
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
        /// Queued and not yet taken by the engine's thread, which takes all of it at once.
        var work: [Work] = []
        /// Jobs queued or taken and not yet in a batch: what ``capacity`` bounds.
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
    /// How many times a batch aborted by a serialization failure or a deadlock is run again.
    static let conflictRetries = 3
    /// The server, without a password.
    public let location: String
    /// This node among several sharing the database (presence leases renewed, changes announced), or nil alone.
    let member: ClusterMember?
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

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
        self.logger = logger
        self.member = member
        self.capacity = max(1, capacity)
        self.maximumBatch = max(1, maximumBatch)
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
        let owner = Owner(connection)
        let thread = Thread { [self] in self.run(owner.connection) }
        thread.name = "rsup-store-postgres"
        thread.start()
    }

    // MARK: the queue

    @discardableResult
    public func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
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

    public func write(_ intents: [StoreIntent]) async throws(StoreError) {
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
                    completion(result)
                    if case .failure(let error) = result { return Self.isConnectionLoss(error) }
                    return false
                })
            return true
        }
        guard queued else {
            throw StoreError(kind: .busy, operation: operation, message: "the store has stopped", path: location)
        }
        wake.signal()
    }

    public var statistics: StoreStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.queued = state.jobsWaiting
            return statistics
        }
    }

    public func stop() {
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
        var nextRenewal = DispatchTime.now()
        // The engine's side of the queue: swapped with `State.work` when drained; `next` is the first not yet run.
        var pending: [Work] = []
        var next = 0
        var stopping = false
        while true {
            if let member {
                // Leases are renewed between batches, a third of a lease apart: never behind a long queue by more
                // than one batch.
                if DispatchTime.now() >= nextRenewal {
                    renewPresence(member, connection)
                    nextRenewal = DispatchTime.now() + .milliseconds(Int(member.leaseMilliseconds / 3))
                }
                _ = wake.wait(timeout: nextRenewal)
            } else {
                wake.wait()
            }
            while true {
                if let member, DispatchTime.now() >= nextRenewal {
                    // Between batches too: a queue that never empties (a reconnect storm) must not starve the leases.
                    renewPresence(member, connection)
                    nextRenewal = DispatchTime.now() + .milliseconds(Int(member.leaseMilliseconds / 3))
                }
                if next == pending.count {
                    // Everything taken is done: take the whole queue (O(1) under the lock; the drained array's
                    // capacity goes back for reuse, and its items are freed here, outside the lock).
                    pending.removeAll(keepingCapacity: true)
                    next = 0
                    stopping = state.withLock { state -> Bool in
                        swap(&state.work, &pending)
                        return state.stopping
                    }
                }
                if next == pending.count {
                    if stopping {
                        if let member { releaseAllPresence(member, connection) }
                        connection.close()
                        finished.signal()
                        return
                    }
                    break
                }
                if case .call(let body) = pending[next] {
                    next += 1
                    reconnectIfNeeded(connection)
                    if body(connection) { connectionLost = true }
                    continue
                }
                var batch: [Job] = []
                while next < pending.count, batch.count < maximumBatch, case .job(let job) = pending[next] {
                    batch.append(job)
                    next += 1
                }
                state.withLock { $0.jobsWaiting -= batch.count }
                apply(batch, connection)
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

    // MARK: presence

    /// Extends every lease this node holds, in one statement (O(nodes) for the database, not O(devices)).
    private func renewPresence(_ member: ClusterMember, _ connection: PostgresConnection) {
        guard reconnectIfNeeded(connection) else { return }
        do {
            try connection.query(
                "UPDATE device_presence SET lease_until = rsup_now_ms() + $2 WHERE node_id = $1",
                [member.nodeID, String(member.leaseMilliseconds)], operation: "renew device presence")
            // Routed commands are answered within seconds or never: keep the table small.
            try connection.query(
                "DELETE FROM node_commands WHERE created_at < rsup_now_ms() - 60000", operation: "forget old commands")
        } catch {
            if Self.isConnectionLoss(Self.storeError(error, location: location)) { connectionLost = true }
            logger.log(
                .warning,
                "store: cannot renew this node's device presence (\(error)); other nodes may take its codes once the "
                    + "lease of \(member.presenceLease) runs out")
        }
    }

    /// A clean stop: this node's codes are free at once, not after the lease.
    private func releaseAllPresence(_ member: ClusterMember, _ connection: PostgresConnection) {
        guard reconnectIfNeeded(connection) else { return }
        _ = try? connection.query(
            "DELETE FROM device_presence WHERE node_id = $1", [member.nodeID], operation: "release device presence")
    }

    // MARK: writing

    private func apply(_ batch: [Job], _ connection: PostgresConnection) {
        var failures: [StoreError?] = []
        var reconnected = false
        var conflicts = 0
        while true {
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
                if lost, !committing, !reconnected, reconnectIfNeeded(connection) {
                    reconnected = true
                    continue
                }
                // The server rolled the whole transaction back (a failed COMMIT included): running it again is safe.
                if Self.isConflict(error), conflicts < Self.conflictRetries {
                    conflicts += 1
                    state.withLock { $0.statistics.conflictRetries += 1 }
                    logger.log(
                        .warning,
                        "store: a transaction of \(batch.count) job(s) was aborted (\(error.message)); running it again "
                            + "(\(conflicts) of \(Self.conflictRetries))")
                    // 5–15 ms, then 10–30 ms, then 15–45 ms: the other transaction finishes, and two nodes that
                    // collided do not collide again in step.
                    Thread.sleep(forTimeInterval: Double(conflicts) * Double.random(in: 0.005...0.015))
                    continue
                }
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
        var transaction = PostgresStoreTransaction(connection, location: location, member: member)
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
                        // A lost connection or a conflict ends the whole transaction: every job is run again.
                        if Self.isConnectionLoss(error) || Self.isConflict(error) { throw error }
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
