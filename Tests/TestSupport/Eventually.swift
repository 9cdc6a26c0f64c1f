import Glibc
import Synchronization

/// A Mutex in a class, so closures can share it.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: every access goes through the Mutex.
    private let mutex: Mutex<Value>
    public init(_ value: sending Value) { mutex = Mutex(value) }
    public func withLock<T>(_ body: (inout sending Value) throws -> sending T) rethrows -> sending T {
        try mutex.withLock(body)
    }
}

/// A condition a test waited for did not come true in time.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// How long a test waits for something that must happen before it calls it a failure. A deadline, never an expected
/// duration: every wait ends as soon as its condition holds, so a generous value costs nothing on a passing run and
/// keeps a loaded 2-core machine (a CPU hog on both cores) from failing a correct test.
public let waitDeadline: Duration = .seconds(60)

// MARK: the suite's wall clock
//
// Every wait in the tests is built on the two pauses below, and nothing else in Tests/ sleeps for a fixed time. A test
// waits on an event where one exists (an AsyncStream, a continuation resumed by a callback, a child's output line);
// these are for state that announces nothing (a counter in another thread, a row in a table, a file's size) and for
// the deadline that ends a wait which never comes true.

/// Pauses the calling task for `duration`; false when the task was cancelled (the wait it served is over).
@discardableResult
public func wallClockPause(_ duration: Duration) async -> Bool {
    // wall clock: the one asynchronous pause, between two looks at a condition and as a deadline's timer
    (try? await Task.sleep(for: duration)) != nil
}

/// Polls `condition` (on this thread, blocking it) until it holds or `timeout` passes; whether it held. For code that
/// cannot suspend: a loop's thread, or a moment when a task's timer cannot be made (no file descriptors left).
public func waitUntilBlocking(timeout: Duration = waitDeadline, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while !condition() {
        if clock.now >= end { return false }
        // wall clock: the one blocking pause, between two looks at a condition that no event announces
        usleep(1_000)
    }
    return true
}

// MARK: waiting helpers

/// Polls `condition` until it returns a value or `timeout` passes (then throws ``WaitTimeout``).
@discardableResult
public func eventually<T>(
    _ what: String, timeout: Duration = waitDeadline, isolation: isolated (any Actor)? = #isolation,
    _ condition: () throws -> T?
) async throws -> T {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while true {
        if let value = try condition() { return value }
        if clock.now >= end { throw WaitTimeout(description: "timed out after \(timeout) waiting for \(what)") }
        guard await wallClockPause(.milliseconds(5)) else { throw CancellationError() }
    }
}

/// Polls `condition` until it holds or `timeout` passes; whether it held.
public func waitUntil(
    timeout: Duration = waitDeadline, isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while !condition() {
        if clock.now >= end { return false }
        guard await wallClockPause(.milliseconds(5)) else { return condition() }
    }
    return true
}

/// Runs `action` once `timeout` has passed, unless the returned task is cancelled first (the awaited thing came).
public func afterDeadline(
    _ timeout: Duration = waitDeadline, _ action: @escaping @Sendable () -> Void
) -> Task<Void, Never> {
    Task {
        if await wallClockPause(timeout) { action() }
    }
}

/// Waits for the value a callback delivers: `register` is given the function to call (at most the first call counts).
/// Nil if `timeout` passes first. Event-driven: it returns the moment the callback runs.
public func waitForCallback<T: Sendable>(
    timeout: Duration = waitDeadline, _ register: (@escaping @Sendable (T) -> Void) -> Void
) async -> T? {
    let shot = OneShot<T>()
    register { shot.resume($0) }
    let timer = afterDeadline(timeout) { shot.resume(nil) }
    defer { timer.cancel() }
    return await shot.value()
}

/// A value delivered once, from any thread, to one waiting task.
public final class OneShot<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T?, Never>?, result: T??)>((nil, nil))

    public init() {}

    /// Delivers `value` (nil: gave up); later calls are ignored.
    public func resume(_ value: T?) {
        let waiting = state.withLock { state -> CheckedContinuation<T?, Never>? in
            guard state.result == nil else { return nil }
            state.result = .some(value)
            defer { state.continuation = nil }
            return state.continuation
        }
        waiting?.resume(returning: value)
    }

    /// The delivered value, once there is one.
    public func value() async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let done = state.withLock { state -> T?? in
                if let result = state.result { return result }
                state.continuation = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

/// Tries `body` until it succeeds or `timeout` passes (then rethrows its last error): for an operation that fails
/// until a state the test cannot observe comes about (a database back after a restart).
public func retrying<T>(
    _ what: String, timeout: Duration = waitDeadline, isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> T
) async throws -> T {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while true {
        do {
            return try await body()
        } catch {
            if clock.now >= end { throw error }
            guard await wallClockPause(.milliseconds(20)) else { throw error }
        }
    }
}
