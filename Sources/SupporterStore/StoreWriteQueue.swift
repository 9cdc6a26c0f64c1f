package import SupporterCore
import Foundation
import Synchronization
package import SupportUtilities
package import SupportMetrics

/// What a store engine does with its writer queue's work. Called only on the queue's one thread, in order.
package protocol StoreQueueWorker: AnyObject, Sendable {
    /// Applies `batch` (at most ``StoreWriteQueue/maximumBatch`` jobs, in submission order) in one transaction, each
    /// job all or nothing and alone when it fails; one answer per job: nil once it is durable, or why nothing of it
    /// was stored.
    func apply(_ batch: [[StoreIntent]]) -> [StoreError?]
    /// Runs after the batch's completions (SQLite's checkpoints: never between a commit and its acknowledgement).
    func afterBatch()
    /// How often ``housekeep()`` must run while the queue runs, busy or idle (nil: never).
    var housekeepingInterval: Duration? { get }
    /// Periodic work between batches (PostgreSQL's presence leases). Never behind more than one batch.
    func housekeep()
    /// Runs once after the queue drained on ``StoreWriteQueue/stop()``, on the queue's thread.
    func finish()
}

/// The one writer queue every store engine runs on: a bounded FIFO of intent jobs (and of engine calls, run in
/// the same order) worked through by one thread, several jobs per transaction. Event loops never wait for the
/// database: they submit a job and go on; its completion runs on the queue's thread after the commit (hop back to a
/// loop from there).
///
/// Wake-ups: the thread is woken only when it sleeps. A submission to a busy queue signals nothing; the thread takes
/// everything queued at once (one lock take per batch, not per job), so a burst of submissions costs one wake-up.
///
/// Deferrable jobs (nothing waits for them but events: the record of a connection that closed): with a
/// `deferralLimit`, such a job does not wake a thread that worked in the last `deferralLimit`; it rides along in the
/// transaction of the next job that does, or is written when that time is up. Without one it is an ordinary job.
///
/// Bound and order: at most ``capacity`` jobs wait (queued, or taken and not yet in a batch); a full queue refuses a
/// job at once (``submit(_:deferrable:completion:)`` returns false, the job is not taken: the caller refuses the
/// action or stops reading from the connection that caused it). Engine calls are not counted: each has a caller
/// waiting for it, and callers are bounded by the node's blocking-work pool. Jobs and calls run in submission order;
/// completions run in that order too. A job that fails is logged with what it would have recorded, and refused.
package final class StoreWriteQueue: Sendable {
    package struct Job: Sendable {
        var intents: [StoreIntent]
        /// Nil after the commit; the error when the job could not be applied (nothing of it is stored).
        var completion: @Sendable (StoreError?) -> Void
    }

    private enum Work: Sendable {
        case job(Job)
        case call(@Sendable () -> Void)
    }

    private struct State: ~Copyable {
        /// Queued, not yet taken. The thread takes it all at once by swapping in its own emptied array (O(1) under
        /// the lock, the capacity reused): nothing is copied, compacted or freed while a loop may wait for the lock.
        var work: [Work] = []
        /// Jobs queued, or taken and not yet in a batch: what ``StoreWriteQueue/capacity`` bounds.
        var jobsWaiting = 0
        var stopping = false
        /// The thread waits on ``StoreWriteQueue/wake`` (or is about to): the next submission must signal it.
        var sleeping = false
        /// It sleeps without a time limit: a deferrable job must wake it too.
        var sleepingUntilWoken = true
        var statistics = StoreStatistics()
    }

    /// Most jobs waiting at once.
    package let capacity: Int
    /// Most jobs in one transaction.
    package let maximumBatch: Int
    /// How long a deferrable job may wait for a job that wakes the thread; nil: deferrable jobs wake it too.
    package let deferralLimit: Duration?
    /// Where the store is, for errors.
    private let location: String
    private let worker: any StoreQueueWorker
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the queue's thread, named `threadName`.
    package init(
        threadName: String, location: String, worker: any StoreQueueWorker, logger: NodeLogger, capacity: Int,
        maximumBatch: Int, deferralLimit: Duration? = nil
    ) {
        self.location = location
        self.worker = worker
        self.logger = logger
        self.capacity = max(1, capacity)
        self.maximumBatch = max(1, maximumBatch)
        self.deferralLimit = deferralLimit
        let thread = Thread { [self] in self.run() }
        thread.name = threadName
        thread.start()
    }

    /// Queues `intents`; `completion` runs on the queue's thread once they are durable (nil) or failed (the error).
    /// Returns false, without queueing or calling `completion`, when the queue is full or stopped.
    @discardableResult
    package func submit(
        _ intents: [StoreIntent], deferrable: Bool = false, completion: @escaping @Sendable (StoreError?) -> Void
    ) -> Bool {
        let deferring = deferrable && deferralLimit != nil
        let (accepted, wakeThread) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            guard state.jobsWaiting < capacity else {
                state.statistics.refusedWhenFull += 1
                return (false, false)
            }
            state.work.append(.job(Job(intents: intents, completion: completion)))
            state.jobsWaiting += 1
            return (true, Self.takeSleeper(&state, deferring: deferring))
        }
        if wakeThread { wake.signal() }
        return accepted
    }

    /// Runs `body` on the queue's thread, in order with the jobs (an engine's reads and one-off transactions).
    /// False, without running it, once the queue stopped.
    @discardableResult
    package func call(_ body: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wakeThread) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            state.work.append(.call(body))
            return (true, Self.takeSleeper(&state, deferring: false))
        }
        if wakeThread { wake.signal() }
        return accepted
    }

    /// Whether this submission wakes the thread; it is then no longer counted as sleeping, so it is signalled once.
    private static func takeSleeper(_ state: inout State, deferring: Bool) -> Bool {
        guard state.sleeping, !deferring || state.sleepingUntilWoken else { return false }
        state.sleeping = false
        return true
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
                message: "the node's store writer is full or stopped; try again", path: location)
        case .some(.none): return
        case .some(.some(let error)): throw error
        }
    }

    /// Jobs waiting.
    package var queued: Int { state.withLock { $0.jobsWaiting } }

    /// What the queue did so far (``StoreStatistics/queued`` is the jobs waiting now).
    package var statistics: StoreStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.queued = state.jobsWaiting
            return statistics
        }
    }

    /// Applies what is queued, runs the worker's ``StoreQueueWorker/finish()``, then stops the thread. Later
    /// submissions are refused. Waits for all of it; not on an event loop.
    package func stop() {
        let first = state.withLock { state -> Bool in
            defer {
                state.stopping = true
                state.sleeping = false
            }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        let interval = worker.housekeepingInterval
        var nextHousekeeping = DispatchTime.now()
        // After work, sleep at most `deferralLimit` (a deferrable job queued meanwhile is written then at the latest).
        var recentlyActive = false
        // The thread's side of the queue: swapped with `State.work`; `next` is the first item not yet run.
        var taken: [Work] = []
        var next = 0
        var stopping = false
        while true {
            if let interval, DispatchTime.now() >= nextHousekeeping {
                worker.housekeep()
                nextHousekeeping = DispatchTime.now() + Self.dispatchInterval(interval)
            }
            if next == taken.count {
                // Everything taken is done: take the whole queue. The drained items are freed here, outside the lock.
                taken.removeAll(keepingCapacity: true)
                next = 0
                let wasActive = recentlyActive
                stopping = state.withLock { state -> Bool in
                    swap(&state.work, &taken)
                    if taken.isEmpty, !state.stopping {
                        // Decided under the lock, so a submission after this sees that it must signal, and whether a
                        // deferrable one may wait.
                        state.sleeping = true
                        state.sleepingUntilWoken = !wasActive || deferralLimit == nil
                    }
                    return state.stopping
                }
            }
            if next == taken.count {
                if stopping {
                    worker.finish()
                    finished.signal()
                    return
                }
                var deadline: DispatchTime? = nil
                if recentlyActive, let deferralLimit { deadline = .now() + Self.dispatchInterval(deferralLimit) }
                if interval != nil { deadline = min(deadline ?? nextHousekeeping, nextHousekeeping) }
                var woken = true
                if let deadline {
                    woken = wake.wait(timeout: deadline) == .success
                } else {
                    wake.wait()
                }
                // Awake: submissions from now on need not signal (a late signal only costs one empty round).
                state.withLock { state in
                    state.sleeping = false
                    if woken { state.statistics.wakeUps += 1 }
                }
                recentlyActive = false
                continue
            }
            if case .call(let body) = taken[next] {
                next += 1
                body()
                continue
            }
            var batch: [Job] = []
            while next < taken.count, batch.count < maximumBatch, case .job(let job) = taken[next] {
                batch.append(job)
                next += 1
            }
            // The batch being applied no longer counts as waiting.
            state.withLock { $0.jobsWaiting -= batch.count }
            apply(batch)
            recentlyActive = true
        }
    }

    /// How long each transaction took, from its start to its commit (or failure), on the queue's thread.
    package let commitLatency = MetricHistogram()

    private func apply(_ batch: [Job]) {
        // A measurement on the writer's own thread, at the I/O edge: nothing decides by it.
        let started = ContinuousClock.now
        let answers = worker.apply(batch.map(\.intents))
        commitLatency.observe(ContinuousClock.now - started)
        // A worker that answered fewer jobs than it was given stored none of the rest as far as anyone knows.
        let failures = batch.indices.map { index -> StoreError? in
            index < answers.count
                ? answers[index]
                : StoreError(
                    kind: .io, operation: "apply a batch", message: "the store gave no answer for this job",
                    path: location)
        }
        let failed = failures.count { $0 != nil }
        // Counted before the completions run, so that whoever a completion wakes sees the counts that include it.
        state.withLock { state in
            state.statistics.jobsApplied += batch.count - failed
            state.statistics.jobsFailed += failed
            state.statistics.transactions += 1
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
        }
        for (job, failure) in zip(batch, failures) {
            if let failure {
                logger.log(
                    .error,
                    "store: cannot write \(job.intents.map(\.summary).joined(separator: ", ")): \(failure); "
                        + "what it records is refused, not acknowledged")
            }
            job.completion(failure)
        }
        worker.afterBatch()
    }

    private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
