internal import CLinuxShims
import SupportUtilities
internal import COpenSSL
import Foundation
import Synchronization

/// Looks up host names with the blocking `getaddrinfo` on a few threads of its own, never on an event loop or the
/// Swift cooperative pool (where one slow DNS server would hold a thread every task needs).
///
/// IP literals are answered at once without a lookup. At most ``threadCount`` lookups run at a time; at most
/// ``queueLimit`` more wait. A lookup asked for while that many wait is refused at once with `resolver_busy` (nothing
/// is queued), so a burst of dials to an unreachable DNS cannot pile up without end. Threads are started on demand and
/// end when no lookup waits.
///
/// A task cancelled while its lookup waits or runs still waits for it: `getaddrinfo` cannot be interrupted.
public final class NameResolver: Sendable {
    /// The resolver ``TLSDialer`` uses: 2 threads, 64 waiting lookups.
    public static let shared = NameResolver(threadCount: 2, queueLimit: 64)

    /// Lookups that run at once, each on a thread of its own.
    public let threadCount: Int
    /// Lookups that may wait for a thread; one more is refused with `resolver_busy`.
    public let queueLimit: Int
    private let lookup: @Sendable (String, UInt16) throws(TransportError) -> [SocketAddress]
    private let state = Mutex(State())

    private struct Job {
        let host: String
        let port: UInt16
        let continuation: CheckedContinuation<Result<[SocketAddress], TransportError>, Never>
    }

    private struct State {
        var waiting: [Job] = []
        var head = 0
        var workers = 0
        var waitingCount: Int { waiting.count - head }

        mutating func take() -> Job? {
            guard head < waiting.count else { return nil }
            let job = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }
    }

    /// A resolver with `threadCount` threads (at least 1) and room for `queueLimit` waiting lookups.
    public convenience init(threadCount: Int, queueLimit: Int) {
        self.init(threadCount: threadCount, queueLimit: queueLimit) { host, port throws(TransportError) in
            try SocketAddress.resolve(host: host, port: port)
        }
    }

    /// For tests: the blocking lookup is `lookup`.
    package init(
        threadCount: Int, queueLimit: Int,
        lookup: @escaping @Sendable (String, UInt16) throws(TransportError) -> [SocketAddress]
    ) {
        self.threadCount = max(1, threadCount)
        self.queueLimit = max(0, queueLimit)
        self.lookup = lookup
    }

    /// The addresses of `host` (a name or an IP literal) with `port`.
    ///
    /// Throws `name_resolution` when the name does not resolve, and `resolver_busy` at once when ``queueLimit``
    /// lookups already wait.
    public func resolve(host: String, port: UInt16) async throws(TransportError) -> [SocketAddress] {
        if let literal = SocketAddress.literal(host: host, port: port) { return [literal] }
        let queueLimit = self.queueLimit
        let result: Result<[SocketAddress], TransportError> = await withCheckedContinuation { continuation in
            let (accepted, startWorker) = state.withLock { state -> (Bool, Bool) in
                // Room for a job that a worker will take at once, plus `queueLimit` that wait.
                guard state.waitingCount < queueLimit + max(0, threadCount - state.workers) else {
                    return (false, false)
                }
                state.waiting.append(Job(host: host, port: port, continuation: continuation))
                guard state.workers < threadCount else { return (true, false) }
                state.workers += 1
                return (true, true)
            }
            guard accepted else {
                continuation.resume(
                    returning: .failure(
                        TransportError(
                            .resolverBusy,
                            "cannot resolve '\(host)' now: \(queueLimit) name lookups already wait for the resolver; "
                                + "try again later, or check that DNS answers")))
                return
            }
            if startWorker {
                // Named from inside, by the kernel call itself: on Linux, Foundation applies a name set before
                // start() to no thread, and its setter from inside did not always reach the kernel (a new thread
                // starts with its creator's name, e.g. a Dispatch worker's).
                let thread = Thread { [self] in
                    _ = rs_set_thread_name("rsup-resolver")
                    self.work()
                }
                thread.start()
            }
        }
        return try result.get()
    }

    /// Lookups waiting for a thread now (for tests and diagnostics).
    public var waitingCount: Int { state.withLock { $0.waitingCount } }

    /// A worker thread: takes jobs until none waits, then ends.
    private func work() {
        while true {
            let job = state.withLock { state -> Job? in
                if let job = state.take() { return job }
                state.workers -= 1
                return nil
            }
            guard let job else { return }
            let result: Result<[SocketAddress], TransportError>
            do throws(TransportError) {
                result = .success(try lookup(job.host, job.port))
            } catch {
                result = .failure(error)
            }
            job.continuation.resume(returning: result)
        }
    }
}
