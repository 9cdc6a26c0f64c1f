import COpenSSL
import Foundation
import Glibc
import Synchronization

/// Something the event loop tells about readiness of its file descriptor.
protocol Selectable: AnyObject {
    /// Called on the loop thread with the epoll event bits.
    func handle(events: UInt32)
}

/// A one-shot timer on an event loop; cancel it to drop its work.
public final class LoopTimer {
    fileprivate var work: (() -> Void)?
    fileprivate let deadline: Deadline
    fileprivate init(deadline: Deadline, work: @escaping () -> Void) {
        self.deadline = deadline
        self.work = work
    }
    /// Loop thread only.
    public func cancel() { work = nil }
}

/// One thread running epoll: all readiness, timers and loop-confined state of the connections assigned to it.
///
/// No thread per connection: a loop serves thousands. Work from other threads enters through ``execute(_:)``.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: every `var` below is read and written only on the loop's own thread (checked with
    // `assertInLoop`); the only cross-thread entry is `pending`, a Mutex, and `wakeFD`, an eventfd.
    private let epollFD: Int32
    private let wakeFD: Int32
    private let pending = Mutex<[@Sendable () -> Void]>([])
    private let stopRequested = Atomic<Bool>(false)
    private let loopThread = Mutex<pthread_t?>(nil)
    private var registrations: [Int32: (generation: UInt32, handler: Selectable)] = [:]
    private var nextGeneration: UInt32 = 0
    private var timers: [LoopTimer] = []  // a binary min-heap on deadline
    private let finished = DispatchSemaphore(value: 0)
    /// Scratch for TLS reads, shared by every connection of this loop so that idle connections hold no read buffer.
    let readBuffer: UnsafeMutableRawBufferPointer
    public let name: String

    /// Starts a loop on a thread of its own.
    public static func start(name: String = "rsup-loop") throws(TransportError) -> EventLoop {
        let loop = try EventLoop(name: name)
        let thread = Thread { loop.run() }
        thread.name = name
        thread.start()
        return loop
    }

    private init(name: String) throws(TransportError) {
        self.name = name
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw TransportError(.socket, "epoll_create1: \(SystemError.describe(errno))") }
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            close(epollFD)
            throw TransportError(.socket, "eventfd: \(SystemError.describe(errno))")
        }
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        var event = epoll_event()
        event.events = rs_EPOLLIN()
        event.data.u64 = UInt64(UInt32(bitPattern: wakeFD))
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        readBuffer.deallocate()
    }

    /// Whether the caller runs on this loop's thread.
    public var inLoop: Bool { loopThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    public func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "not on event loop \(name)", file: file, line: line)
    }

    /// Runs `work` on the loop thread, soon. Safe from any thread. Returns false, without taking `work`, once the
    /// loop was asked to shut down: callers waiting for `work` must resume themselves then.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        guard !stopRequested.load(ordering: .acquiring) else { return false }
        let wasEmpty = pending.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        if wasEmpty { wake() }
        return true
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Stops the loop after the current iteration. Registered handlers are not called again.
    public func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Blocks until the loop thread has finished after ``shutdown()``.
    public func waitUntilFinished() { finished.wait() }

    // MARK: registration (loop thread only)

    func register(_ fd: Int32, events: UInt32, handler: Selectable) {
        assertInLoop()
        nextGeneration &+= 1
        registrations[fd] = (nextGeneration, handler)
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(nextGeneration) << 32 | UInt64(UInt32(bitPattern: fd))
        epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
    }

    func modify(_ fd: Int32, events: UInt32) {
        assertInLoop()
        guard let registration = registrations[fd] else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(registration.generation) << 32 | UInt64(UInt32(bitPattern: fd))
        epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
    }

    /// Removes `fd` from the loop; call before closing it.
    func unregister(_ fd: Int32) {
        assertInLoop()
        guard registrations.removeValue(forKey: fd) != nil else { return }
        var event = epoll_event()
        epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    /// Runs `work` on the loop at `deadline` unless cancelled first.
    @discardableResult
    public func schedule(at deadline: Deadline, _ work: @escaping () -> Void) -> LoopTimer {
        assertInLoop()
        let timer = LoopTimer(deadline: deadline, work: work)
        timers.append(timer)
        siftUp(timers.count - 1)
        return timer
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
        loopThread.withLock { $0 = pthread_self() }
        defer {
            registrations.removeAll()
            timers.removeAll()
            finished.signal()
        }
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            let count = epoll_wait(epollFD, events, Int32(capacity), timeoutMilliseconds())
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<Int(count) {
                let event = events[index]
                let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: event.data.u64))
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    continue
                }
                let generation = UInt32(truncatingIfNeeded: event.data.u64 >> 32)
                // A handler closed earlier in this batch may have had its fd number reused: the generation tells.
                guard let registration = registrations[fd], registration.generation == generation else { continue }
                registration.handler.handle(events: event.events)
            }
            runExpiredTimers()
            runPending()
        }
    }

    private func runPending() {
        while true {
            let work = pending.withLock { queue -> [@Sendable () -> Void] in
                let taken = queue
                queue.removeAll(keepingCapacity: true)
                return taken
            }
            if work.isEmpty { return }
            for item in work { item() }
        }
    }

    private func timeoutMilliseconds() -> Int32 {
        if pending.withLock({ !$0.isEmpty }) { return 0 }
        while let first = timers.first, first.work == nil { popTimer() }
        guard let first = timers.first else { return -1 }
        let now = Deadline.now()
        guard first.deadline > now else { return 0 }
        let nanoseconds = first.deadline.nanoseconds - now.nanoseconds
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }

    private func runExpiredTimers() {
        let now = Deadline.now()
        while let first = timers.first, first.deadline <= now {
            popTimer()
            if let work = first.work {
                first.work = nil
                work()
            }
        }
    }

    // MARK: heap

    private func popTimer() {
        let last = timers.removeLast()
        guard !timers.isEmpty else { return }
        timers[0] = last
        siftDown(0)
    }

    private func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard timers[child].deadline < timers[parent].deadline else { return }
            timers.swapAt(child, parent)
            child = parent
        }
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < timers.count, timers[left].deadline < timers[smallest].deadline { smallest = left }
            if right < timers.count, timers[right].deadline < timers[smallest].deadline { smallest = right }
            if smallest == parent { return }
            timers.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// A fixed set of loops, one per core by default; connections are spread over them.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let counter = Atomic<Int>(0)

    public init(loopCount: Int = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))) throws(TransportError) {
        var loops: [EventLoop] = []
        for index in 0..<max(1, loopCount) { loops.append(try EventLoop.start(name: "rsup-loop-\(index)")) }
        self.loops = loops
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        loops[counter.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// Stops every loop and waits for their threads.
    public func shutdown() {
        for loop in loops { loop.shutdown() }
        for loop in loops { loop.waitUntilFinished() }
    }
}
