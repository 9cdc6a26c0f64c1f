import Foundation
import Synchronization
import SupportRegistry
import SupportSession

/// The one thread that writes the supporter node's store: a bounded FIFO of jobs (lists of ``StoreIntent``), applied
/// in order, several jobs per transaction (each in its own savepoint). Event loops never wait for SQLite: they submit a
/// job and continue; the job's completion runs on the writer thread after the commit (hop back to a loop from there).
///
/// Deferrable jobs (nothing waits for them but events: the record of a connection that closed) do not wake an idle
/// writer that worked in the last ``deferralLimit``: they ride along in the transaction of the next job that does,
/// or are written when that time is up. A registration cycle then costs one transaction and one wake-up instead of
/// two (its `device_offline` record joins the next `device_online` one).
///
/// Order: jobs are applied and completed in the order they were submitted. A job that fails is undone alone; a
/// transaction that fails as a whole (locked past the busy timeout, disk full) fails every job in it. Full queue: ``submit(_:completion:)`` returns false at once and the job is not taken
/// (the caller refuses the action or stops reading from the connection that caused it); nothing grows without bound.
final class StoreWriter: Sendable {
    struct Job: Sendable {
        var intents: [StoreIntent]
        /// Nil after the commit; the error when the job could not be applied (nothing of it is stored).
        var completion: @Sendable (StoreError?) -> Void
    }

    struct Statistics: Sendable, Hashable {
        var jobsApplied = 0
        var jobsFailed = 0
        var transactions = 0
        var largestBatch = 0
        var refusedWhenFull = 0
    }

    private struct State: ~Copyable {
        var jobs: [Job] = []
        var head = 0
        var stopping = false
        /// The writer sleeps with no time limit: a deferrable job must wake it.
        var sleepingUntilWoken = true
        var statistics = Statistics()
        var count: Int { jobs.count - head }
    }

    /// Most jobs waiting at once.
    let capacity: Int
    /// Most jobs in one transaction.
    let maximumBatch: Int
    /// How long a deferrable job may wait for a job that wakes the writer.
    static let deferralLimit = DispatchTimeInterval.milliseconds(5)
    private let store: SessionStore
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(store: SessionStore, logger: NodeLogger, capacity: Int = 65_536, maximumBatch: Int = 512) {
        self.store = store
        self.logger = logger
        self.capacity = max(1, capacity)
        self.maximumBatch = max(1, maximumBatch)
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
    func submit(
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
    func write(_ intents: [StoreIntent]) async throws(StoreError) {
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
    var queued: Int { state.withLock { $0.count } }

    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Applies what is queued, then stops the thread. Later submissions are refused.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        // After work, sleep at most `deferralLimit` (a deferrable job queued meanwhile is written then, at the latest);
        // after a sleep that found nothing to do, sleep until woken.
        var recentlyActive = false
        while true {
            if recentlyActive {
                _ = wake.wait(timeout: .now() + Self.deferralLimit)
            } else {
                wake.wait()
            }
            recentlyActive = false
            while true {
                let (batch, stopping) = state.withLock { state -> ([Job], Bool) in
                    let end = min(state.jobs.count, state.head + maximumBatch)
                    let batch = Array(state.jobs[state.head..<end])
                    state.head = end
                    if state.head > 4096, state.head * 2 > state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                    // Decided under the lock, so that a deferrable job queued after this sees how the writer sleeps.
                    state.sleepingUntilWoken = batch.isEmpty && !recentlyActive
                    return (batch, state.stopping)
                }
                if batch.isEmpty {
                    if stopping {
                        finished.signal()
                        return
                    }
                    break
                }
                apply(batch)
                recentlyActive = true
            }
        }
    }

    private func apply(_ batch: [Job]) {
        // One transaction for the batch, each job in its own savepoint: a bad job fails alone. A batch of one (the
        // usual case when the node is not busy) needs no savepoint: its transaction is undone alone already.
        var failures: [StoreError?]
        do throws(StoreError) {
            if batch.count == 1 {
                try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                    try transaction.apply(batch[0].intents)
                }
                failures = [nil]
            } else {
                let results = try store.write(each: batch) {
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
        state.withLock { state in
            state.statistics.jobsApplied += batch.count - failed
            state.statistics.jobsFailed += failed
            state.statistics.transactions += 1
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
        }
    }
}

extension StoreIntent {
    /// A short name for logs.
    var summary: String {
        switch self {
        case .insertCode: "new code"
        case .updateCode: "code change"
        case .deleteCode: "code deletion"
        case .audit(let event): "audit \(event.kind)"
        case .saveBackoff, .deleteBackoff: "back-off"
        }
    }
}

extension StoreTransaction {
    /// Applies `intents` in order.
    mutating func apply(_ intents: [StoreIntent]) throws(StoreError) {
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
            }
        }
    }
}
