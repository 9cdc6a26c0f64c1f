import Synchronization

/// A Prometheus counter: a count that only goes up, from the process's start. Lock-free (one atomic add), so the
/// node's hot paths (a registration, a frame) can count on it.
public final class MetricCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    /// Adds `amount` (not negative: a counter never goes down).
    public func increment(by amount: Int = 1) {
        guard amount > 0 else { return }
        count.add(amount, ordering: .relaxed)
    }

    public var value: Int { count.load(ordering: .relaxed) }
}
