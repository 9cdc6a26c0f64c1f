/// A token bucket: `rate` tokens a second, at most `burst` kept. A value, like the session machines: time is an input
/// (any clock's time since its origin), nothing is read inside.
///
/// Two ways to use it: ``take(_:now:)`` admits only what the bucket holds (a budget of new connections);
/// ``spend(_:now:)`` always charges and says how long the debt takes to repay (a sender that is then not read from
/// until it has).
public struct TokenBucket: Sendable, Hashable {
    public let rate: Double
    public let burst: Double
    public private(set) var tokens: Double
    /// When the bucket was last refilled (nil: never used, full).
    public private(set) var updated: Duration?

    public init(rate: Double, burst: Double) {
        self.rate = max(0, rate)
        self.burst = max(0, burst)
        tokens = self.burst
    }

    private mutating func refill(now: Duration) {
        if let updated, now > updated { tokens = min(burst, tokens + (now - updated).seconds * rate) }
        updated = max(now, updated ?? now)
    }

    /// Takes `cost` if the bucket holds it; false (and nothing taken) if not.
    public mutating func take(_ cost: Double = 1, now: Duration) -> Bool {
        refill(now: now)
        guard tokens >= cost else { return false }
        tokens -= cost
        return true
    }

    /// Takes `cost` even past empty; the time until the bucket is back at zero when it went into debt, else nil.
    public mutating func spend(_ cost: Double, now: Duration) -> Duration? {
        refill(now: now)
        tokens -= cost
        guard tokens < 0 else { return nil }
        return rate > 0 ? .nanoseconds(Int64((-tokens / rate * 1e9).rounded(.up))) : .seconds(3600)
    }
}
