public import Foundation
public import SupportSession
public import SupportWire
import SupportUtilities
public import SupportVocabulary
import SupporterModel

/// A REGISTER, as the registry needs it: the token already looked up by the node (a digest check it does itself).
public struct RegistrationAttempt: Sendable, Hashable {
    public var connection: ConnectionID
    public var code: String
    /// The id of the presented token when it is a valid, unrevoked device token; nil otherwise.
    public var deviceTokenID: String?
    /// The name the device gave in HELLO.
    public var deviceName: String?

    public init(connection: ConnectionID, code: String, deviceTokenID: String?, deviceName: String?) {
        self.connection = connection
        self.code = code
        self.deviceTokenID = deviceTokenID
        self.deviceName = deviceName
    }
}

/// A refused REGISTER: what the device is told, and what the node does with the connection.
public struct RegistrationRefusal: Sendable, Hashable {
    public var reason: ReasonCode
    public var text: String
    /// For `rate_limited`: how long to wait.
    public var retryAfter: Duration?
    /// The connection had too many refusals: after REGISTER_RESULT, close it with GOAWAY `rate_limited`.
    public var closeConnection: Bool
    /// Whether the refusal has its own audit row; when not, it is only counted (an aggregate row follows) and the
    /// node reports no event for it, so every reported event stays in the audit trail.
    public var audited: Bool
    public var intents: [StoreIntent]

    /// The session machine's view of this refusal.
    public var decision: RegistrationDecision {
        .refuse(reason, text: text, retryAfterMilliseconds: retryAfter.map(Self.milliseconds))
    }

    static func milliseconds(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return UInt32(clamping: max(1, milliseconds))
    }
}

/// What the registry decided about a REGISTER.
public enum RegistrationOutcome: Sendable, Hashable {
    /// The code is reserved for the connection; answer success once `intents` (the `device_online` record) commit,
    /// then call ``CodeRegistry/registrationCommitted(_:code:)``.
    case accepted(codeType: SessionCodeType, waitingMessage: String?, intents: [StoreIntent])
    case refused(RegistrationRefusal)

    /// The session machine's view.
    public var decision: RegistrationDecision {
        switch self {
        case .accepted(let codeType, let waitingMessage, _): .accept(codeType: codeType, waitingMessage: waitingMessage)
        case .refused(let refusal): refusal.decision
        }
    }

    public var intents: [StoreIntent] {
        switch self {
        case .accepted(_, _, let intents): intents
        case .refused(let refusal): refusal.intents
        }
    }
}

extension CodeRegistry {
    /// Decides a REGISTER (SPEC §13 order): a valid device token is judged by its own back-off and the code's state,
    /// never by the address's or the code's failure counts, so nobody can lock a device out by failing on its behalf;
    /// an invalid token is refused after the address and code back-off, and counts against both.
    public mutating func register(_ attempt: RegistrationAttempt, now: Date) -> RegistrationOutcome {
        guard var connection = connections[attempt.connection] else {
            return .refused(
                RegistrationRefusal(
                    reason: .internalError, text: "the connection is not known to the registry", retryAfter: nil,
                    closeConnection: true, audited: false, intents: []))
        }
        let code = attempt.code
        let key = connection.key
        let clock = Self.clock(now)
        if connection.code != nil {
            return refuse(attempt, .sessionCodeInUse, "this connection is already registered", now: now)
        }
        guard let tokenID = attempt.deviceTokenID else {
            var wait = addressBackoff.retryAfter(key, now: clock)
            if wait == nil, codes[code] != nil { wait = codeBackoff.retryAfter(code, now: clock) }
            if let wait { return refuse(attempt, .rateLimited, "too many failed attempts", retryAfter: wait, now: now) }
            var intents: [StoreIntent] = []
            if addressBackoff.recordFailure(key, now: clock) != nil {
                intents.append(save(.address(key), addressBackoff.entry(key)))
            }
            if codes[code] != nil, codeBackoff.recordFailure(code, now: clock) != nil {
                intents.append(save(.code(code), codeBackoff.entry(code)))
            }
            return refuse(attempt, .invalidAPIToken, "unknown API token", now: now, intents: intents)
        }
        if let wait = tokenBackoff.retryAfter(tokenID, now: clock) {
            return refuse(attempt, .rateLimited, "too many failed attempts with this token", retryAfter: wait, now: now)
        }
        guard var entry = codes[code] else {
            return tokenFailure(attempt, tokenID, .invalidSessionCode, "no such session code", now: now)
        }
        if entry.record.isClosed {
            return tokenFailure(attempt, tokenID, .sessionCodeClosed, "the code was closed", now: now)
        }
        if now >= entry.record.validUntil {
            return tokenFailure(attempt, tokenID, .sessionCodeExpired, "the code expired", now: now)
        }
        if entry.holder != nil {
            return refuse(attempt, .sessionCodeInUse, "another device is on this code", now: now)
        }
        entry.holder = attempt.connection
        entry.committed = false
        entry.live = .online
        entry.deviceName = attempt.deviceName
        entry.deviceAddress = connection.address
        codes[code] = entry
        connection.code = code
        connection.refusals = 0
        connection.tokenID = tokenID
        connections[attempt.connection] = connection
        countUnauthenticatedChange(key, -1)
        var intents: [StoreIntent] = []
        // A success resets what this token and this address had failed.
        // Only blocked keys were stored (``save(_:_:)``), so only they have a row to delete.
        if let stored = tokenBackoff.entry(tokenID), stored.blockedUntil > .zero {
            intents.append(.deleteBackoff(key: BackoffKey.token(tokenID).stored))
        }
        if let stored = addressBackoff.entry(key), stored.blockedUntil > .zero {
            intents.append(.deleteBackoff(key: BackoffKey.address(key).stored))
        }
        tokenBackoff.reset(tokenID)
        addressBackoff.reset(key)
        // A session the previous process left on this code ends now: a new registration replaces it.
        intents += endUnresumed(code, now: now, text: "not resumed: another registration took the code")
        intents.append(.claimPresence(code: code, deviceName: attempt.deviceName))
        intents.append(
            .audit(
                AuditEvent(
                    time: now, code: code, kind: .deviceOnline,
                    details: ["source_address": connection.address, "device": attempt.deviceName ?? "", "token": tokenID])))
        return .accepted(codeType: entry.record.type, waitingMessage: entry.record.waitingMessage, intents: intents)
    }

    /// The `device_online` record of the registration is durable: the code is online for everyone.
    /// False when the connection let go of the code meanwhile.
    @discardableResult
    public mutating func registrationCommitted(_ connection: ConnectionID, code: String) -> Bool {
        guard var entry = codes[code], entry.holder == connection else { return false }
        entry.committed = true
        codes[code] = entry
        return true
    }

    /// The registration could not be recorded: the code is free again, the connection unregistered.
    public mutating func registrationFailed(_ connection: ConnectionID, code: String) {
        guard var entry = connections[connection], entry.code == code else { return }
        entry.code = nil
        connections[connection] = entry
        releaseCode(code, from: connection)
        countUnauthenticatedChange(entry.key, +1)
    }

    private mutating func tokenFailure(
        _ attempt: RegistrationAttempt, _ tokenID: String, _ reason: ReasonCode, _ text: String, now: Date
    ) -> RegistrationOutcome {
        var intents: [StoreIntent] = []
        if tokenBackoff.recordFailure(tokenID, now: Self.clock(now)) != nil {
            intents.append(save(.token(tokenID), tokenBackoff.entry(tokenID)))
        }
        return refuse(attempt, reason, text, now: now, intents: intents)
    }

    private func save(_ key: BackoffKey, _ entry: BackoffTable.Entry?) -> StoreIntent {
        guard let entry else { return .deleteBackoff(key: key.stored) }
        return .saveBackoff(
            BackoffRow(
                key: key.stored, failures: entry.failures,
                blockedUntil: entry.blockedUntil > .zero ? Self.date(entry.blockedUntil) : nil,
                lastFailure: Self.date(entry.lastFailure)))
    }

    static func date(_ clock: Duration) -> Date {
        let (seconds, attoseconds) = clock.components
        return Date(unixMilliseconds: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// Counts the refusal on the connection and audits it under the per-source and global limits.
    private mutating func refuse(
        _ attempt: RegistrationAttempt, _ reason: ReasonCode, _ text: String, retryAfter: Duration? = nil, now: Date,
        intents: [StoreIntent] = []
    ) -> RegistrationOutcome {
        var intents = intents
        var close = false
        var audited = false
        if var connection = connections[attempt.connection] {
            connection.refusals += 1
            close = connection.refusals >= policy.refusalsPerConnection
            connections[attempt.connection] = connection
            if let row = refusalAudit(attempt, connection.key, reason, text, now: now) {
                intents.append(row)
                audited = true
            }
        }
        return .refused(
            RegistrationRefusal(
                reason: reason, text: text, retryAfter: retryAfter, closeConnection: close, audited: audited,
                intents: intents))
    }

    /// Refusals are audited one row each, except: refusals while rate-limited are only counted, and beyond
    /// ``CodeRegistry/Policy/refusalAuditRowsPerSource`` rows per source per window (or the global limit) the rest
    /// are counted too (``AuditThrottle``). ``tick(now:)`` writes what was counted as one aggregate row per source.
    private mutating func refusalAudit(
        _ attempt: RegistrationAttempt, _ address: String, _ reason: ReasonCode, _ text: String, now: Date
    ) -> StoreIntent? {
        guard refusalAudit.admit(address, now: Self.clock(now), countOnly: reason == .rateLimited) else { return nil }
        return .audit(
            AuditEvent(
                time: now, code: attempt.code, kind: .error,
                details: [
                    "what": "registration_refused", "reason": "\(reason)", "detail": text, "source_address": address,
                ]))
    }

    /// Closes refusal windows that have run out: one aggregate row for each that held refusals back (source `*`:
    /// those over the global bounds).
    mutating func flushRefusalWindows(now: Date, everything: Bool = false) -> [StoreIntent] {
        refusalAudit.flush(now: Self.clock(now), everything: everything).map { suppressed in
            .audit(
                AuditEvent(
                    time: now, code: nil, kind: .error,
                    details: [
                        "what": "registration_refusals_suppressed", "source_address": suppressed.key ?? "*",
                        "count": "\(suppressed.count)", "since": "\(Self.date(suppressed.since).unixMilliseconds)",
                    ]))
        }
    }
}

extension CodeRegistry {
    /// A registration moved to a new connection by a resume (SPEC §15.5): `code` is held by `new` from now, durably as
    /// before, and `new` no longer counts as unregistered. The old connection keeps no code (its close releases
    /// nothing). False when `old` does not hold the code or `new` is unknown or already holds one.
    @discardableResult
    public mutating func registrationMoved(code: String, from old: ConnectionID, to new: ConnectionID, deviceName: String?)
        -> Bool
    {
        guard var entry = codes[code], entry.holder == old, var newEntry = connections[new], newEntry.code == nil
        else { return false }
        if var oldEntry = connections[old] {
            oldEntry.code = nil
            connections[old] = oldEntry
            // The old connection counts as unregistered until it closes (it is closing), like any that left its code.
            countUnauthenticatedChange(oldEntry.key, +1)
        }
        newEntry.code = code
        newEntry.tokenID = connections[old]?.tokenID
        connections[new] = newEntry
        countUnauthenticatedChange(newEntry.key, -1)
        entry.holder = new
        entry.reconnecting = false
        entry.deviceAddress = newEntry.address
        if let deviceName { entry.deviceName = deviceName }
        codes[code] = entry
        return true
    }
}
