internal import SupportUtilities
import SupportWire
public import SupporterModel

/// Sign-in rate limits for supporter accounts: a value, like the code registry; time is an input.
///
/// Two back-offs of the node's one type (``BackoffPolicy``):
/// - per client address: 5 free failures, then blocked 1 s doubling to 300 s, one failure forgiven per 60 s; checked
///   before the password is hashed, so a blocked guesser costs no scrypt work;
/// - per account: 10 free failures from anywhere, then the same doubling block — but only for addresses from which
///   that account has not signed in during the last 30 days. An attacker spreading guesses over many addresses is
///   slowed down, and cannot lock the account's owner out from where the owner works (the owner's own wrong
///   passwords still count against the owner's address).
/// A right password resets the address's count and the account's. An address counts by its key
/// (``IPAddressText/sourceKey(_:)``: an IPv6 client's whole /64), whichever form callers pass.
///
/// Simultaneous attempts: a sign-in is checked between ``beginAttempt(login:address:now:)`` and
/// ``finishAttempt(login:address:_:now:)``, and while it is checked it counts as a failure to come. So a burst of
/// attempts sent at once gets exactly as many password checks as the same attempts one after another would (6 from
/// one address, 11 on one account); the rest wait as if the block had begun.
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
    /// Attempts begun and not yet finished, by address and by account. Bounded by the attempts checked at once.
    private var checkingFrom: [String: Int] = [:]
    private var checkingOf: [String: Int] = [:]

    /// How an attempt begun with ``beginAttempt(login:address:now:)`` ended.
    public enum AttemptOutcome: Sendable {
        /// A wrong login or password: counted.
        case wrong
        /// The right password: resets the address and the account.
        case right
        /// Not decided by its password (the node was too busy to check it, the account is disabled): not counted.
        case unchecked
    }

    public init(policy: Policy = Policy()) {
        self.policy = policy
        addresses = BackoffTable(policy: policy.perAddress, capacity: policy.keys)
        accounts = BackoffTable(policy: policy.perAccount, capacity: policy.keys)
    }

    /// How long a sign-in to `login` from `address` must wait before it is even checked; nil: check it now.
    public func retryAfter(login: String, address: String, now: Duration) -> Duration? {
        let address = IPAddressText.sourceKey(address)
        let byAddress = addresses.retryAfter(address, now: now)
        let byAccount = isKnown(login: login, address: address, now: now) ? nil : accounts.retryAfter(login, now: now)
        switch (byAddress, byAccount) {
        case (nil, nil): return nil
        case (let a?, nil): return a
        case (nil, let b?): return b
        case (let a?, let b?): return max(a, b)
        }
    }

    /// Starts checking a sign-in to `login` from `address`: nil when its password may be checked now (the attempt is
    /// then in flight until ``finishAttempt(login:address:_:now:)``), else how long to wait. An attempt is refused
    /// when its key is blocked, or when the attempts in flight, were they all wrong, would block it: one after
    /// another, it would have found that block (the wait is that block's length).
    public mutating func beginAttempt(login: String, address: String, now: Duration) -> Duration? {
        let address = IPAddressText.sourceKey(address)
        if let wait = retryAfter(login: login, address: address, now: now) { return wait }
        if let wait = Self.blockByAttemptsInFlight(
            addresses, address, inFlight: checkingFrom[address, default: 0], now: now)
        {
            return wait
        }
        if !isKnown(login: login, address: address, now: now),
            let wait = Self.blockByAttemptsInFlight(accounts, login, inFlight: checkingOf[login, default: 0], now: now)
        {
            return wait
        }
        checkingFrom[address, default: 0] += 1
        checkingOf[login, default: 0] += 1
        return nil
    }

    /// Ends an attempt that ``beginAttempt(login:address:now:)`` let through: counts it as `outcome` says.
    public mutating func finishAttempt(login: String, address: String, _ outcome: AttemptOutcome, now: Duration) {
        let address = IPAddressText.sourceKey(address)
        Self.decrement(&checkingFrom, address)
        Self.decrement(&checkingOf, login)
        switch outcome {
        case .wrong: recordFailure(login: login, address: address, now: now)
        case .right: recordSuccess(login: login, address: address, now: now)
        case .unchecked: break
        }
    }

    /// The block `inFlight` more failures of `key` would start, if any.
    private static func blockByAttemptsInFlight(_ table: BackoffTable, _ key: String, inFlight: Int, now: Duration)
        -> Duration?
    {
        guard inFlight > 0 else { return nil }
        let block = table.policy.blockDuration(afterFailures: table.failures(key, now: now) + inFlight)
        return block > .zero ? block : nil
    }

    private static func decrement(_ counts: inout [String: Int], _ key: String) {
        let left = counts[key, default: 1] - 1
        counts[key] = left > 0 ? left : nil
    }

    /// A wrong login or password.
    public mutating func recordFailure(login: String, address: String, now: Duration) {
        let address = IPAddressText.sourceKey(address)
        addresses.recordFailure(address, now: now)
        accounts.recordFailure(login, now: now)
    }

    /// A right password.
    public mutating func recordSuccess(login: String, address: String, now: Duration) {
        let address = IPAddressText.sourceKey(address)
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
    public func failures(address: String, now: Duration) -> Int {
        addresses.failures(IPAddressText.sourceKey(address), now: now)
    }

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
