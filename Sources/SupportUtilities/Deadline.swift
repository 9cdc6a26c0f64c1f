#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// `lhs` moved by `rhs`, saturating at the clock's origin and its far end (never wrapping).
    public static func + (lhs: Deadline, rhs: Duration) -> Deadline {
        let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(rhs.nanosecondsClamped)
        return Deadline(nanoseconds: overflow ? .max : sum)
    }

    /// `lhs` moved back by `rhs`, saturating at the clock's origin.
    public static func - (lhs: Deadline, rhs: Duration) -> Deadline {
        let amount = rhs.nanosecondsClamped
        return Deadline(nanoseconds: lhs.nanoseconds > amount ? lhs.nanoseconds - amount : 0)
    }

    /// The same point as time since the clock's origin (boot), for state machines that take time as a `Duration`.
    public var sinceOrigin: Duration { .nanoseconds(Int64(clamping: nanoseconds)) }

    /// The point `sinceOrigin` after the clock's origin (negative values clamp to the origin).
    public init(sinceOrigin: Duration) { self.init(nanoseconds: sinceOrigin.nanosecondsClamped) }

    /// The point `duration` after the clock's origin: for tests and virtual clocks, which choose their own "now"
    /// (`machine.tick(now: .seconds(90))`).
    public static func seconds(_ seconds: Int64) -> Deadline { Deadline(sinceOrigin: .seconds(seconds)) }
    public static func milliseconds(_ milliseconds: Int64) -> Deadline { Deadline(sinceOrigin: .milliseconds(milliseconds)) }
    /// The clock's origin.
    public static let zero = Deadline(nanoseconds: 0)

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    public func since(_ earlier: Deadline) -> Duration {
        nanoseconds > earlier.nanoseconds ? .nanoseconds(Int64(nanoseconds - earlier.nanoseconds)) : .zero
    }
}

extension Duration {
    /// Whole nanoseconds, clamped at zero and at about 292 years.
    package var nanosecondsClamped: UInt64 {
        // From the 128-bit attoseconds: `components` traps for durations beyond Int64.max seconds.
        let nanoseconds = attoseconds / 1_000_000_000
        guard nanoseconds > 0 else { return 0 }
        return nanoseconds >= Int128(Int64.max) ? UInt64(Int64.max) : UInt64(nanoseconds)
    }

    /// In seconds, fractions included (for rates and for people).
    package var seconds: Double { Double(attoseconds) / 1e18 }

    /// Whole milliseconds (for the wire's keepalive field), clamped to `UInt32`.
    package var millisecondsClamped: UInt32 { UInt32(clamping: nanosecondsClamped / 1_000_000) }
}
