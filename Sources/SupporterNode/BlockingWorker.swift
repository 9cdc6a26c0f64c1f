import Dispatch
import Foundation
import Synchronization

/// A thread for blocking work asked for by async callers: scrypt (hashing and checking passwords, 50–100 ms each) and
/// synchronous store writes (API tokens), so that it never runs on an event loop or holds one of Swift's cooperative
/// threads. One job at a time; at most ``capacity`` wait, and a job beyond
/// that is refused at once (the caller answers "busy, try again") rather than queued without end.
final class BlockingWorker: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        /// The thread starts with the first job: a worker that never gets one (a node whose init failed after making
        /// it) leaves no thread behind.
        var threadStarted = false
    }

    /// Jobs that may wait.
    let capacity: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    init(capacity: Int = 32) {
        self.capacity = capacity
    }

    /// Runs `work` on the worker's thread; nil when ``capacity`` jobs are waiting already (or the worker stopped).
    func run<Result: Sendable>(_ work: @escaping @Sendable () -> Result) async -> Result? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
            let (queued, startThread) = state.withLock { state -> (Bool, Bool) in
                guard !state.stopping, state.jobs.count < capacity else { return (false, false) }
                state.jobs.append { continuation.resume(returning: work()) }
                defer { state.threadStarted = true }
                return (true, !state.threadStarted)
            }
            if startThread {
                let thread = Thread { [self] in self.loop() }
                thread.name = "rsup-blocking"
                thread.start()
            }
            if queued { wake.signal() } else { continuation.resume(returning: nil) }
        }
    }

    /// Whether the thread was started (by a first job).
    var hasThread: Bool { state.withLock { $0.threadStarted } }

    /// Ends the thread once the waiting jobs ran; later jobs are refused.
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
    }

    private func loop() {
        while true {
            wake.wait()
            while let job = state.withLock({ state -> (@Sendable () -> Void)? in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }) {
                job()
            }
            if state.withLock({ $0.stopping && $0.jobs.isEmpty }) { return }
        }
    }
}
