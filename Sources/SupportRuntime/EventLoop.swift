internal import CLinuxShims
public import SupportUtilities
internal import COpenSSL
public import Foundation
import Glibc
import Synchronization

/// Something the event loop tells about readiness of its file descriptor.
package protocol Selectable: AnyObject {
    /// Called on the loop thread with the descriptor's readiness.
    func handle(events: PollEvents)
    /// The loop is stopping while this is still registered: release the descriptor and tell the owner. Loop thread;
    /// no readiness call follows.
    func loopDidStop()
}

/// A one-shot timer on an event loop; cancel it to drop its work.
///
/// A cancelled timer leaves the loop's timer heap at once (O(log n)), so arming and cancelling many timers (one per
/// request, per connection) does not make the heap grow.
public final class LoopTimer {
    fileprivate var work: (() -> Void)?
    /// Position in the loop's heap; -1 once fired, cancelled or dropped.
    fileprivate var heapIndex = -1
    fileprivate weak var loop: EventLoop?

    fileprivate init(loop: EventLoop, work: @escaping () -> Void) {
        self.loop = loop
        self.work = work
    }

    /// Drops the work and removes the timer from its loop. Loop thread only; cancelling twice, or after it fired, does
    /// nothing.
    public func cancel() {
        work = nil
        guard heapIndex >= 0, let loop else { return }
        loop.removeTimer(self)
    }
}

/// One thread waiting on a ``Poller`` (epoll on Linux): all readiness, timers and loop-confined state of the
/// connections assigned to it.
///
/// No thread per connection: a loop serves thousands. Work from other threads enters through ``execute(_:)`` (or
/// ``submit(_:)`` for a caller that awaits the result).
///
/// Rules, as in swift-nio: nothing on a loop thread may block. ``waitUntilFinished()``,
/// ``EventLoopGroup/shutdownAndWait()`` and name lookups refuse to run on a loop thread with a
/// `blocking_on_event_loop` error instead of deadlocking or stalling every connection of the loop.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: every `var` below is read and written only on the loop's own thread (checked with
    // `preconditionInLoop`); the cross-thread entries are `inbox` (a Mutex), the poller's `wake()`, `threadID` and
    // `stopRequested` (atomics), and the immutable `let`s.
    private let poller: PlatformPoller
    private let inbox = Mutex(Inbox())
    private let stopRequested = Atomic<Bool>(false)
    /// An embedded loop's last iteration ran (``shutdown()``).
    private let stopped = Atomic<Bool>(false)
    /// The loop thread's `pthread_self()`, stored once by the thread before it runs anything; 0 before that.
    private let threadID = Atomic<UInt>(0)
    private var registrations: [Int32: (generation: UInt32, handler: Selectable)] = [:]
    private var nextGeneration: UInt32 = 0
    /// A binary min-heap on deadline; each timer knows its index. The deadline sits in the slot beside the timer, so
    /// sifting compares slots without touching the timers (with 10,000 idle connections on a 1 s keepalive, sifting
    /// a heap of timer references was an eighth of the loops' time: every comparison a cache miss).
    private var timers: [TimerSlot] = []
    private let finished = DispatchSemaphore(value: 0)
    private let onError: (@Sendable (TransportError) -> Void)?
    /// Set for an embedded loop (``embedded(name:)``): its time, which only ``advance(by:)`` moves.
    private let virtualClock: VirtualClock?
    /// Scratch for TLS reads, shared by every connection of this loop so that idle connections hold no read buffer.
    package let readBuffer: UnsafeMutableRawBufferPointer
    public let name: String

    /// Work queued from any thread, and whether the loop still takes more.
    private struct Inbox {
        var work: [@Sendable () -> Void] = []
        var accepting = true
    }

    /// Starts a loop on a thread of its own.
    ///
    /// - Parameter onError: told (on the loop thread) of failures that have no caller to return to: an `epoll_ctl`
    ///   removal that failed, or an `epoll_wait` failure that stops the loop. Hand it to the node's logger.
    public static func start(
        name: String = "rsup-loop", onError: (@Sendable (TransportError) -> Void)? = nil
    ) throws(TransportError) -> EventLoop {
        let loop = try EventLoop(name: name, onError: onError)
        // Named from inside: on Linux, Foundation applies a name set before start() to no thread.
        let thread = Thread {
            Thread.current.name = name
            loop.run()
        }
        thread.start()
        return loop
    }

    /// An embedded loop for tests: no thread of its own and a virtual clock starting at ``Deadline/zero`` + 1 h.
    /// The test drives it: ``advance(by:)`` runs the work queued for it, the readiness of its descriptors (real
    /// sockets, polled without waiting) and every timer due as its clock moves — so a 30 s keepalive is tested in
    /// milliseconds. Like NIO's `EmbeddedEventLoop`, but over the real poller and TLS.
    ///
    /// - Parameter startingAt: the wall time of its ``clock`` now; from then on its wall time moves with the virtual
    ///   time only, so wall time and deadlines agree (a code valid for 5 s expires when the loop is advanced 5 s).
    public static func embedded(
        name: String = "rsup-embedded", startingAt: Date = EventLoop.embeddedStartDate
    ) throws(TransportError) -> EventLoop {
        try EventLoop(name: name, onError: nil, virtualClock: VirtualClock(wallTimeAtStart: startingAt))
    }

    /// The wall time an embedded loop starts at unless told otherwise: 2026-01-01 00:00:00 UTC (fixed, so that runs
    /// of a test see the same times).
    public static let embeddedStartDate = Date(timeIntervalSince1970: 1_767_225_600)

    private init(
        name: String, onError: (@Sendable (TransportError) -> Void)?, virtualClock: VirtualClock? = nil
    ) throws(TransportError) {
        self.name = name
        self.virtualClock = virtualClock
        self.onError = onError
        poller = try PlatformPoller()
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit { readBuffer.deallocate() }

    /// Whether the caller runs on this loop's thread. Lock-free: one atomic load compared with `pthread_self()`.
    public var inLoop: Bool { threadID.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// The loop's time: the monotonic clock, or an embedded loop's virtual clock. What its timers and the links on it
    /// measure with.
    public var now: Deadline { virtualClock?.now ?? Deadline.now() }

    /// The loop's clocks, to inject into what runs on it (the supporter node, the REST server, the device SDK):
    /// ``SystemClock`` for a running loop; for an embedded loop its virtual clock, whose monotonic time is ``now``
    /// and whose wall time is the start date plus the virtual time elapsed. Safe from any thread.
    public var clock: any NodeClock {
        if let virtualClock { return VirtualNodeClock(clock: virtualClock) }
        return SystemClock()
    }

    /// Whether this is an embedded loop (``embedded(name:)``).
    public var isEmbedded: Bool { virtualClock != nil }

    /// Embedded loop only: runs what is due now, then moves the virtual clock forward by `duration`, firing each timer
    /// at its time (and what it causes) on the way. Call it from a thread that is not an event loop; the caller's
    /// thread is this loop's thread meanwhile. Readiness of real descriptors is polled without waiting: on loopback,
    /// what one side writes is readable by the other at once.
    public func advance(by duration: Duration = .zero) {
        guard let virtualClock else {
            assertionFailure("advance(by:) on the real-time loop \(name)")
            return
        }
        precondition(!Self.isOnLoopThread, "advance(by:) on an event-loop thread")
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        LoopThreadMarker.set()
        defer {
            LoopThreadMarker.clear()
            threadID.store(0, ordering: .releasing)
        }
        let target = virtualClock.now + duration
        while true {
            runUntilIdle()
            guard let next = timers.first, next.deadline <= target.nanoseconds else { break }
            virtualClock.move(to: Deadline(nanoseconds: max(next.deadline, virtualClock.now.nanoseconds)))
        }
        virtualClock.move(to: target)
        runUntilIdle()
    }

    /// Embedded loop: polls, runs queued work and due timers until nothing is left to do at the current time.
    private func runUntilIdle() {
        var rounds = 0
        while rounds < 10_000 {
            rounds += 1
            var ready = false
            do throws(TransportError) {
                try poller.wait(timeoutMilliseconds: 0) { token, events in
                    ready = true
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: token))
                    let generation = UInt32(truncatingIfNeeded: token >> 32)
                    guard let registration = registrations[fd], registration.generation == generation else { return }
                    registration.handler.handle(events: events)
                }
            } catch {
                onError?(error)
            }
            let hadWork = inbox.withLock { !$0.work.isEmpty }
            let due = timers.first.map { $0.deadline <= now.nanoseconds } ?? false
            if !ready && !hadWork && !due { return }
            runExpiredTimers()
            runPending()
        }
    }

    /// Whether the caller runs on the thread of any event loop (where blocking is forbidden).
    public static var isOnLoopThread: Bool { LoopThreadMarker.isSet }

    /// Stops the process when the caller is not on this loop's thread: state confined to a loop is touched only
    /// there, and this is the check that proves it — in release builds too (as swift-nio's `NIOLoopBound`), since a
    /// confinement that only debug builds check is a claim, not a proof. Costs an atomic load and `pthread_self`.
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inLoop, "not on event loop \(name)", file: file, line: line)
    }

    /// Runs `work` on the loop thread, soon. Safe from any thread.
    ///
    /// - Returns: true when the work was accepted: it will run, even if the loop is shut down meanwhile (work accepted
    ///   before ``shutdown()`` runs before the thread ends). False after ``shutdown()``: the work is dropped and will
    ///   never run, so a caller that waits for it must not wait (see ``submit(_:)``).
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wasEmpty) = inbox.withLock { inbox -> (Bool, Bool) in
            guard inbox.accepting else { return (false, false) }
            inbox.work.append(work)
            return (true, inbox.work.count == 1)
        }
        if wasEmpty { wake() }
        return accepted
    }

    /// Runs `work` on the loop thread and returns its result to an async caller.
    ///
    /// Never leaves the caller hanging: throws `event_loop_shut_down` at once when the loop no longer accepts work
    /// (the work did not run); accepted work always runs. Use it instead of `withCheckedContinuation` around
    /// ``execute(_:)``, whose continuation would never resume after a shutdown.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(TransportError) -> T {
        let name = self.name
        let result: Result<T, TransportError> = await withCheckedContinuation { continuation in
            let accepted = execute { continuation.resume(returning: .success(work())) }
            if !accepted {
                continuation.resume(
                    returning: .failure(
                        TransportError(.eventLoopShutDown, "event loop \(name) is shut down; the work did not run")))
            }
        }
        return try result.get()
    }

    private func wake() { poller.wake() }

    /// Stops the loop after the current iteration. From then on ``execute(_:)`` refuses work; work accepted before
    /// still runs. Handlers still registered are told the loop stopped (connections close with
    /// `event_loop_shut_down`, and their owners hear of it), then the thread ends. Does not wait: safe on any thread.
    public func shutdown() {
        inbox.withLock { $0.accepting = false }
        stopRequested.store(true, ordering: .releasing)
        wake()
        if virtualClock != nil, !stopped.exchange(true, ordering: .acquiringAndReleasing) {
            // An embedded loop has no thread to finish on: the caller's runs the last iteration.
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            LoopThreadMarker.set()
            stop()
            LoopThreadMarker.clear()
            threadID.store(0, ordering: .releasing)
        }
    }

    /// Blocks until the loop thread has finished after ``shutdown()``.
    ///
    /// Throws `blocking_on_event_loop` (and waits for nothing) when called on an event-loop thread: waiting there would
    /// deadlock (this loop) or stall every connection of the calling loop.
    public func waitUntilFinished() throws(TransportError) {
        guard !Self.isOnLoopThread else {
            throw TransportError(
                .blockingOnEventLoop,
                "waitUntilFinished() on event-loop thread \(Thread.current.name ?? "?") for loop \(name): "
                    + "it would block that loop (or deadlock); wait from a thread that is not a loop")
        }
        finished.wait()
        finished.signal()  // later waiters return at once
    }

    // MARK: registration (loop thread only)

    /// Watches `fd` for `events`. Throws `poller` with the poller's reason when it refuses (then nothing is
    /// registered).
    package func register(_ fd: Int32, events: PollEvents, handler: Selectable) throws(TransportError) {
        preconditionInLoop()
        nextGeneration &+= 1
        if nextGeneration == 0 { nextGeneration = 1 }  // token 0 is the poller's own wake-up
        try poller.add(fd, events: events, token: Self.token(fd, nextGeneration))
        registrations[fd] = (nextGeneration, handler)
    }

    /// Changes the events watched for `fd`. Throws `poller` when the poller refuses.
    package func modify(_ fd: Int32, events: PollEvents) throws(TransportError) {
        preconditionInLoop()
        guard let registration = registrations[fd] else { return }
        try poller.modify(fd, events: events, token: Self.token(fd, registration.generation))
    }

    /// A registration's token: its generation (never 0) above the descriptor, so that a descriptor number reused
    /// within one batch of readiness is told apart.
    private static func token(_ fd: Int32, _ generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }

    /// Removes `fd` from the loop; call before closing it. A failure (e.g. the fd was closed first) has no caller to
    /// go to and is reported to the loop's `onError`.
    package func unregister(_ fd: Int32) {
        preconditionInLoop()
        guard registrations.removeValue(forKey: fd) != nil else { return }
        do throws(TransportError) { try poller.remove(fd) } catch {
            onError?(TransportError(.poller, "\(error.message) on \(name)"))
        }
    }

    /// Runs `work` on the loop at `deadline` unless cancelled first.
    @discardableResult
    public func schedule(at deadline: Deadline, _ work: @escaping () -> Void) -> LoopTimer {
        preconditionInLoop()
        let timer = LoopTimer(loop: self, work: work)
        let slot = TimerSlot(deadline: deadline.nanoseconds, timer: timer)
        timers.append(slot)
        timers.withUnsafeMutableBufferPointer { Self.siftUp(slot, from: $0.count - 1, in: $0) }
        return timer
    }

    /// Timers in the heap (armed and not cancelled). Loop thread only; for tests and diagnostics.
    package var scheduledTimerCount: Int {
        preconditionInLoop()
        return timers.count
    }

    // MARK: the loop

    private func run() {
        // OpenSSL writes to its sockets with write(2), not send(MSG_NOSIGNAL): writing to a connection the peer has
        // reset raises SIGPIPE, whose default action kills the whole process. SIGPIPE is sent to the writing thread,
        // and every socket write happens on a loop thread, so blocking it here (without touching the process-wide
        // disposition) turns it into the EPIPE that the connection already handles as connection_reset.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        LoopThreadMarker.set()
        while !stopRequested.load(ordering: .acquiring) {
            do throws(TransportError) {
                try poller.wait(timeoutMilliseconds: timeoutMilliseconds()) { token, events in
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: token))
                    let generation = UInt32(truncatingIfNeeded: token >> 32)
                    // A handler closed earlier in this batch may have had its fd number reused: the generation tells.
                    guard let registration = registrations[fd], registration.generation == generation else { return }
                    registration.handler.handle(events: events)
                }
            } catch {
                // Not transient (EBADF, EFAULT, EINVAL): the loop cannot go on. Say so, then stop as for shutdown,
                // so that every connection is closed and its owner told.
                onError?(TransportError(.poller, "\(error.message) on \(name); the loop stops"))
                inbox.withLock { $0.accepting = false }
                break
            }
            runExpiredTimers()
            runPending(untilEmpty: false)
        }
        stop()
    }

    /// After the last iteration: accepted work runs, handlers still registered are told, timers are dropped.
    private func stop() {
        runPending()
        // Each handler unregisters itself; one closing may close others, so look again after every call.
        while let (fd, registration) = registrations.first {
            registration.handler.loopDidStop()
            if let still = registrations[fd], still.generation == registration.generation {
                registrations.removeValue(forKey: fd)  // a handler that did not unregister
            }
        }
        runPending()  // work those handlers queued on this loop is refused; nothing is left here
        for slot in timers {
            slot.timer.heapIndex = -1
            slot.timer.work = nil
        }
        timers.removeAll()
        finished.signal()
    }

    /// Runs queued work. Once per iteration of a running loop it runs only what was queued when it began
    /// (`untilEmpty` false): work queued meanwhile waits for the next iteration, after the poller has been asked for
    /// ready connections (with a zero timeout), so that work which queues more work — a connection reading its next
    /// batch — cannot keep the loop from its other connections.
    private func runPending(untilEmpty: Bool = true) {
        while true {
            let work = inbox.withLock { inbox -> [@Sendable () -> Void] in
                let taken = inbox.work
                inbox.work.removeAll(keepingCapacity: true)
                return taken
            }
            if work.isEmpty { return }
            for item in work { item() }
            if !untilEmpty { return }
        }
    }

    private func timeoutMilliseconds() -> Int32 {
        if inbox.withLock({ !$0.work.isEmpty }) { return 0 }
        guard let first = timers.first else { return -1 }
        let now = self.now
        guard first.deadline > now.nanoseconds else { return 0 }
        let nanoseconds = first.deadline - now.nanoseconds
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }

    private func runExpiredTimers() {
        let now = self.now.nanoseconds
        while let first = timers.first, first.deadline <= now {
            remove(at: 0)
            let timer = first.timer
            if let work = timer.work {
                timer.work = nil
                work()
            }
        }
    }

    // MARK: heap

    /// Takes `timer` out of the heap (it is cancelled).
    fileprivate func removeTimer(_ timer: LoopTimer) {
        preconditionInLoop()
        let index = timer.heapIndex
        guard index >= 0, index < timers.count, timers[index].timer === timer else { return }
        remove(at: index)
    }

    private func remove(at index: Int) {
        timers[index].timer.heapIndex = -1
        let last = timers.removeLast()
        guard index < timers.count else { return }
        // The last slot fills the hole, moving up or down from it.
        timers.withUnsafeMutableBufferPointer { heap in
            if index > 0, last.deadline < heap[(index - 1) / 2].deadline {
                Self.siftUp(last, from: index, in: heap)
            } else {
                Self.siftDown(last, from: index, in: heap)
            }
        }
    }

    /// Places `slot` at `start` or above it: parents later than it move down into the hole.
    private static func siftUp(_ slot: TimerSlot, from start: Int, in heap: UnsafeMutableBufferPointer<TimerSlot>) {
        var hole = start
        while hole > 0 {
            let parent = (hole - 1) / 2
            guard slot.deadline < heap[parent].deadline else { break }
            heap[hole] = heap[parent]
            heap[hole].timer.heapIndex = hole
            hole = parent
        }
        heap[hole] = slot
        slot.timer.heapIndex = hole
    }

    /// Places `slot` at `start` or below it: the earlier child moves up into the hole while it is earlier than `slot`.
    private static func siftDown(_ slot: TimerSlot, from start: Int, in heap: UnsafeMutableBufferPointer<TimerSlot>) {
        var hole = start
        while true {
            var child = 2 * hole + 1
            guard child < heap.count else { break }
            if child + 1 < heap.count, heap[child + 1].deadline < heap[child].deadline { child += 1 }
            guard heap[child].deadline < slot.deadline else { break }
            heap[hole] = heap[child]
            heap[hole].timer.heapIndex = hole
            hole = child
        }
        heap[hole] = slot
        slot.timer.heapIndex = hole
    }
}

/// One place in an event loop's timer heap.
private struct TimerSlot {
    /// The timer's deadline, in nanoseconds of the monotonic clock.
    package let deadline: UInt64
    package let timer: LoopTimer
}

/// Marks event-loop threads, so that blocking calls can refuse to run there.
package enum LoopThreadMarker {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(SystemError.describe(status))")
        return key
    }()

    package static var isSet: Bool { pthread_getspecific(key) != nil }

    /// Called once by a loop thread before it runs anything.
    package static func set() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }

    /// An embedded loop's driving thread is a loop thread only while it drives.
    package static func clear() { pthread_setspecific(key, nil) }
}

/// A fixed set of loops, one per core by default; connections are spread over them.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let counter = Atomic<Int>(0)

    /// - Parameter onError: given to every loop (see ``EventLoop/start(name:onError:)``).
    public init(
        loopCount: Int = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)),
        onError: (@Sendable (TransportError) -> Void)? = nil
    ) throws(TransportError) {
        var loops: [EventLoop] = []
        for index in 0..<max(1, loopCount) {
            do {
                loops.append(try EventLoop.start(name: "rsup-loop-\(index)", onError: onError))
            } catch {
                for loop in loops { loop.shutdown() }
                throw error
            }
        }
        self.loops = loops
    }

    /// A group of loops made elsewhere (an embedded loop, for tests of a listener on virtual time).
    public init(loops: [EventLoop]) {
        precondition(!loops.isEmpty, "a group needs a loop")
        self.loops = loops
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        loops[counter.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// Stops every loop and waits for their threads.
    ///
    /// Throws `blocking_on_event_loop` (and stops nothing) when called on an event-loop thread, where waiting would
    /// deadlock or stall that loop.
    public func shutdownAndWait() throws(TransportError) {
        guard !EventLoop.isOnLoopThread else {
            throw TransportError(
                .blockingOnEventLoop,
                "EventLoopGroup shutdown on event-loop thread \(Thread.current.name ?? "?"): it would wait for its own "
                    + "loop; shut the group down from a thread that is not a loop")
        }
        for loop in loops { loop.shutdown() }
        for loop in loops { try loop.waitUntilFinished() }
    }

    /// Stops every loop and waits for their threads. Call it from a thread that is not an event loop: on a loop thread
    /// it would deadlock, so it stops the process with a message saying so (a programmer error; use
    /// ``shutdownAndWait()`` to get an error instead).
    public func shutdown() {
        do throws(TransportError) {
            try shutdownAndWait()
        } catch {
            preconditionFailure(error.description)
        }
    }
}

/// An embedded loop's clock: only ``EventLoop/advance(by:)`` moves it.
private final class VirtualClock: Sendable {
    private static let start = Deadline(sinceOrigin: .seconds(3600))
    private let time = Mutex(VirtualClock.start)
    /// The wall time at ``start``.
    let wallTimeAtStart: Date

    init(wallTimeAtStart: Date) { self.wallTimeAtStart = wallTimeAtStart }

    var now: Deadline { time.withLock { $0 } }
    /// The start date plus the virtual time elapsed since.
    var wallTime: Date { wallTimeAtStart.addingTimeInterval(now.since(Self.start).seconds) }
    func move(to deadline: Deadline) { time.withLock { $0 = max($0, deadline) } }
}

/// An embedded loop's clock as a ``NodeClock``: both readings move only with ``EventLoop/advance(by:)``.
private struct VirtualNodeClock: NodeClock {
    let clock: VirtualClock
    var wallTime: Date { clock.wallTime }
    var monotonic: Deadline { clock.now }
}
