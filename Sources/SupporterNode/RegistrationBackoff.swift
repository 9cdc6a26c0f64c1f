/// Exponential back-off for failed registrations, per session code and per source address (SPEC §13).
///
/// A value with time as input: `now` is any clock's time since its origin; the supporter node uses wall-clock time
/// since 1970, so stored entries stay meaningful across restarts. After `freeFailures` failures a key is
/// blocked for `base`, doubling with each further failure up to `maximum`; a success clears the code's key.
public struct RegistrationBackoff: Sendable {
    public var freeFailures: Int = 3
    public var base: Duration = .milliseconds(500)
    public var maximum: Duration = .seconds(300)
    /// Keys forgotten this long after their last failure.
    public var forgetAfter: Duration = .seconds(3600)

    private struct Entry: Sendable {
        var failures: Int
        var blockedUntil: Duration
        var lastFailure: Duration
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    /// How long `key` must still wait, or nil when it may try now.
    public func retryAfter(_ key: String, now: Duration) -> Duration? {
        guard let entry = entries[key], entry.blockedUntil > now else { return nil }
        return entry.blockedUntil - now
    }

    /// Records a failure for `key`.
    public mutating func recordFailure(_ key: String, now: Duration) {
        var entry = entries[key] ?? Entry(failures: 0, blockedUntil: .zero, lastFailure: now)
        entry.failures += 1
        entry.lastFailure = now
        if entry.failures >= freeFailures {
            let exponent = min(entry.failures - freeFailures, 30)
            let delay = min(base * (1 << exponent), maximum)
            entry.blockedUntil = now + delay
        }
        entries[key] = entry
        if entries.count > 100_000 { forgetOld(now: now) }
    }

    /// Clears `key` after a success.
    public mutating func recordSuccess(_ key: String) { entries[key] = nil }

    /// Drops keys idle for ``forgetAfter``, so memory stays bounded under a scan.
    public mutating func forgetOld(now: Duration) {
        entries = entries.filter { now - $0.value.lastFailure < forgetAfter }
    }

    /// Failures recorded for `key`.
    public func failures(_ key: String) -> Int { entries[key]?.failures ?? 0 }

    /// What is recorded for `key`, to store it: failures, blocked-until and last failure on the caller's clock.
    public func state(of key: String) -> (failures: Int, blockedUntil: Duration?, lastFailure: Duration)? {
        guard let entry = entries[key] else { return nil }
        return (entry.failures, entry.blockedUntil > .zero ? entry.blockedUntil : nil, entry.lastFailure)
    }

    /// Puts back a stored entry (after a restart), so bans outlive the process.
    public mutating func restore(key: String, failures: Int, blockedUntil: Duration?, lastFailure: Duration) {
        entries[key] = Entry(failures: failures, blockedUntil: blockedUntil ?? .zero, lastFailure: lastFailure)
    }
}
