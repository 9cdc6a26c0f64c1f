import Glibc
import Synchronization

/// One of the supporter node's locks (``SupporterNode/sessions``, ``SupporterNode/people``): a `Mutex` held for
/// pure, in-memory work only, that counts how often it is taken and checks that the node's locks are never nested.
///
/// The count is one relaxed atomic add per take: the tests read it to hold the node to its lock budget (a REGISTER
/// takes the session lock twice and the people lock never; a sign-in never takes the session lock), and it is there
/// for diagnostics.
///
/// Never nested: no node lock is taken while the same thread holds one (an operation that needs both parts takes
/// them one after the other), so there is no lock order to keep. Debug builds (every test run) check it on each take
/// and stop the process naming the lock; release builds do not pay for the check.
struct NodeLock<Value: ~Copyable>: ~Copyable, Sendable {
    /// What the lock guards, for the message of a broken rule.
    let name: StaticString
    private let mutex: Mutex<Value>
    private let takeCount = Atomic<Int>(0)

    init(_ name: StaticString, _ value: consuming sending Value) {
        self.name = name
        mutex = Mutex(value)
    }

    /// How often the lock was taken so far.
    var takes: Int { takeCount.load(ordering: .relaxed) }

    /// Runs `body` with the state, under the lock. Never call it from inside another node lock's `body`.
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        takeCount.add(1, ordering: .relaxed)
        #if DEBUG
            precondition(
                pthread_getspecific(nodeLockHeldKey) == nil,
                "the node's \(name) lock taken while this thread holds one of its locks: they are never nested")
            pthread_setspecific(nodeLockHeldKey, UnsafeRawPointer(bitPattern: 1))
            defer { pthread_setspecific(nodeLockHeldKey, nil) }
        #endif
        return try mutex.withLock(body)
    }
}

#if DEBUG
    /// Set on a thread while it holds a node lock (any node's: no node lock is taken inside another node's either).
    private let nodeLockHeldKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for the node lock check")
        return key
    }()
#endif
