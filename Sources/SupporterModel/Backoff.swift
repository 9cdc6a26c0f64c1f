import SupportUtilities

/// How failures of one key (a source address, a session code, an API token, a REST client) are punished: the one
/// back-off policy type of the supporter node (SPEC §13).
///
/// After ``freeFailures`` failures, each further failure blocks the key for ``base``, doubling up to ``maximum``.
/// Failures decay: one is forgiven for every ``decayInterval`` without a failure, so an address that failed an hour
/// ago starts afresh (carrier-grade NAT puts many honest users behind one address). A success resets the key.
public struct BackoffPolicy: Sendable, Hashable {
    public var freeFailures: Int
    public var base: Duration
    public var maximum: Duration
    public var decayInterval: Duration

    public init(freeFailures: Int, base: Duration, maximum: Duration, decayInterval: Duration) {
        self.freeFailures = max(0, freeFailures)
        self.base = max(base, .milliseconds(1))
        self.maximum = max(maximum, self.base)
        self.decayInterval = max(decayInterval, .milliseconds(1))
    }

    /// How long the `failures`-th failure blocks its key (zero while failures are free).
    public func blockDuration(afterFailures failures: Int) -> Duration {
        guard failures > freeFailures else { return .zero }
        let exponent = min(failures - freeFailures - 1, 30)
        return min(base * (1 << exponent), maximum)
    }
}

/// The back-off state of many keys under one ``BackoffPolicy``. A value: time is an input (any clock's time since its
/// origin; the supporter node uses wall-clock time since 1970 so stored rows mean the same after a restart).
///
/// Bounded: at most ``capacity`` keys. When full, keys whose failures have decayed to zero are dropped first, then
/// the keys whose last failure is oldest.
public struct BackoffTable: Sendable {
    public let policy: BackoffPolicy
    public let capacity: Int

    public struct Entry: Sendable, Hashable {
        /// Failures counted at ``lastFailure`` (before decay).
        public var failures: Int
        public var lastFailure: Duration
        /// Blocked while `now < blockedUntil`.
        public var blockedUntil: Duration

        public init(failures: Int, lastFailure: Duration, blockedUntil: Duration) {
            self.failures = failures
            self.lastFailure = lastFailure
            self.blockedUntil = blockedUntil
        }
    }

    private var entries: [String: Entry] = [:]

    public init(policy: BackoffPolicy, capacity: Int = 100_000) {
        self.policy = policy
        self.capacity = max(1, capacity)
    }

    /// Failures of `key` still counted at `now`, after decay.
    public func failures(_ key: String, now: Duration) -> Int {
        guard let entry = entries[key] else { return 0 }
        return decayed(entry, now: now)
    }

    private func decayed(_ entry: Entry, now: Duration) -> Int {
        guard now > entry.lastFailure else { return entry.failures }
        let forgiven = (now - entry.lastFailure) / policy.decayInterval
        return max(0, entry.failures - Int(forgiven.rounded(.down)))
    }

    /// How long `key` must still wait, or nil when it may try now.
    public func retryAfter(_ key: String, now: Duration) -> Duration? {
        guard let entry = entries[key], entry.blockedUntil > now else { return nil }
        return entry.blockedUntil - now
    }

    /// Counts a failure of `key`; returns how long the key is now blocked (nil when the failure was free).
    @discardableResult
    public mutating func recordFailure(_ key: String, now: Duration) -> Duration? {
        let previous = entries[key].map { decayed($0, now: now) } ?? 0
        let failures = previous + 1
        let block = policy.blockDuration(afterFailures: failures)
        let blockedUntil = block > .zero ? now + block : (entries[key]?.blockedUntil ?? .zero)
        if entries[key] == nil, entries.count >= capacity { evict(now: now) }
        entries[key] = Entry(failures: failures, lastFailure: now, blockedUntil: blockedUntil)
        return block > .zero ? block : nil
    }

    /// Forgets `key` (a success). True when something was recorded for it.
    @discardableResult
    public mutating func reset(_ key: String) -> Bool { entries.removeValue(forKey: key) != nil }

    /// What is recorded for `key`, to store it.
    public func entry(_ key: String) -> Entry? { entries[key] }

    /// Puts back a stored entry (after a restart), so blocks outlive the process.
    public mutating func restore(_ key: String, _ entry: Entry) {
        if entries[key] == nil, entries.count >= capacity { return }
        entries[key] = entry
    }

    /// Keys recorded.
    public var count: Int { entries.count }

    /// Drops keys that are neither blocked nor carry a failure any more.
    public mutating func forgetDecayed(now: Duration) {
        entries = entries.filter { $0.value.blockedUntil > now || decayed($0.value, now: now) > 0 }
    }

    private mutating func evict(now: Duration) {
        forgetDecayed(now: now)
        guard entries.count >= capacity else { return }
        // Still full of live keys: drop the tenth whose last failure is oldest.
        let victims = entries.sorted { $0.value.lastFailure < $1.value.lastFailure }.prefix(max(1, capacity / 10))
        for (key, _) in victims { entries[key] = nil }
    }
}
