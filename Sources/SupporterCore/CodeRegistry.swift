public import Foundation
import SupportSession
internal import SupportUtilities
import SupportWire
public import SupporterModel

/// One device connection, as the registry knows it: a number the node gives each accepted link.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// The supporter node's registry of session codes, device connections and abuse state (SPEC §9, §13): a value, in
/// the style of the session machines. Events come in (a connection accepted, a REGISTER, a session event, a
/// supporter's command, the clock ticking); decisions and ``StoreIntent``s go out. No locks, no I/O, no clock inside:
/// every `now` is an input.
///
/// Two-phase registration: an accepted REGISTER reserves its code at once (a second device is refused), but the code
/// counts as online — for supporters, listings and commands — only after ``registrationCommitted(_:code:)``, which the
/// node calls when the `device_online` audit record is durable.
public struct CodeRegistry: Sendable {
    /// Limits and back-off (SPEC §13).
    public struct Policy: Sendable, Hashable {
        /// Invalid-token registrations from one source address.
        public var addressBackoff = BackoffPolicy(
            freeFailures: 5, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        /// Invalid-token registrations naming one existing code. Never applied to a valid device token.
        public var codeBackoff = BackoffPolicy(
            freeFailures: 5, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        /// Refused registrations (unknown, closed or expired codes) made with one valid device token.
        public var tokenBackoff = BackoffPolicy(
            freeFailures: 10, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        /// Refusals on one connection after which it is closed (GOAWAY `rate_limited`).
        public var refusalsPerConnection = 5
        /// Connections not (yet) registered on a code, per source address and in all.
        public var unauthenticatedPerAddress = 64
        public var unauthenticatedTotal = 4096
        /// Refused registrations are audited one row each, at most this many per source address per window; the
        /// rest, and every refusal while rate-limited, are counted and written as one aggregate row per source when
        /// the window closes.
        public var refusalAuditRowsPerSource = 10
        public var refusalAuditWindow: Duration = .seconds(60)
        /// Refusal rows per window over all sources; beyond it refusals are only counted (one aggregate row).
        public var refusalAuditGlobalLimit = 600
        /// Source addresses tracked for refusal auditing; beyond it they count toward the global aggregate.
        public var refusalAuditSources = 10_000
        /// New connections admitted per second from an address while its address back-off blocks it (a burst of
        /// ``blockedAddressBurst``). The rest are closed at accept, before any TLS work: a client that reconnects in a
        /// loop to repeat refused registrations costs an accept and a close, not a handshake. The trade-off (SPEC
        /// §13.1): a device with a valid token behind the same address (carrier-grade NAT) is never refused its
        /// registration for the address's failures, but while the block lasts its connection competes for these
        /// admissions and may be closed at accept; it gets through on a later attempt.
        public var blockedAddressAdmissionsPerSecond = 5.0
        public var blockedAddressBurst = 5.0
        /// Blocked addresses whose admission budget is tracked; beyond it the oldest is forgotten.
        public var blockedAddressesTracked = 10_000
        /// How long the contents of messages and files are kept (``SessionContent``); zero keeps none (the audit
        /// trail still records each message, without its content).
        public var contentRetention: Duration = .seconds(7 * 86_400)
        /// The most bytes of contents kept in all; beyond, the oldest go first (checked after every file, and with
        /// the retention every ``contentPruneInterval``).
        public var contentLimitBytes = 1 << 30
        public var contentPruneInterval: Duration = .seconds(60)
        /// Audit rows of events a device can repeat at will (SESSION_ERROR, VOIP_STATE): at most this many per code
        /// (one device at a time holds a code) per window, and at most ``deviceEventRowsPerToken`` over every device
        /// of one device token (every install of an app shares it). Beyond either, events are counted, not reported
        /// one by one, and one aggregate row (`device_events_suppressed`) per code and per token is written when the
        /// window closes (SPEC §13.1).
        public var deviceEventRowsPerCode = 20
        public var deviceEventRowsPerToken = 200
        public var deviceEventWindow: Duration = .seconds(60)
        /// Such rows per window over all codes; beyond it events are only counted (one aggregate row).
        public var deviceEventGlobalLimit = 2_000

        public init() {}
    }

    /// What the registry keeps per code.
    struct CodeEntry: Sendable {
        var record: SessionCodeRecord
        var live: SessionCodeState = .open
        /// The connection holding the code (registering or registered).
        var holder: ConnectionID?
        /// Whether the holder's registration is durable (``registrationCommitted(_:code:)``).
        var committed = false
        var deviceName: String?
        var deviceAddress: String?
        var activeSince: Date?
        /// Who asked to end the session (a supporter's end), named in its `session_ended` and `device_offline` rows.
        var endActor: AuditActor?
        /// The device's link is lost and its session kept for a resume (SPEC §15.5).
        var reconnecting = false
        /// Whether the code's expiry is in the audit trail (or happened before this node started).
        var expiryRecorded = false
        /// The device another node holds on this code (several nodes on one database), while this node holds none.
        var elsewhere: RemotePresence?
        /// The state of a session of this node's previous process that may still resume here
        /// (``UnresumedSession``), while no device holds the code: shown as reconnecting.
        var awaitingResume: SessionCodeState?
        /// The running session's messages, as far as they are recorded.
        var messages = SessionMessageLedger()

        /// The state ``info(now:)`` shows, without making the info (the metrics count every code's on each scrape).
        func state(now: Date) -> SessionCodeState {
            let remote = holder == nil ? elsewhere : nil
            let waiting = holder == nil ? awaitingResume : nil
            let shown: SessionCodeState = committed ? live : waiting ?? remote?.state ?? .open
            return record.isClosed ? .closed : (shown == .open && now >= record.validUntil) ? .expired : shown
        }

        func info(now: Date) -> SessionCodeInfo {
            let remote = holder == nil ? elsewhere : nil
            let waiting = holder == nil ? awaitingResume : nil
            let state = state(now: now)
            var info = SessionCodeInfo(
                record: record, state: state, deviceName: state.isLive ? (remote?.deviceName ?? deviceName) : nil)
            info.reconnecting = state.isLive && (reconnecting || waiting != nil)
            info.node = state.isLive ? remote?.node : nil
            return info
        }
    }

    struct ConnectionEntry: Sendable {
        /// The peer's address, for the rows of what it did.
        var address: String
        /// What its limits count against (``IPAddressText/sourceKey(_:)``: an IPv6 peer's /64), and what refusal
        /// rows name.
        var key: String
        var code: String?
        var refusals = 0
        /// The device token it registered with (nil before, or for a session taken over from another node).
        var tokenID: String?
    }

    public let policy: Policy
    var codes = CodeTable()
    var connections: [ConnectionID: ConnectionEntry] = [:]
    var unauthenticatedByAddress: [String: Int] = [:]
    var unauthenticatedCount = 0
    var addressBackoff: BackoffTable
    var codeBackoff: BackoffTable
    var tokenBackoff: BackoffTable
    var refusalAudit: AuditThrottle
    /// Rows of repeatable device events, per code and per device token (``Policy/deviceEventRowsPerCode``).
    var deviceEventAudit: AuditThrottle
    var deviceTokenAudit: AuditThrottle
    /// Admission budget (tokens, last refill on the back-off clock) of addresses blocked by their back-off.
    var blockedAdmissions: [String: TokenBucket] = [:]
    /// Sessions of the previous process that may still resume here, by code, and when the last of them ends.
    var unresumed: [String: UnresumedSession] = [:]
    var unresumedUntil: Date?
    /// When contents were last pruned (``Policy/contentPruneInterval``).
    var contentsPrunedAt: Date?

    public init(policy: Policy = Policy()) {
        self.policy = policy
        addressBackoff = BackoffTable(policy: policy.addressBackoff)
        codeBackoff = BackoffTable(policy: policy.codeBackoff)
        tokenBackoff = BackoffTable(policy: policy.tokenBackoff)
        refusalAudit = AuditThrottle(
            policy: AuditThrottle.Policy(
                window: policy.refusalAuditWindow, rowsPerKey: policy.refusalAuditRowsPerSource,
                globalLimit: policy.refusalAuditGlobalLimit, keys: policy.refusalAuditSources))
        deviceEventAudit = AuditThrottle(
            policy: AuditThrottle.Policy(
                window: policy.deviceEventWindow, rowsPerKey: policy.deviceEventRowsPerCode,
                globalLimit: policy.deviceEventGlobalLimit, keys: 100_000))
        deviceTokenAudit = AuditThrottle(
            policy: AuditThrottle.Policy(
                window: policy.deviceEventWindow, rowsPerKey: policy.deviceEventRowsPerToken,
                globalLimit: .max, keys: 10_000))
    }

    /// The back-off clock: wall-clock time since 1970, so stored rows keep their meaning across restarts.
    static func clock(_ date: Date) -> Duration { .milliseconds(date.unixMilliseconds) }

    // MARK: loading

    /// Puts back a stored code (at start). A code that expired or closed before now is not reported again.
    public mutating func load(_ record: SessionCodeRecord, now: Date) {
        var entry = CodeEntry(record: record)
        entry.expiryRecorded = record.isClosed || now >= record.validUntil
        codes[record.code] = entry
    }

    /// Puts back a stored back-off row (at start).
    public mutating func load(_ row: BackoffRow) {
        let entry = BackoffTable.Entry(
            failures: row.failures, lastFailure: Self.clock(row.lastFailure),
            blockedUntil: row.blockedUntil.map(Self.clock) ?? .zero)
        switch BackoffKey(row.key) {
        case .address(let key): addressBackoff.restore(key, entry)
        case .code(let key): codeBackoff.restore(key, entry)
        case .token(let key): tokenBackoff.restore(key, entry)
        case nil: break
        }
    }

    // MARK: queries

    /// One code with its live state.
    public func info(_ code: String, now: Date) -> SessionCodeInfo? { codes[code]?.info(now: now) }

    /// Every code with its live state, oldest first.
    public func allInfo(now: Date) -> [SessionCodeInfo] {
        codes.values.map { $0.info(now: now) }.sorted {
            ($0.record.createdAt, $0.record.code) < ($1.record.createdAt, $1.record.code)
        }
    }

    /// Whether `code` exists.
    public func contains(_ code: String) -> Bool { codes[code] != nil }

    /// What the node's metrics show of the codes, in one pass: the devices registered (durably) on this node, and the
    /// codes in each state as ``info(_:now:)`` shows them (another node's devices included).
    public func census(now: Date) -> (devicesHere: Int, states: [SessionCodeState: Int]) {
        // Counted in an array, each entry borrowed: this runs under the node's session lock on every scrape.
        let all = SessionCodeState.allCases
        var counts = [Int](repeating: 0, count: all.count)
        var devices = 0
        codes.values.forEach { entry in
            if entry.holder != nil, entry.committed { devices += 1 }
            counts[all.firstIndex(of: entry.state(now: now)) ?? 0] += 1
        }
        var states: [SessionCodeState: Int] = [:]
        for (position, state) in all.enumerated() where counts[position] > 0 { states[state] = counts[position] }
        return (devices, states)
    }

    /// The connection of the device registered (durably) on `code`.
    public func holder(of code: String) -> ConnectionID? {
        guard let entry = codes[code], entry.committed else { return nil }
        return entry.holder
    }

    /// Every connection holding a code (for shutdown and diagnostics).
    public var connectionCount: Int { connections.count }
    /// Connections not registered on a code.
    public var unauthenticatedConnections: Int { unauthenticatedCount }

    // MARK: connections

    /// Why a new connection is turned away.
    public enum Admission: Sendable, Hashable {
        case admit
        /// Admitted in place of `ConnectionID`, an unregistered connection of the source holding the most, which the
        /// registry has already forgotten: close it (fair shares of a full pool, SPEC §13.1).
        case admitEvicting(ConnectionID)
        case refuse(String)
    }

    /// A TLS connection was accepted from `address`. Refused (closed at once) beyond the caps on connections not
    /// registered on a code. The caps apply here only: a connection that leaves its code counts as unregistered again
    /// but is not closed for it (the registration deadline does that).
    ///
    /// An address that its back-off blocks gets only ``Policy/blockedAddressAdmissionsPerSecond`` new connections per
    /// second (SPEC §13.1).
    ///
    /// `address` is the peer's address; its limits count against its key (SPEC §13.1, *Source address*).
    public mutating func connectionOpened(_ connection: ConnectionID, address: String, now: Date) -> Admission {
        guard connections[connection] == nil else { return .refuse("connection \(connection) is open already") }
        let key = IPAddressText.sourceKey(address)
        if !admitsBlockedAddress(key, now: Self.clock(now)) {
            return .refuse("\(key) is blocked after repeated failed registrations: new connections are throttled")
        }
        if unauthenticatedByAddress[key, default: 0] >= policy.unauthenticatedPerAddress {
            return .refuse("too many unregistered connections from \(key) (\(policy.unauthenticatedPerAddress))")
        }
        var evicted: ConnectionID?
        if unauthenticatedCount >= policy.unauthenticatedTotal {
            guard let victim = fairShareVictim(for: key) else {
                return .refuse("too many unregistered connections (\(policy.unauthenticatedTotal) in all)")
            }
            if let entry = connections.removeValue(forKey: victim) { countUnauthenticatedChange(entry.key, -1) }
            evicted = victim
        }
        connections[connection] = ConnectionEntry(address: address, key: key)
        countUnauthenticatedChange(key, +1)
        return evicted.map { .admitEvicting($0) } ?? .admit
    }

    /// A full pool of unregistered connections is shared fairly: a source holding fewer than the biggest holder less
    /// one takes the place of that holder's oldest unregistered connection. So no number of sources can keep a new
    /// one out — at worst they end up with equal shares — while a source as big as the biggest is refused.
    private func fairShareVictim(for key: String) -> ConnectionID? {
        guard let (biggest, held) = unauthenticatedByAddress.max(by: { $0.value < $1.value }),
            unauthenticatedByAddress[key, default: 0] + 1 < held
        else { return nil }
        var oldest: ConnectionID?
        for (id, entry) in connections where entry.key == biggest && entry.code == nil {
            if oldest.map({ id.rawValue < $0.rawValue }) ?? true { oldest = id }
        }
        return oldest
    }

    /// Whether a new connection from `address` fits its admission budget: always while the address is not blocked.
    private mutating func admitsBlockedAddress(_ address: String, now: Duration) -> Bool {
        guard addressBackoff.retryAfter(address, now: now) != nil else {
            blockedAdmissions[address] = nil
            return true
        }
        var budget =
            blockedAdmissions[address]
            ?? TokenBucket(rate: policy.blockedAddressAdmissionsPerSecond, burst: max(1, policy.blockedAddressBurst))
        let admitted = budget.take(now: now)
        if blockedAdmissions[address] == nil, blockedAdmissions.count >= policy.blockedAddressesTracked,
            let oldest = blockedAdmissions.min(by: { ($0.value.updated ?? .zero) < ($1.value.updated ?? .zero) })?.key
        {
            blockedAdmissions[oldest] = nil
        }
        blockedAdmissions[address] = budget
        return admitted
    }

    /// The connection closed. A code it still held is released (the session ended through ``sessionEvent``).
    public mutating func connectionClosed(_ connection: ConnectionID) {
        guard let entry = connections.removeValue(forKey: connection) else { return }
        if let code = entry.code {
            releaseCode(code, from: connection)
        } else {
            countUnauthenticatedChange(entry.key, -1)
        }
    }

    mutating func countUnauthenticatedChange(_ address: String, _ delta: Int) {
        unauthenticatedCount += delta
        let count = unauthenticatedByAddress[address, default: 0] + delta
        unauthenticatedByAddress[address] = count > 0 ? count : nil
    }

    mutating func releaseCode(_ code: String, from connection: ConnectionID) {
        guard var entry = codes[code], entry.holder == connection else { return }
        entry.holder = nil
        entry.committed = false
        entry.live = .open
        entry.deviceName = nil
        entry.deviceAddress = nil
        entry.activeSince = nil
        entry.reconnecting = false
        codes[code] = entry
    }
}

/// The prefixed keys back-off rows are stored under.
enum BackoffKey {
    case address(String)
    case code(String)
    case token(String)

    init?(_ stored: String) {
        if stored.hasPrefix("addr:") {
            self = .address(String(stored.dropFirst(5)))
        } else if stored.hasPrefix("code:") {
            self = .code(String(stored.dropFirst(5)))
        } else if stored.hasPrefix("token:") {
            self = .token(String(stored.dropFirst(6)))
        } else {
            return nil
        }
    }

    var stored: String {
        switch self {
        case .address(let key): "addr:" + key
        case .code(let key): "code:" + key
        case .token(let key): "token:" + key
        }
    }
}

extension CodeRegistry {
    /// The first broken internal invariant, or nil: each held code's connection holds exactly that code, only held
    /// codes are live, and the counts of unregistered connections match the connections. For tests and fuzzing.
    public func invariantViolation() -> String? {
        var unregistered = 0
        var byAddress: [String: Int] = [:]
        for (id, connection) in connections {
            guard let code = connection.code else {
                unregistered += 1
                byAddress[connection.key, default: 0] += 1
                continue
            }
            guard codes[code]?.holder == id else { return "connection \(id) holds \(code), which does not name it" }
        }
        for (code, entry) in codes.all {
            if let holder = entry.holder {
                guard connections[holder]?.code == code else { return "code \(code) names \(holder), which does not hold it" }
            } else if entry.live != .open || entry.committed {
                return "code \(code) has no device but is \(entry.live)"
            }
        }
        if unregistered != unauthenticatedCount {
            return "\(unauthenticatedCount) unregistered connections counted, \(unregistered) present"
        }
        if byAddress != unauthenticatedByAddress { return "the per-address counts of unregistered connections drifted" }
        // No check against the caps: they apply at admission. A connection that leaves its code counts as
        // unregistered again without being closed for it (its registration deadline closes it).
        return nil
    }
}
