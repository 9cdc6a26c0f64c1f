public import Foundation
import SupportSession
import SupportWire
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

extension CodeRegistry {
    // The node's one audit rule is decide → commit → apply → answer: each change of a code is decided here without
    // changing anything (`plan…`, which returns the change and the store intents recording it), the node commits the
    // intents, and only then applies the change (``apply(_:now:)``). A failed commit leaves nothing to undo. The
    // mutating forms below (plan, then apply at once) are for callers with nothing to commit first.

    /// Decides to add a new code (the caller draws it at random). Refused when the code exists.
    public func planCreateCode(_ record: SessionCodeRecord, by actor: AuditActor) throws(RegistryError)
        -> (change: CodeChange, intents: [StoreIntent])
    {
        guard codes[record.code] == nil else { throw RegistryError(.conflict, "the code exists already") }
        var details = actor.details
        details["type"] = record.type.name
        if record.featureRules != .codeDefault { details["feature_rules"] = record.featureRules.auditText }
        return (.create(record), [.insertCode(record), audit(.codeCreated, record.code, record.createdAt, details)])
    }

    /// Decides a change of a code's stored metadata. Its identity, creation time, closed state and code rules cannot
    /// change here (rules change through ``planFeatureRules(_:_:by:now:)``, audited on their own).
    public func planUpdateCode(
        _ code: String, by actor: AuditActor, now: Date, _ change: (inout SessionCodeRecord) -> Void
    ) throws(RegistryError) -> (change: CodeChange, info: SessionCodeInfo, intents: [StoreIntent]) {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        let before = entry.record
        var record = before
        change(&record)
        record.code = before.code
        record.isClosed = before.isClosed
        record.closedAt = before.closedAt
        record.createdAt = before.createdAt
        record.featureRules = before.featureRules
        entry.record = record
        return (
            .update(before: before, after: record), entry.info(now: now),
            [.updateCode(record), audit(.codeUpdated, code, now, actor.details)]
        )
    }

    /// Decides to replace a code's rules (SPEC §15.3) with `rules`. Once applied, every decision on the code uses
    /// them — for a device registered on it too (its next connection request or feature ask); grants already made
    /// stay.
    ///
    /// Audited as `code_updated` with `what: code_feature_rules_changed`, the rules before and after
    /// (``FeatureRules/auditText``) and the actor. Rules equal to the current ones change nothing and record nothing
    /// (no change, no intents). Allowed on closed and expired codes (nothing can use them, but the record stays true to
    /// what was asked).
    public func planFeatureRules(
        _ code: String, _ rules: FeatureRules, by actor: AuditActor, now: Date
    ) throws(RegistryError) -> (change: CodeChange?, info: SessionCodeInfo, intents: [StoreIntent]) {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        let previous = entry.record.featureRules
        guard rules != previous else { return (nil, entry.info(now: now), []) }
        entry.record.featureRules = rules
        var details = actor.details
        details["what"] = "code_feature_rules_changed"
        details["feature_rules"] = rules.auditText
        details["previous_feature_rules"] = previous.auditText
        return (
            .featureRules(code: code, rules), entry.info(now: now),
            [.updateCode(entry.record), audit(.codeUpdated, code, now, details)]
        )
    }

    /// The rules of `code` now (SPEC §15.3), or nil when there is no such code: what a connection request or a feature
    /// ask on it must apply.
    public func featureRules(of code: String) -> FeatureRules? { codes[code]?.record.featureRules }

    /// Decides to delete a code. Refused while a device is on it. Its audit history stays.
    public func planDeleteCode(_ code: String, by actor: AuditActor, now: Date) throws(RegistryError)
        -> (change: CodeChange, intents: [StoreIntent])
    {
        guard let entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        guard entry.holder == nil, entry.elsewhere == nil else {
            throw RegistryError(.conflict, "a device is on this code; close it first")
        }
        return (.delete(code), [.deleteCode(code), audit(.codeDeleted, code, now, actor.details)])
    }

    /// Decides to close (`closing`) or expire a code now. Closing a closed code changes and records nothing (no
    /// change).
    public func planFinishCode(_ code: String, closing: Bool, by actor: AuditActor, now: Date)
        throws(RegistryError) -> (change: CodeChange?, intents: [StoreIntent])
    {
        guard var entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        if closing {
            guard !entry.record.isClosed else { return (nil, []) }
            entry.record.isClosed = true
            entry.record.closedAt = now
        } else {
            entry.record.validUntil = min(entry.record.validUntil, now)
        }
        var details = actor.details
        if !closing { details["valid_until"] = "\(entry.record.validUntil.unixMilliseconds)" }
        return (
            .finish(code: code, closing: closing, at: now),
            [.updateCode(entry.record), audit(closing ? .codeClosed : .codeExpired, code, now, details)]
        )
    }

    /// Applies a change decided by a `plan…` function once its intents are committed. Returns the connection of the
    /// device on the code at this moment, which a delete, close or expiry must tell (SESSION_END or GOAWAY).
    ///
    /// Changes of one code are decided and applied one after another by the caller (the node's change lanes); only the
    /// device's own path changes a record meanwhile (a request assigns the code), so an update sets the fields it
    /// changed and keeps the rest as they are now.
    @discardableResult
    public mutating func apply(_ change: CodeChange, now: Date) -> ConnectionID? {
        switch change {
        case .create(let record):
            var entry = codes[record.code] ?? CodeEntry(record: record)
            entry.record = record
            codes[record.code] = entry
            return nil
        case .update(let before, let after):
            guard var entry = codes[after.code] else { return nil }
            entry.record.merge(from: before, to: after)
            if entry.record.validUntil > now { entry.expiryRecorded = false }
            codes[after.code] = entry
            return nil
        case .featureRules(let code, let rules):
            codes[code]?.record.featureRules = rules
            return nil
        case .delete(let code):
            let holder = codes[code]?.holder
            codes[code] = nil
            return holder
        case .finish(let code, let closing, let at):
            guard var entry = codes[code] else { return nil }
            if closing {
                if !entry.record.isClosed {
                    entry.record.isClosed = true
                    entry.record.closedAt = at
                }
            } else {
                entry.record.validUntil = min(entry.record.validUntil, at)
            }
            entry.expiryRecorded = true
            codes[code] = entry
            return entry.holder
        }
    }

    /// Adds a new code at once (``planCreateCode(_:by:)`` then ``apply(_:now:)``).
    public mutating func createCode(_ record: SessionCodeRecord, by actor: AuditActor) throws(RegistryError)
        -> [StoreIntent]
    {
        let (change, intents) = try planCreateCode(record, by: actor)
        apply(change, now: record.createdAt)
        return intents
    }

    /// Changes a code's metadata at once (``planUpdateCode(_:by:now:_:)`` then ``apply(_:now:)``).
    public mutating func updateCode(
        _ code: String, by actor: AuditActor, now: Date, _ change: (inout SessionCodeRecord) -> Void
    ) throws(RegistryError) -> (SessionCodeInfo, [StoreIntent]) {
        let (decided, info, intents) = try planUpdateCode(code, by: actor, now: now, change)
        apply(decided, now: now)
        return (info, intents)
    }

    /// Replaces a code's rules at once (``planFeatureRules(_:_:by:now:)`` then ``apply(_:now:)``).
    public mutating func setFeatureRules(
        _ code: String, _ rules: FeatureRules, by actor: AuditActor, now: Date
    ) throws(RegistryError) -> (SessionCodeInfo, [StoreIntent]) {
        let (change, info, intents) = try planFeatureRules(code, rules, by: actor, now: now)
        if let change { apply(change, now: now) }
        return (info, intents)
    }

    /// Deletes a code at once (``planDeleteCode(_:by:now:)`` then ``apply(_:now:)``).
    public mutating func deleteCode(_ code: String, by actor: AuditActor, now: Date) throws(RegistryError)
        -> [StoreIntent]
    {
        let (change, intents) = try planDeleteCode(code, by: actor, now: now)
        apply(change, now: now)
        return intents
    }

    /// Closes or expires a code at once (``planFinishCode(_:closing:by:now:)`` then ``apply(_:now:)``). Returns the
    /// connection to tell (SESSION_END) if a device is on it.
    public mutating func finishCode(_ code: String, closing: Bool, by actor: AuditActor, now: Date)
        throws(RegistryError) -> (holder: ConnectionID?, intents: [StoreIntent])
    {
        let (change, intents) = try planFinishCode(code, closing: closing, by: actor, now: now)
        guard let change else { return (codes[code]?.holder, intents) }
        return (apply(change, now: now), intents)
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
        let pruneInterval = Double(policy.contentPruneInterval.components.seconds)
        if contentsPrunedAt.map({ now.timeIntervalSince($0) >= pruneInterval }) ?? true {
            contentsPrunedAt = now
            intents.append(contentPrune(now: now))
        }
        let clock = Self.clock(now)
        addressBackoff.forgetDecayed(now: clock)
        blockedAdmissions = blockedAdmissions.filter { addressBackoff.retryAfter($0.key, now: clock) != nil }
        codeBackoff.forgetDecayed(now: clock)
        tokenBackoff.forgetDecayed(now: clock)
        return (expiring.sorted(), intents)
    }
}
