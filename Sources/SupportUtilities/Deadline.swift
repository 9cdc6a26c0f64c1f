import Glibc

/// A point on the monotonic clock, in nanoseconds since boot: cheap to read and compare, never jumps.
public struct Deadline: Comparable, Hashable, Sendable {
    public let nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Now. Only I/O edges read the clock; state machines take it as an input.
    public static func now() -> Deadline {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Deadline(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: Deadline, rhs: Duration) -> Deadline {
        Deadline(nanoseconds: lhs.nanoseconds &+ rhs.nanosecondsClamped)
    }

    /// The same point as time since the clock's origin (boot), for state machines that take time as a `Duration`.
    public var sinceOrigin: Duration { .nanoseconds(Int64(clamping: nanoseconds)) }

    /// The point `sinceOrigin` after the clock's origin (negative values clamp to the origin).
    public init(sinceOrigin: Duration) { self.init(nanoseconds: sinceOrigin.nanosecondsClamped) }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    public func since(_ earlier: Deadline) -> Duration {
        nanoseconds > earlier.nanoseconds ? .nanoseconds(Int64(nanoseconds - earlier.nanoseconds)) : .zero
    }
}

extension Duration {
    /// Whole nanoseconds, clamped at zero and at about 292 years.
    package var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        guard seconds < 9_000_000_000 else { return UInt64(Int64.max) }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    /// Whole milliseconds (for the wire's keepalive field), clamped to `UInt32`.
    package var millisecondsClamped: UInt32 { UInt32(clamping: nanosecondsClamped / 1_000_000) }
}
