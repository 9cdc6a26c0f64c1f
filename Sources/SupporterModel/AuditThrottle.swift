import SupportUtilities

/// Audit rows an attacker can trigger at will (refused device registrations, failed REST authentications), kept to a
/// bounded number (SPEC §13): at most ``Policy/rowsPerKey`` rows per key (a source address) per window, and at most
/// ``Policy/globalLimit`` rows per window over all keys. A key's window opens with its first event (fixed windows). Whatever is held back is counted, and reported as one
/// aggregate per key when its window closes (``flush(now:)``), plus one aggregate for everything over the global limit.
///
/// A value, like ``BackoffTable``: time is an input (any clock's time since its origin), nothing is read inside.
/// Bounded: at most ``Policy/keys`` keys are tracked; beyond it new keys count toward the global aggregate.
public struct AuditThrottle: Sendable {
    /// The window and the bounds.
    public struct Policy: Sendable, Hashable {
        /// The length of a key's window; events of the key beyond its rows in the window are only counted.
        public var window: Duration
        /// Rows per key per window.
        public var rowsPerKey: Int
        /// Rows per window over all keys; beyond it events are only counted (one aggregate row).
        public var globalLimit: Int
        /// Keys tracked at once; beyond it new keys count toward the global aggregate.
        public var keys: Int

        public init(window: Duration = .seconds(60), rowsPerKey: Int = 1, globalLimit: Int = 600, keys: Int = 10_000) {
            self.window = max(window, .milliseconds(1))
            self.rowsPerKey = max(0, rowsPerKey)
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
        var rows = 0
    }

    public let policy: Policy
    private var windows: [String: Window] = [:]
    private var global = Window(start: .zero, suppressed: 0)
    private var globalRows = 0

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Whether an event of `key` at `now` gets its own audit row. False: it was counted, and is reported by
    /// ``flush(now:everything:)`` when its window closes. `countOnly` events never get a row of their own (a refusal
    /// while already rate-limited).
    public mutating func admit(_ key: String, now: Duration, countOnly: Bool = false) -> Bool {
        if now - global.start >= policy.window {
            global.start = now
            globalRows = 0
        }
        var window = windows[key]
        // A run-out window that held nothing back has nothing to flush: the key starts a new one. One that held
        // something back keeps counting until ``flush(now:everything:)`` reports it, so no count is lost.
        if let current = window, now - current.start >= policy.window, current.suppressed == 0 { window = nil }
        guard var current = window else {
            guard windows.count < policy.keys || windows[key] != nil else {
                global.suppressed += 1
                return false
            }
            if countOnly {
                windows[key] = Window(start: now, suppressed: 1)
                return false
            }
            guard globalRows < policy.globalLimit, policy.rowsPerKey > 0 else {
                global.suppressed += 1
                return false
            }
            globalRows += 1
            windows[key] = Window(start: now, suppressed: 0, rows: 1)
            return true
        }
        if countOnly || current.rows >= policy.rowsPerKey || globalRows >= policy.globalLimit {
            current.suppressed += 1
            windows[key] = current
            return false
        }
        current.rows += 1
        globalRows += 1
        windows[key] = current
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
