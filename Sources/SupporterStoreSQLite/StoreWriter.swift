package import SupporterStore
import Foundation
import Synchronization
package import SupporterCore
import SupportSession
package import SupportUtilities
package import SupportMetrics
import SupportWire

/// The SQLite engine's writer: the one ``StoreWriteQueue`` every engine runs on, with SQLite's batch writer as its
/// worker. Jobs (lists of ``StoreIntent``) are applied in order, several per transaction (each in its own savepoint);
/// event loops never wait for SQLite, and a job's completion runs on the writer thread after the commit.
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
/// transaction that fails as a whole (locked past the busy timeout, disk full) fails every job in it. Full queue:
/// ``submit(_:deferrable:completion:)`` returns false at once and the job is not taken (the caller refuses the action
/// or stops reading from the connection that caused it); nothing grows without bound.
package final class StoreWriter: Sendable {
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

    /// Most jobs waiting at once.
    package var capacity: Int { queue.capacity }
    /// Most jobs in one transaction.
    package var maximumBatch: Int { queue.maximumBatch }
    /// How long a deferrable job may wait for a job that wakes the writer.
    static let deferralLimit = Duration.milliseconds(5)
    /// WAL frames not yet copied at which the writer asks for a checkpoint.
    package var backgroundCheckpointFrames: Int { worker.backgroundCheckpointFrames }
    /// WAL frames (pages) at which the writer checkpoints itself between batches, even when jobs wait.
    package var walFrameLimit: Int { worker.walFrameLimit }
    private let worker: SQLiteBatchWriter
    private let queue: StoreWriteQueue

    package init(
        store: SessionStore, logger: NodeLogger, capacity: Int = 65_536, maximumBatch: Int = 512,
        backgroundCheckpointFrames: Int = 256, walFrameLimit: Int = 4_096
    ) {
        worker = SQLiteBatchWriter(
            store: store, logger: logger, backgroundCheckpointFrames: backgroundCheckpointFrames,
            walFrameLimit: walFrameLimit)
        queue = StoreWriteQueue(
            threadName: "rsup-store-writer", location: store.path, worker: worker, logger: logger,
            capacity: capacity, maximumBatch: maximumBatch, deferralLimit: Self.deferralLimit)
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
        queue.submit(intents, deferrable: deferrable, completion: completion)
    }

    /// Applies `intents` and waits for the commit. Not on an event loop.
    package func write(_ intents: [StoreIntent]) async throws(StoreError) { try await queue.write(intents) }

    /// Jobs waiting.
    package var queued: Int { queue.queued }

    /// How long its transactions took.
    package var commitLatency: MetricHistogram { queue.commitLatency }

    package var statistics: Statistics {
        let counts = queue.statistics
        let checkpoints = worker.checkpointStatistics
        return Statistics(
            jobsApplied: counts.jobsApplied, jobsFailed: counts.jobsFailed, transactions: counts.transactions,
            largestBatch: counts.largestBatch, refusedWhenFull: counts.refusedWhenFull,
            writerCheckpoints: checkpoints.writer, backgroundCheckpoints: checkpoints.background,
            largestWAL: checkpoints.largestWAL)
    }

    /// Applies what is queued, then stops the thread (and the checkpointer). Later submissions are refused.
    package func stop() { queue.stop() }
}

/// SQLite's side of the writer queue: one transaction per batch, then the checkpoint the WAL's size asks for.
/// Used only on the queue's thread, except the counters (under their lock) and the `let`s.
private final class SQLiteBatchWriter: StoreQueueWorker, @unchecked Sendable {
    // @unchecked: `store`, `logger`, the limits, `managesCheckpoints` and `checkpointer` are `let`s of Sendable
    // types; the counters are in a Mutex; everything else runs on the queue's one thread.
    let backgroundCheckpointFrames: Int
    let walFrameLimit: Int
    /// False when the store could not take checkpoints over (a `:memory:` store has no WAL): SQLite runs them.
    private let managesCheckpoints: Bool
    /// Copies the WAL on its own connection when asked; nil when it could not open one (then only the writer's own
    /// checkpoints at ``walFrameLimit`` run).
    private let checkpointer: StoreCheckpointer?
    private let store: SessionStore
    private let logger: NodeLogger
    private let counters = Mutex((writer: 0, largestWAL: 0))

    var housekeepingInterval: Duration? { nil }

    init(store: SessionStore, logger: NodeLogger, backgroundCheckpointFrames: Int, walFrameLimit: Int) {
        self.store = store
        self.logger = logger
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
    }

    var checkpointStatistics: (writer: Int, background: Int, largestWAL: Int) {
        let (writer, largestWAL) = counters.withLock { ($0.writer, $0.largestWAL) }
        return (writer, checkpointer?.checkpoints ?? 0, largestWAL)
    }

    func housekeep() {}

    func finish() { checkpointer?.stop() }

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
        counters.withLock { $0.writer += 1 }
    }

    func apply(_ batch: [[StoreIntent]]) -> [StoreError?] {
        // One transaction for the batch, each job in its own savepoint: a bad job fails alone. A batch of one (the
        // usual case when the node is not busy) needs no savepoint: its transaction is undone alone already.
        do throws(StoreError) {
            if batch.count == 1 {
                try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                    try transaction.apply(batch[0])
                }
                return [nil]
            }
            let results = try store.write(each: batch) {
                (transaction: inout StoreTransaction, intents: [StoreIntent]) throws(StoreError) in
                try transaction.apply(intents)
            }
            return results.map { result in
                if case .failure(let error) = result { return error }
                return nil
            }
        } catch {
            return Array(repeating: error, count: batch.count)
        }
    }

    /// After the batch's completions ran, so that no acknowledgement waits for a checkpoint.
    func afterBatch() {
        let (walFrames, uncopied) = walFrames()
        if walFrames >= walFrameLimit {
            checkpointAtLimit()
        } else if let checkpointer, uncopied >= backgroundCheckpointFrames {
            checkpointer.request()
        }
        counters.withLock { $0.largestWAL = max($0.largestWAL, walFrames) }
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
            case .auditWithContent(let event, let content): try insertContent(content, auditID: try append(event))
            case .pruneContents(let before, let keepingBytes): try pruneContents(before: before, keepingBytes: keepingBytes)
            case .saveBackoff(let row):
                try saveBackoff(
                    key: row.key, failures: row.failures, blockedUntil: row.blockedUntil, lastFailure: row.lastFailure)
            case .deleteBackoff(let key): try deleteBackoff(key: key)
            case .saveAccount(let record): try saveAccount(record)
            case .saveLoginSession(let record): try saveLoginSession(record)
            case .deleteLoginSession(let digest): try deleteLoginSessions("digest = ?", .blob(digest))
            case .deleteLoginSessions(let login): try deleteLoginSessions("login = ?", .text(login))
            case .deleteLoginSessionsBefore(let date): try deleteLoginSessions("created_at < ?", .integer(date.unixMilliseconds))
            // One node: its registry is the only holder of a code, so presence is not stored; the resume record
            // is, for the node's next process (``UnresumedSession``). A claim or a release ends the previous one.
            case .resumeState(let code, let state): try saveResumeRecord(code: code, state: state)
            case .claimPresence(let code, _), .releasePresence(let code): try deleteResumeRecord(code: code)
            case .presenceState, .requirePresence, .handOverPresence: break
            }
        }
    }
}
