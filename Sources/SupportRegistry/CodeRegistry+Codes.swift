public import Foundation
public import SupportSession

extension CodeRegistry {
    /// Adds a new code (the caller draws it at random). Refused when the code exists.
    public mutating func createCode(_ record: SessionCodeRecord, by actor: AuditActor) throws(RegistryError)
        -> [StoreIntent]
    {
        guard codes[record.code] == nil else { throw RegistryError(.conflict, "the code exists already") }
        codes[record.code] = CodeEntry(record: record)
        var details = actor.details
        details["type"] = record.type.name
        return [.insertCode(record), audit(.codeCreated, record.code, record.createdAt, details)]
    }

    /// Changes a code's stored metadata. Its identity, creation time and closed state cannot change here.
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
        if record.validUntil > now { entry.expiryRecorded = false }
        entry.record = record
        codes[code] = entry
        return (entry.info(now: now), [.updateCode(record), audit(.codeUpdated, code, now, actor.details)])
    }

    /// Deletes a code. Refused while a device is on it. Its audit history stays.
    public mutating func deleteCode(_ code: String, by actor: AuditActor, now: Date) throws(RegistryError)
        -> [StoreIntent]
    {
        guard let entry = codes[code] else { throw RegistryError(.notFound, "no such code") }
        guard entry.holder == nil else { throw RegistryError(.conflict, "a device is on this code; close it first") }
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
        for (code, entry) in codes where !entry.expiryRecorded && now >= entry.record.validUntil {
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
        let clock = Self.clock(now)
        addressBackoff.forgetDecayed(now: clock)
        codeBackoff.forgetDecayed(now: clock)
        tokenBackoff.forgetDecayed(now: clock)
        return (expiring.sorted(), intents)
    }
}
