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

/// Polls `condition` until it returns a value or `timeout` passes. Generous timeouts: the machine is loaded.
@discardableResult
public func eventually<T>(
    _ what: String, timeout: Duration = .seconds(10), _ condition: () throws -> T?
) async throws -> T {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while true {
        if let value = try condition() { return value }
        if clock.now >= end { throw WaitTimeout(description: "timed out after \(timeout) waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

