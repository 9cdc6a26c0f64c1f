/// Sign-in rate limits for supporter accounts: a value, like the code registry; time is an input.
///
/// Two back-offs of the node's one type (``BackoffPolicy``):
/// - per client address: 5 free failures, then blocked 1 s doubling to 300 s, one failure forgiven per 60 s; checked
///   before the password is hashed, so a blocked guesser costs no scrypt work;
/// - per account: 10 free failures from anywhere, then the same doubling block — but only for addresses from which
///   that account has not signed in during the last 30 days. An attacker spreading guesses over many addresses is
///   slowed down, and cannot lock the account's owner out from where the owner works (the owner's own wrong
///   passwords still count against the owner's address).
/// A right password resets the address's count and the account's.
///
/// Bounded: ``Policy/keys`` addresses and accounts each; ``Policy/knownAddresses`` remembered per account.
public struct LoginGuard: Sendable {
    public struct Policy: Sendable, Hashable {
        public var perAddress = BackoffPolicy(
            freeFailures: 5, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        public var perAccount = BackoffPolicy(
            freeFailures: 10, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        /// How long an address where an account signed in stays exempt from that account's back-off.
        public var knownFor: Duration = .seconds(30 * 24 * 3600)
        /// Addresses remembered per account (the most recent).
        public var knownAddresses = 16
        /// Addresses and accounts tracked.
        public var keys = 10_000
        public init() {}
    }

    public let policy: Policy
    private var addresses: BackoffTable
    private var accounts: BackoffTable
    /// Account → (address → last successful sign-in).
    private var known: [String: [String: Duration]] = [:]

    public init(policy: Policy = Policy()) {
        self.policy = policy
        addresses = BackoffTable(policy: policy.perAddress, capacity: policy.keys)
        accounts = BackoffTable(policy: policy.perAccount, capacity: policy.keys)
    }

    /// How long a sign-in to `login` from `address` must wait before it is even checked; nil: check it now.
    public func retryAfter(login: String, address: String, now: Duration) -> Duration? {
        let byAddress = addresses.retryAfter(address, now: now)
        let byAccount = isKnown(login: login, address: address, now: now) ? nil : accounts.retryAfter(login, now: now)
        switch (byAddress, byAccount) {
        case (nil, nil): return nil
        case (let a?, nil): return a
        case (nil, let b?): return b
        case (let a?, let b?): return max(a, b)
        }
    }

    /// A wrong login or password.
    public mutating func recordFailure(login: String, address: String, now: Duration) {
        addresses.recordFailure(address, now: now)
        accounts.recordFailure(login, now: now)
    }

    /// A right password.
    public mutating func recordSuccess(login: String, address: String, now: Duration) {
        addresses.reset(address)
        accounts.reset(login)
        var addressesOfAccount = known[login] ?? [:]
        addressesOfAccount[address] = now
        if addressesOfAccount.count > policy.knownAddresses,
            let oldest = addressesOfAccount.min(by: { $0.value < $1.value })?.key
        {
            addressesOfAccount[oldest] = nil
        }
        if known[login] == nil, known.count >= policy.keys, let any = known.keys.first { known[any] = nil }
        known[login] = addressesOfAccount
    }

    /// Failures still counted against `address`.
    public func failures(address: String, now: Duration) -> Int { addresses.failures(address, now: now) }

    /// Drops decayed counts and addresses no longer known.
    public mutating func tick(now: Duration) {
        addresses.forgetDecayed(now: now)
        accounts.forgetDecayed(now: now)
        known = known.compactMapValues { entries in
            let kept = entries.filter { now - $0.value < policy.knownFor }
            return kept.isEmpty ? nil : kept
        }
    }

    private func isKnown(login: String, address: String, now: Duration) -> Bool {
        guard let last = known[login]?[address] else { return false }
        return now - last < policy.knownFor
    }
}
