/// Audit rows an attacker can trigger at will (refused device registrations, failed REST authentications), kept to a
/// bounded number (SPEC §13): at most one row per key (a source address) per window, and at most
/// ``Policy/globalLimit`` rows per window over all keys. Whatever is held back is counted, and reported as one
/// aggregate per key when its window closes (``flush(now:)``), plus one aggregate for everything over the global limit.
///
/// A value, like ``BackoffTable``: time is an input (any clock's time since its origin), nothing is read inside.
/// Bounded: at most ``Policy/keys`` keys are tracked; beyond it new keys count toward the global aggregate.
public struct AuditThrottle: Sendable {
    /// The window and the bounds.
    public struct Policy: Sendable, Hashable {
        /// One row per key per window; later events of the key in its window are only counted.
        public var window: Duration
        /// Rows per window over all keys; beyond it events are only counted (one aggregate row).
        public var globalLimit: Int
        /// Keys tracked at once; beyond it new keys count toward the global aggregate.
        public var keys: Int

        public init(window: Duration = .seconds(60), globalLimit: Int = 600, keys: Int = 10_000) {
            self.window = max(window, .milliseconds(1))
            self.globalLimit = max(0, globalLimit)
            self.keys = max(0, keys)
        }
    }

    /// Events held back in one window: of one key, or (``key`` nil) of every key over the global bounds.
    public struct Suppressed: Sendable, Hashable {
        /// The key, or nil for the global aggregate.
        public var key: String?
        /// Events held back.
        public var count: Int
        /// When the window began.
        public var since: Duration

        public init(key: String?, count: Int, since: Duration) {
            self.key = key
            self.count = count
            self.since = since
        }
    }

    private struct Window: Sendable {
        var start: Duration
        var suppressed: Int
    }

    public let policy: Policy
    private var windows: [String: Window] = [:]
    private var global = Window(start: .zero, suppressed: 0)
    private var globalRows = 0

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Whether an event of `key` at `now` gets its own audit row. False: it was counted, and is reported by
    /// ``flush(now:)`` when its window closes.
    public mutating func admit(_ key: String, now: Duration) -> Bool {
        if now - global.start >= policy.window {
            global.start = now
            globalRows = 0
        }
        if var window = windows[key], now - window.start < policy.window {
            window.suppressed += 1
            windows[key] = window
            return false
        }
        guard globalRows < policy.globalLimit, windows[key] != nil || windows.count < policy.keys else {
            global.suppressed += 1
            return false
        }
        globalRows += 1
        windows[key] = Window(start: now, suppressed: 0)
        return true
    }

    /// Closes the windows that have run out (all of them with `everything`, at shutdown): the counts they held back,
    /// the global aggregate (``Suppressed/key`` nil) last. Windows that held nothing back close silently.
    public mutating func flush(now: Duration, everything: Bool = false) -> [Suppressed] {
        var out: [Suppressed] = []
        for (key, window) in windows where everything || now - window.start >= policy.window {
            windows[key] = nil
            if window.suppressed > 0 { out.append(Suppressed(key: key, count: window.suppressed, since: window.start)) }
        }
        out.sort { ($0.since, $0.key ?? "") < ($1.since, $1.key ?? "") }
        if everything || now - global.start >= policy.window {
            if global.suppressed > 0 { out.append(Suppressed(key: nil, count: global.suppressed, since: global.start)) }
            global = Window(start: now, suppressed: 0)
            globalRows = 0
        }
        return out
    }

    /// Keys whose window is open.
    public var trackedKeys: Int { windows.count }
}
