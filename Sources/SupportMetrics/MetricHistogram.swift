import Synchronization

/// A Prometheus histogram of durations in seconds: how many observations fell at or under each bucket's upper bound,
/// their sum and their count. Fixed buckets, so its memory is bounded whatever is observed.
public final class MetricHistogram: Sendable {
    /// The buckets' upper bounds, ascending (`+Inf` is implied).
    public let bounds: [Double]

    private struct State {
        /// Observations per bucket (not cumulative); the last one is `+Inf`.
        var counts: [Int]
        var sum: Double = 0
    }

    private let state: Mutex<State>

    /// Bounds for latencies from a millisecond to a minute: what a commit, a routed command or an answer takes.
    public static let latencyBounds: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]

    /// `bounds` ascending and finite (others are dropped).
    public init(bounds: [Double] = MetricHistogram.latencyBounds) {
        let sorted = Array(Set(bounds.filter(\.isFinite))).sorted()
        self.bounds = sorted
        state = Mutex(State(counts: Array(repeating: 0, count: sorted.count + 1)))
    }

    /// Counts one observation of `seconds`.
    public func observe(_ seconds: Double) {
        guard seconds.isFinite else { return }
        // The first bucket whose bound holds it; bounds are few (15), a linear look is as fast as a binary one.
        let index = bounds.firstIndex { seconds <= $0 } ?? bounds.count
        state.withLock { state in
            state.counts[index] += 1
            state.sum += seconds
        }
    }

    /// Counts one observation of `duration`.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Cumulative counts per bound (the last is `+Inf`, the total), and the sum.
    public var snapshot: (cumulative: [Int], sum: Double) {
        let (counts, sum) = state.withLock { ($0.counts, $0.sum) }
        var running = 0
        return (counts.map { running += $0; return running }, sum)
    }
}
