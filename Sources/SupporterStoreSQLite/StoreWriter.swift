package import SupporterStore
import Foundation
import Synchronization
package import SupporterCore
import SupportSession
package import SupportUtilities
import SupportWire

/// The one thread that writes the supporter node's store: a bounded FIFO of jobs (lists of ``StoreIntent``), applied
/// in order, several jobs per transaction (each in its own savepoint). Event loops never wait for SQLite: they submit a
/// job and continue; the job's completion runs on the writer thread after the commit (hop back to a loop from there).
///
/// Deferrable jobs (nothing waits for them but events: the record of a connection that closed) do not wake an idle
/// writer that worked in the last ``deferralLimit``: they ride along in the transaction of the next job that does,
/// or are written when that time is up. A registration cycle then costs one transaction and one wake-up instead of
/// two (its `device_offline` record joins the next `device_online` one).
///
/// Checkpoints: not SQLite's automatic one at commit time, which lands on whichever job's commit crosses 1,000 pages
/// and delays it and every job behind it by its disk flushes (the latency tail of audited events). Instead a
/// ``StoreCheckpointer`` thread copies the WAL into the database on its own connection, at the same time as the writer
/// goes on committing, asked each time ``backgroundCheckpointFrames`` frames are not yet copied. (Asking also whenever
/// the queue stayed empty for 1 ms ran about one checkpoint, two flushes, per request of a lightly loaded node and
/// raised the CPU per registration; checkpointing inside the writer when idle made the tail worse, not better.)
/// The WAL starts over only after a checkpoint that copied all of it while nothing was written, so the writer itself
/// checkpoints between batches once the WAL holds ``walFrameLimit`` frames (by then the checkpointer copied nearly
/// all of it, so this one is short). The checkpointer runs at the lowest CPU priority (``BackgroundThread``): when it
/// is in the middle of a checkpoint, the writer does not wait for it but tries again after the next batch, until the
/// WAL holds twice ``walFrameLimit``. Bound: the WAL holds at most 2 × ``walFrameLimit`` frames plus those of one
/// batch (8,192 pages, about 32 MB, by default), unless another connection keeps reading an old snapshot (then, as with
/// SQLite's own automatic checkpoint, the WAL cannot start over until that read ends); a larger file is cut back to
/// that size when the WAL starts over (`journal_size_limit`). Durability does not change: a job's completion runs
/// after its commit, checkpoint or not.
///
/// Order: jobs are applied and completed in the order they were submitted. A job that fails is undone alone; a
/// transaction that fails as a whole (locked past the busy timeout, disk full) fails every job in it. Full queue: ``submit(_:completion:)`` returns false at once and the job is not taken
/// (the caller refuses the action or stops reading from the connection that caused it); nothing grows without bound.
package final class StoreWriter: Sendable {
    package struct Job: Sendable {
        var intents: [StoreIntent]
        /// Nil after the commit; the error when the job could not be applied (nothing of it is stored).
        var completion: @Sendable (StoreError?) -> Void
    }

    package struct Statistics: Sendable, Hashable {
        var jobsApplied = 0
        var jobsFailed = 0
        var transactions = 0
        var largestBatch = 0
        var refusedWhenFull = 0
        /// Checkpoints the writer ran itself because the WAL reached ``StoreWriter/walFrameLimit``.
        var writerCheckpoints = 0
        /// Checkpoints the ``StoreCheckpointer`` ran.
        var backgroundCheckpoints = 0
        /// Most frames the WAL held after a commit.
        var largestWAL = 0
    }

    private struct State: ~Copyable {
        /// Queued, not yet taken by the writer. The writer takes them all at once by swapping in its own emptied
        /// array (O(1) under the lock, and the array's capacity is reused, so `append` seldom grows it): no copying,
        /// compacting or freeing of jobs ever happens while a loop may be waiting for this lock.
        var jobs: [Job] = []
        /// Taken by the writer and not yet in the batch being applied: still waiting, so counted against
        /// ``StoreWriter/capacity``.
        var taken = 0
        var stopping = false
        /// The writer sleeps with no time limit: a deferrable job must wake it.
        var sleepingUntilWoken = true
        var statistics = Statistics()
        var count: Int { jobs.count + taken }
    }

    /// Most jobs waiting at once.
    package let capacity: Int
    /// Most jobs in one transaction.
    package let maximumBatch: Int
    /// How long a deferrable job may wait for a job that wakes the writer.
    static let deferralLimit = DispatchTimeInterval.milliseconds(5)
    /// WAL frames not yet copied at which the writer asks for a checkpoint.
    package let backgroundCheckpointFrames: Int
    /// WAL frames (pages) at which the writer checkpoints itself between batches, even when jobs wait.
    package let walFrameLimit: Int
    /// False when the store could not take checkpoints over (a `:memory:` store has no WAL): SQLite runs them.
    private let managesCheckpoints: Bool
    /// Copies the WAL on its own connection when asked; nil when it could not open one (then only the writer's own
    /// checkpoints at ``walFrameLimit`` run).
    private let checkpointer: StoreCheckpointer?
    private let store: SessionStore
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    package init(
        store: SessionStore, logger: NodeLogger, capacity: Int = 65_536, maximumBatch: Int = 512,
        backgroundCheckpointFrames: Int = 256, walFrameLimit: Int = 4_096
    ) {
        self.store = store
        self.logger = logger
        self.capacity = max(1, capacity)
        self.maximumBatch = max(1, maximumBatch)
        self.backgroundCheckpointFrames = max(1, backgroundCheckpointFrames)
        self.walFrameLimit = max(1, walFrameLimit)
        let limit = self.walFrameLimit
        do throws(StoreError) {
            managesCheckpoints = try store.database.withConnection {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
                guard store.database.journalMode == "wal" else { return false }
                let pageSize =
                    Int(try connection.pragmaText("PRAGMA page_size", operation: "read page_size") ?? "") ?? 4096
                try connection.manageCheckpoints(journalSizeLimit: limit * (pageSize + 24) + 32)
                return true
            }
        } catch {
            logger.log(.warning, "store: cannot take checkpoints over (\(error)); SQLite runs them at commit time")
            managesCheckpoints = false
        }
        var checkpointer: StoreCheckpointer? = nil
        if managesCheckpoints {
            do throws(StoreError) {
                checkpointer = try StoreCheckpointer(
                    path: store.database.path, durability: store.database.durability, logger: logger)
            } catch {
                logger.log(.warning, "store: no background checkpoints (\(error)); the store writer runs them")
            }
        }
        self.checkpointer = checkpointer
        let thread = Thread { [self] in self.run() }
        thread.name = "rsup-store-writer"
        thread.start()
    }

    /// Queues `intents`; `completion` runs on the writer thread once they are durable (nil) or failed (the error).
    /// Returns false, without queueing or calling `completion`, when the queue is full or the writer stopped.
    ///
    /// `deferrable`: nothing but events waits for this job, so it may wait up to ``deferralLimit`` for a job that
    /// wakes the writer, and share its transaction.
    @discardableResult
    package func submit(
        _ intents: [StoreIntent], deferrable: Bool = false, completion: @escaping @Sendable (StoreError?) -> Void
    ) -> Bool {
        let (accepted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            guard state.count < capacity else {
                state.statistics.refusedWhenFull += 1
                return (false, false)
            }
            state.jobs.append(Job(intents: intents, completion: completion))
            return (true, !deferrable || state.sleepingUntilWoken)
        }
        if wakeWriter { wake.signal() }
        return accepted
    }

    /// Applies `intents` and waits for the commit. Not on an event loop.
    package func write(_ intents: [StoreIntent]) async throws(StoreError) {
        let failure: StoreError?? = await withCheckedContinuation { continuation in
            let queued = submit(intents) { continuation.resume(returning: .some($0)) }
            if !queued { continuation.resume(returning: .none) }
        }
        switch failure {
        case .none:
            throw StoreError(
                kind: .busy, operation: "queue a write",
                message: "the node's store writer is full or stopped; try again", path: store.path)
        case .some(.none): return
        case .some(.some(let error)): throw error
        }
    }

    /// Jobs waiting.
    package var queued: Int { state.withLock { $0.count } }

    package var statistics: Statistics {
        var statistics = state.withLock { $0.statistics }
        statistics.backgroundCheckpoints = checkpointer?.checkpoints ?? 0
        return statistics
    }

    /// Applies what is queued, then stops the thread. Later submissions are refused.
    package func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        finished.wait()
        checkpointer?.stop()
    }

    private func run() {
        // After work, sleep at most `deferralLimit` (a deferrable job queued meanwhile is written then, at the latest);
        // after a sleep that found nothing to do, sleep until woken.
        var recentlyActive = false
        // The writer's side of the queue: swapped with `State.jobs`, drained, emptied (keeping its capacity).
        var taken: [Job] = []
        while true {
            if recentlyActive {
                _ = wake.wait(timeout: .now() + Self.deferralLimit)
            } else {
                wake.wait()
            }
            recentlyActive = false
            while true {
                let stopping = state.withLock { state -> Bool in
                    swap(&state.jobs, &taken)
                    state.taken = taken.count
                    // Decided under the lock, so that a deferrable job queued after this sees how the writer sleeps.
                    state.sleepingUntilWoken = taken.isEmpty && !recentlyActive
                    return state.stopping
                }
                if taken.isEmpty {
                    if stopping {
                        finished.signal()
                        return
                    }
                    break
                }
                var start = taken.startIndex
                while start < taken.endIndex {
                    let end = min(taken.endIndex, start + maximumBatch)
                    // The batch being applied no longer counts as waiting (as before the swap).
                    state.withLock { $0.taken -= end - start }
                    apply(taken[start..<end])
                    start = end
                }
                // The jobs (their intents and completions) are freed here, outside the lock.
                taken.removeAll(keepingCapacity: true)
                recentlyActive = true
            }
        }
    }

    /// WAL frames after the last commit, and how many of them no checkpoint copied yet (as far as the writer knows).
    private func walFrames() -> (frames: Int, uncopied: Int) {
        guard managesCheckpoints else { return (0, 0) }
        let progress = (try? store.database.withConnection { $0.walProgress }) ?? .init()
        guard progress.commitsSinceCheckpoint > 0 else { return (progress.frames, 0) }
        let backfilled = checkpointer?.backfilled ?? 0
        // Fewer frames than were copied: the WAL started over since.
        return (progress.frames, progress.frames >= backfilled ? progress.frames - backfilled : progress.frames)
    }

    /// Checkpoints on the writer's connection when the WAL holds ``walFrameLimit`` frames or more. With no other
    /// connection reading, the WAL then starts over at the next commit.
    private func checkpointAtLimit() {
        let ran: Bool
        do throws(StoreError) {
            ran = try store.database.withConnection {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
                let progress = connection.walProgress
                guard progress.commitsSinceCheckpoint > 0, progress.frames >= walFrameLimit else { return false }
                var result = try connection.checkpoint(.passive)
                if result.frames < 0, let checkpointer {
                    // SQLITE_BUSY: the checkpointer is copying. It runs at the lowest priority, so waiting for it
                    // could hold every acknowledgement behind a starved thread: try again after the next batch, and
                    // wait only once the WAL reaches twice the limit (the bound on its size).
                    guard progress.frames >= 2 * walFrameLimit else { return false }
                    checkpointer.waitForRunningCheckpoint()
                    result = try connection.checkpoint(.passive)
                }
                if result.frames >= 0 { checkpointer?.note(backfilled: result.checkpointed) }
                return result.frames >= 0
            }
        } catch {
            logger.log(
                .warning, "store: checkpoint failed: \(error); the WAL keeps the data and grows until one succeeds")
            return
        }
        guard ran else { return }
        state.withLock { $0.statistics.writerCheckpoints += 1 }
    }

    private func apply(_ batch: ArraySlice<Job>) {
        // One transaction for the batch, each job in its own savepoint: a bad job fails alone. A batch of one (the
        // usual case when the node is not busy) needs no savepoint: its transaction is undone alone already.
        var failures: [StoreError?]
        do throws(StoreError) {
            if batch.count == 1 {
                try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                    try transaction.apply(batch[batch.startIndex].intents)
                }
                failures = [nil]
            } else {
                let results = try store.write(each: Array(batch)) {
                    (transaction: inout StoreTransaction, job: Job) throws(StoreError) in
                    try transaction.apply(job.intents)
                }
                failures = results.map { result in
                    if case .failure(let error) = result { return error }
                    return nil
                }
            }
        } catch {
            failures = Array(repeating: error, count: batch.count)
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
        let (walFrames, uncopied) = walFrames()
        if walFrames >= walFrameLimit {
            checkpointAtLimit()
        } else if let checkpointer, uncopied >= backgroundCheckpointFrames {
            checkpointer.request()
        }
        state.withLock { state in
            state.statistics.largestWAL = max(state.statistics.largestWAL, walFrames)
            state.statistics.jobsApplied += batch.count - failed
            state.statistics.jobsFailed += failed
            state.statistics.transactions += 1
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
        }
    }
}

extension StoreTransaction {
    /// Applies `intents` in order.
    package mutating func apply(_ intents: [StoreIntent]) throws(StoreError) {
        for intent in intents {
            switch intent {
            case .insertCode(let record): try insert(record)
            case .updateCode(let record): try update(record)
            case .deleteCode(let code): _ = try delete(code: code)
            case .audit(let event): _ = try append(event)
            case .saveBackoff(let row):
                try saveBackoff(
                    key: row.key, failures: row.failures, blockedUntil: row.blockedUntil, lastFailure: row.lastFailure)
            case .deleteBackoff(let key): try deleteBackoff(key: key)
            case .saveAccount(let record): try saveAccount(record)
            case .saveLoginSession(let record): try saveLoginSession(record)
            case .deleteLoginSession(let digest): try deleteLoginSessions("digest = ?", .blob(digest))
            case .deleteLoginSessions(let login): try deleteLoginSessions("login = ?", .text(login))
            case .deleteLoginSessionsBefore(let date): try deleteLoginSessions("created_at < ?", .integer(date.unixMilliseconds))
            case .claimPresence, .presenceState, .resumeState, .releasePresence: break  // one node: its registry is the only holder of a code
            }
        }
    }
}
