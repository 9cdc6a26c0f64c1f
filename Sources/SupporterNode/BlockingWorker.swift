import Dispatch
import Foundation
import Synchronization
import SupportUtilities
import SupportWire

/// A thread for blocking work asked for by async callers — scrypt (hashing and checking passwords, 50–100 ms each) on
/// the node's password worker, synchronous store writes (API tokens) on its store worker — so that it never runs on an
/// event loop or holds one of Swift's cooperative threads. One job at a time per thread: the worker's thread runs
/// every lane; the reserved lane has a second thread of its own, so that a reserved job never waits for the normal
/// job already running (a sign-in with a proof does not wait out a stranger's 100 ms scrypt).
///
/// Admission happens before anything waits (issue 20, finding 2): a job is refused at once (`nil`: the caller
/// answers "busy, try again") rather than queued without end when
/// - its lane is full: at most ``Limits/capacity`` jobs wait in the normal lane, ``Limits/reservedCapacity`` in the
///   reserved one;
/// - its key (a client's source address key, say) already has ``Limits/perKey`` jobs waiting or running, so that a
///   few keys cannot fill the lane against the others.
///
/// Two lanes: a job of the ``Lane/reserved`` lane runs before every job waiting in the ``Lane/normal`` lane (the
/// caller decides who deserves it, e.g. a sign-in that proved an earlier success); within a lane, in order. Waiting
/// jobs are taken from the head of their lane in O(1).
final class BlockingWorker: Sendable {
    /// Which queue a job waits in.
    enum Lane: Sendable {
        /// Everyone else.
        case normal
        /// Served first.
        case reserved
    }

    /// The bounds of the queues.
    struct Limits: Sendable, Hashable {
        /// Jobs that may wait in the normal lane.
        var capacity = 32
        /// Jobs that may wait in the reserved lane.
        var reservedCapacity = 8
        /// Jobs of one key that may wait or run at once (jobs without a key are not limited by it). 6 for sign-ins:
        /// as many as ``LoginGuard`` lets one address have in flight (5 free failures and the one that blocks), so a
        /// burst from one address gets exactly the checks the same attempts one after another would, and 6 addresses
        /// fill the lane no more than 32 would; beyond that the lane's bound refuses (503, counted as a failure).
        var perKey = 6

        init(capacity: Int = 32, reservedCapacity: Int = 8, perKey: Int = 6) {
            self.capacity = capacity
            self.reservedCapacity = reservedCapacity
            self.perKey = perKey
        }
    }

    private typealias Job = @Sendable () -> Void

    private struct State {
        var normal = RingBuffer<Job>()
        var reserved = RingBuffer<Job>()
        /// Jobs waiting or running per key.
        var perKey: [String: Int] = [:]
        var stopping = false
        /// The thread starts with the first job: a worker that never gets one (a node whose init failed after making
        /// it) leaves no thread behind.
        var threadStarted = false
        var reservedThreadStarted = false
        var completed = 0
        var refused = 0
    }

    let limits: Limits
    /// The thread's name.
    let name: String
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let reservedWake = DispatchSemaphore(value: 0)

    init(name: String = "rsup-blocking", limits: Limits = Limits()) {
        self.name = name
        self.limits = limits
    }

    /// Jobs that may wait in the normal lane.
    var capacity: Int { limits.capacity }

    /// Runs `work` on the worker's thread after the jobs waiting ahead of it in `lane` (and, for the normal lane, after
    /// every reserved job); nil when it was refused: its lane is full, `key` has ``Limits/perKey`` jobs waiting or
    /// running, or the worker stopped.
    func run<Result: Sendable>(
        lane: Lane = .normal, key: String? = nil, _ work: @escaping @Sendable () -> Result
    ) async -> Result? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
            let queued = submit(lane: lane, key: key, work) { continuation.resume(returning: $0) }
            if !queued { continuation.resume(returning: nil) }
        }
    }

    /// Queues `work` like ``run(lane:key:_:)`` and returns at once: false when it was refused. `then` gets the result
    /// on the worker's thread — no task or continuation in between, so a caller on an event loop does not depend on
    /// the cooperative pool having a free thread.
    func submit<Result>(
        lane: Lane = .normal, key: String? = nil, _ work: @escaping @Sendable () -> Result,
        then: @escaping @Sendable (Result) -> Void
    ) -> Bool {
        let (queued, startThread, startReservedThread) = state.withLock { state -> (Bool, Bool, Bool) in
            let waiting = lane == .normal ? state.normal.count : state.reserved.count
            let room = lane == .normal ? limits.capacity : limits.reservedCapacity
            guard !state.stopping, waiting < room, key.map({ state.perKey[$0, default: 0] < limits.perKey }) ?? true
            else {
                state.refused += 1
                return (false, false, false)
            }
            let job: Job = { [self] in
                let result = work()
                finished(key)  // before the caller goes on, so that its next job finds its key's room
                then(result)
            }
            if lane == .normal { state.normal.append(job) } else { state.reserved.append(job) }
            if let key { state.perKey[key, default: 0] += 1 }
            let startReserved = lane == .reserved && !state.reservedThreadStarted
            defer {
                state.threadStarted = true
                if lane == .reserved { state.reservedThreadStarted = true }
            }
            return (true, !state.threadStarted, startReserved)
        }
        if startThread {
            let thread = Thread { [self] in self.loop(reservedOnly: false) }
            thread.name = name
            thread.start()
        }
        if startReservedThread {
            let thread = Thread { [self] in self.loop(reservedOnly: true) }
            thread.name = name + "-reserved"
            thread.start()
        }
        guard queued else { return false }
        wake.signal()
        if lane == .reserved { reservedWake.signal() }
        return true
    }

    /// Whether the thread was started (by a first job).
    var hasThread: Bool { state.withLock { $0.threadStarted } }

    /// Jobs run to the end, and jobs refused, since the worker was made.
    var counts: (completed: Int, refused: Int) { state.withLock { ($0.completed, $0.refused) } }

    /// Jobs waiting in each lane now.
    var waiting: (normal: Int, reserved: Int) { state.withLock { ($0.normal.count, $0.reserved.count) } }

    /// Ends the thread once the waiting jobs ran; later jobs are refused.
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        reservedWake.signal()
    }

    /// A job of `key` ran.
    private func finished(_ key: String?) {
        state.withLock { state in
            state.completed += 1
            guard let key else { return }
            let left = state.perKey[key, default: 1] - 1
            state.perKey[key] = left > 0 ? left : nil
        }
    }

    /// The worker's thread takes reserved jobs first, then normal ones; the reserved thread only reserved ones. Both
    /// may wake for a job the other took: they find nothing and wait again.
    private func loop(reservedOnly: Bool) {
        let signal = reservedOnly ? reservedWake : wake
        while true {
            signal.wait()
            while let job = state.withLock({ state in
                reservedOnly ? state.reserved.popFirst() : state.reserved.popFirst() ?? state.normal.popFirst()
            }) {
                job()
            }
            // The reserved thread never runs normal jobs, so it ends once its own lane is empty.
            if state.withLock({ $0.stopping && $0.reserved.count == 0 && (reservedOnly || $0.normal.count == 0) }) {
                return
            }
        }
    }
}
