public import Foundation
public import SupportSession
import SupportWire
import SupportUtilities

extension CodeRegistry {
    /// Adds a new code (the caller draws it at random). Refused when the code exists.
    public mutating func createCode(_ record: SessionCodeRecord, by actor: AuditActor) throws(RegistryError)
        -> [StoreIntent]
    {
        guard codes[record.code] == nil else { throw RegistryError(.conflict, "the code exists already") }
        codes[record.code] = CodeEntry(record: record)
        var details = actor.details
        details["type"] = record.type.name
        if record.featureRules != .codeDefault { details["feature_rules"] = record.featureRules.auditText }
        return [.insertCode(record), audit(.codeCreated, record.code, record.createdAt, details)]
    }

    /// Changes a code's stored metadata. Its identity, creation time, closed state and code rules cannot change here
    /// (rules change through ``setFeatureRules(_:_:by:now:)``, audited on their own).
    public mutating func updateCode(
        _ code: String, by actor: AuditActor, now: Date, _ change: (inout SessionCodeRecord) -> Void
    ) throws(RegistryError) -> (SessionCodeInfo, [StoreIntent]) {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        var record = entry.record
        change(&record)
        record.code = entry.record.code
        record.isClosed = entry.record.isClosed
        record.closedAt = entry.record.closedAt
        record.createdAt = entry.record.createdAt
        record.featureRules = entry.record.featureRules
        if record.validUntil > now { entry.expiryRecorded = false }
        entry.record = record
        codes[code] = entry
        return (entry.info(now: now), [.updateCode(record), audit(.codeUpdated, code, now, actor.details)])
    }

    /// Replaces a code's rules (SPEC §15.3) with `rules`. From now on every decision on the code uses them — for a
    /// device registered on it too (its next connection request or feature ask); grants already made stay.
    ///
    /// Audited as `code_updated` with `what: code_feature_rules_changed`, the rules before and after
    /// (``FeatureRules/auditText``) and the actor. Rules equal to the current ones change nothing and record nothing.
    /// Allowed on closed and expired codes (nothing can use them, but the record stays true to what was asked).
    public mutating func setFeatureRules(
        _ code: String, _ rules: FeatureRules, by actor: AuditActor, now: Date
    ) throws(RegistryError) -> (SessionCodeInfo, [StoreIntent]) {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        let previous = entry.record.featureRules
        guard rules != previous else { return (entry.info(now: now), []) }
        entry.record.featureRules = rules
        codes[code] = entry
        var details = actor.details
        details["what"] = "code_feature_rules_changed"
        details["feature_rules"] = rules.auditText
        details["previous_feature_rules"] = previous.auditText
        return (entry.info(now: now), [.updateCode(entry.record), audit(.codeUpdated, code, now, details)])
    }

    /// Undoes a ``setFeatureRules(_:_:by:now:)`` whose store write failed: `previous` comes back if the code's rules
    /// are still `current` (a later change stays). Records nothing: the change was never recorded either.
    public mutating func revertFeatureRules(_ code: String, to previous: FeatureRules, ifStill current: FeatureRules) {
        guard codes[code]?.record.featureRules == current else { return }
        codes[code]?.record.featureRules = previous
    }

    /// The rules of `code` now (SPEC §15.3), or nil when there is no such code: what a connection request or a feature
    /// ask on it must apply.
    public func featureRules(of code: String) -> FeatureRules? { codes[code]?.record.featureRules }

    /// Deletes a code. Refused while a device is on it. Its audit history stays.
    public mutating func deleteCode(_ code: String, by actor: AuditActor, now: Date) throws(RegistryError)
        -> [StoreIntent]
    {
        guard let entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        guard entry.holder == nil, entry.elsewhere == nil else {
            throw RegistryError(.conflict, "a device is on this code; close it first")
        }
        codes[code] = nil
        return [.deleteCode(code), audit(.codeDeleted, code, now, actor.details)]
    }

    /// Closes (`closing`) or expires a code now. Returns the connection to tell (SESSION_END) if a device is on it.
    public mutating func finishCode(_ code: String, closing: Bool, by actor: AuditActor, now: Date)
        throws(RegistryError) -> (holder: ConnectionID?, intents: [StoreIntent])
    {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        if closing {
            guard !entry.record.isClosed else { return (entry.holder, []) }
            entry.record.isClosed = true
            entry.record.closedAt = now
        } else {
            entry.record.validUntil = min(entry.record.validUntil, now)
        }
        entry.expiryRecorded = true
        codes[code] = entry
        var details = actor.details
        if !closing { details["valid_until"] = "\(entry.record.validUntil.unixMilliseconds)" }
        return (
            entry.holder,
            [.updateCode(entry.record), audit(closing ? .codeClosed : .codeExpired, code, now, details)]
        )
    }

    /// Time passed: codes whose validity ran out while idle enter the audit trail once; codes with a device on them
    /// are returned so the node ends their sessions (``finishCode(_:closing:by:now:)`` with `closing: false`);
    /// refusal windows that ran out are flushed; decayed back-off keys are forgotten.
    public mutating func tick(now: Date) -> (expiring: [String], intents: [StoreIntent]) {
        var expiring: [String] = []
        var intents: [StoreIntent] = []
        for code in codes.due(now: now) {
            guard let entry = codes[code] else { continue }
            if entry.holder != nil {
                expiring.append(code)
            } else {
                codes[code]?.expiryRecorded = true
                intents.append(
                    audit(
                        .codeExpired, code, now,
                        ["valid_until": "\(entry.record.validUntil.unixMilliseconds)", "actor": "node"]))
            }
        }
        intents += flushRefusalWindows(now: now)
        intents += flushDeviceEventWindows(now: now)
        let clock = Self.clock(now)
        addressBackoff.forgetDecayed(now: clock)
        blockedAdmissions = blockedAdmissions.filter { addressBackoff.retryAfter($0.key, now: clock) != nil }
        codeBackoff.forgetDecayed(now: clock)
        tokenBackoff.forgetDecayed(now: clock)
        return (expiring.sorted(), intents)
    }
}
