#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a node reads the time: the wall clock (for records, audit rows, expiries people see) and the monotonic clock
/// (for deadlines, timers and rates). Injected into the supporter node, the REST server and the device SDK, so that
/// nothing above the event loop reads a clock of its own: ``SystemClock`` in production, an embedded event loop's
/// virtual clock in tests (`EventLoop.clock`), where both move only when the test advances the loop.
///
/// Pure cores take the time as an input; only glue reads a `NodeClock`.
public protocol NodeClock: Sendable {
    /// Now on the wall clock.
    var wallTime: Date { get }
    /// Now on the monotonic clock: what the event loop's timers measure with.
    var monotonic: Deadline { get }
}

/// The real clocks: `Date()` and `CLOCK_MONOTONIC` (``Deadline/now()``).
public struct SystemClock: NodeClock {
    public init() {}
    public var wallTime: Date { Date() }
    public var monotonic: Deadline { Deadline.now() }
}
