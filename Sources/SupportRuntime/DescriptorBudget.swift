internal import CLinuxShims
import SupportUtilities
import Glibc
import Synchronization

/// How many accepted connections the process may hold open, so that it never runs out of file descriptors.
///
/// A process at its descriptor limit is not only unable to accept: SQLite cannot open a temporary file, the control
/// socket cannot take a command, and libdispatch, which reads `/proc/<tid>/stat` to watch its worker threads, stops
/// the whole process when that `open` fails. So listeners take one place from the budget per accepted connection and
/// close a connection at once when none is left (``TLSListener`` "sheds" it), keeping ``reserve`` descriptors for
/// everything else.
public final class DescriptorBudget: Sendable {
    /// The process's budget, sized from `RLIMIT_NOFILE` when first used (after any ``raiseSoftLimit()``).
    public static let process = DescriptorBudget(limit: DescriptorBudget.softLimit())

    /// The descriptor limit the budget was made for.
    public let limit: Int
    /// Descriptors kept for everything but accepted connections: a quarter of the limit, at least 64 and at most 4,096
    /// (with a limit of 65 or less, all but the one place ``capacity`` always has).
    public let reserve: Int
    /// Accepted connections the process may hold at once.
    public let capacity: Int
    private let used = Atomic<Int>(0)

    /// A budget for a process whose descriptor limit is `limit`.
    public init(limit: Int) {
        self.limit = limit
        reserve = min(max(64, limit / 4), 4096)
        capacity = max(limit - reserve, 1)
    }

    /// Connections holding a place now.
    public var inUse: Int { used.load(ordering: .relaxed) }

    /// One place, or nil when all ``capacity`` are taken. The place is given back when the returned value is released.
    public func acquire() -> Place? {
        var current = used.load(ordering: .relaxed)
        while current < capacity {
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return Place(budget: self) }
            current = original
        }
        return nil
    }

    fileprivate func release() { used.subtract(1, ordering: .relaxed) }

    /// One accepted connection's place in a budget; it is given back when this value goes away.
    public final class Place: Sendable {
        private let budget: DescriptorBudget
        fileprivate init(budget: DescriptorBudget) { self.budget = budget }
        deinit { budget.release() }
    }

    /// The soft `RLIMIT_NOFILE` (1,024 when it cannot be read or is unlimited).
    public static func softLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft descriptor limit to the hard one, as a server started from a login shell (soft limit 1,024)
    /// would otherwise hold at most 768 connections. Call it before the first listener; returns the new soft limit.
    @discardableResult
    public static func raiseSoftLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return softLimit() }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return softLimit()
    }
}
