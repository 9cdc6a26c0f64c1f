public import Foundation
import SupporterCore
import SupporterStore
import SupportSession
import SupportUtilities
import SupportWire
public import SupportVocabulary
public import SupporterModel

extension SupporterNode {
    /// Creates a code of `type`, valid for `lifetime` (default from the configuration); returns once it is stored
    /// and audited.
    @discardableResult
    public func createCode(
        type: SessionCodeType = .remoteSupport, description: String? = nil, lifetime: Duration? = nil,
        by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        try await createCode(type: type, details: SessionCodeDetails(description: description), lifetime: lifetime, by: actor)
    }

    /// Creates a code with all its details; returns once it is stored and audited.
    @discardableResult
    public func createCode(
        type: SessionCodeType, details: SessionCodeDetails, lifetime: Duration? = nil, validUntil: Date? = nil,
        by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        try await createCode(
            type: type, details: details, lifetime: lifetime, validUntil: validUntil, by: actor, proposing: nil)
    }

    /// As the public one, trying `proposed` first (tests of two nodes racing for one code). Codes are drawn at random;
    /// where several nodes share a database, two may draw the same one at once: the database lets exactly one insert
    /// it, and the other node draws again (up to 4 draws) without the caller noticing.
    func createCode(
        type: SessionCodeType, details: SessionCodeDetails, lifetime: Duration?, validUntil: Date?,
        by actor: AuditActor, proposing proposed: String?
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        var proposal = proposed
        for draw in 1...4 {
            do throws(SupporterNodeError) {
                return try await createCodeOnce(
                    type: type, details: details, lifetime: lifetime, validUntil: validUntil, by: actor,
                    proposing: proposal)
            } catch where error.isDuplicateCode && draw < 4 {
                logger.log(.info, "a code drawn here was taken by another node meanwhile; drawing again")
                proposal = nil
            }
        }
        throw SupporterNodeError("no unused session code found in 4 draws", kind: .conflict)
    }

    private func createCodeOnce(
        type: SessionCodeType, details: SessionCodeDetails, lifetime: Duration?, validUntil: Date?,
        by actor: AuditActor, proposing proposed: String?
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        let now = clock.wallTime
        let life = lifetime ?? configuration.defaultCodeLifetime
        let seconds = life.seconds
        // Decided here, applied once stored: a code appears in the registry only when its row and audit are durable.
        // Two nodes (or two callers) drawing the same text meanwhile are told apart by the store: one insert wins.
        let (record, change, intents) = try sessions.withLock { state throws(SupporterNodeError) in
            var code = proposed ?? SessionCodeFormat.generate()
            while state.registry.contains(code) { code = SessionCodeFormat.generate() }
            let record = SessionCodeRecord(
                code: code, type: type, description: details.description, customerName: details.customerName,
                customerEmail: details.customerEmail, waitingMessage: details.waitingMessage, isClosed: false,
                createdAt: now, validUntil: validUntil ?? now.addingTimeInterval(seconds), closedAt: nil,
                assignedSupporter: details.assignedSupporter, featureRules: details.featureRules,
                mediaDescriptor: details.mediaDescriptor)
            do throws(RegistryError) {
                let (change, intents) = try state.registry.planCreateCode(record, by: actor)
                return (record, change, intents)
            } catch {
                throw SupporterNodeError(registry: error)
            }
        }
        try await commit(intents)
        sessions.withLock { _ = $0.registry.apply(change, now: now) }
        logger.log(.info, "code \(Redact.code(record.code)) created (\(type))")
        return SessionCodeInfo(record: record, state: .open, deviceName: nil)
    }

    /// Every code with its live state, oldest first.
    public func codes() -> [SessionCodeInfo] {
        let now = clock.wallTime
        return sessions.withLock { $0.registry.allInfo(now: now) }
    }

    /// One page of codes, oldest first, and the total.
    public func codes(offset: Int, limit: Int) -> (codes: [SessionCodeInfo], total: Int) {
        let all = codes()
        guard offset < all.count else { return ([], all.count) }
        return (Array(all[offset..<min(all.count, offset + limit)]), all.count)
    }

    /// One code with its live state.
    public func code(_ code: String) -> SessionCodeInfo? {
        let now = clock.wallTime
        return sessions.withLock { $0.registry.info(code, now: now) }
    }

    /// Changes a code's stored metadata (not its state: see ``closeCode(_:by:)``; not its rules: see
    /// ``setFeatureRules(_:_:by:)``); returns once stored and audited.
    @discardableResult
    public func updateCode(
        _ code: String, by actor: AuditActor = .local, _ change: @Sendable (inout SessionCodeRecord) -> Void
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        try await changingCode(code) { () throws(SupporterNodeError) in
            let now = clock.wallTime
            let (decided, info, intents) = try sessions.withLock { state throws(SupporterNodeError) in
                do throws(RegistryError) {
                    return try state.registry.planUpdateCode(code, by: actor, now: now, change)
                } catch {
                    throw SupporterNodeError(registry: error)
                }
            }
            try await commit(intents)
            sessions.withLock { _ = $0.registry.apply(decided, now: now) }
            return info
        }
    }

    /// Replaces a code's rules (SPEC §15.3); returns once stored and audited (`code_updated`, `what:
    /// code_feature_rules_changed`). A device registered on the code is held to the new rules from its next connection
    /// request or feature ask on. Rules equal to the current ones change and record nothing.
    ///
    /// Waits for the node's store writer to commit: call it from a task, never on an event loop. When the write
    /// fails, the code keeps its previous rules and the error is thrown.
    @discardableResult
    public func setFeatureRules(
        _ code: String, _ rules: FeatureRules, by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        try await changeFeatureRules(code, by: actor) { $0 = rules }
    }

    /// Changes a code's rules with `change`, applied to the rules the code has at that moment (so two changes made at
    /// once both count); otherwise as ``setFeatureRules(_:_:by:)``.
    @discardableResult
    public func changeFeatureRules(
        _ code: String, by actor: AuditActor = .local, _ change: (inout FeatureRules) -> Void
    ) async throws(SupporterNodeError) -> SessionCodeInfo {
        try await changingCode(code) { () throws(SupporterNodeError) in
            let now = clock.wallTime
            let (decided, info, rules, intents) = try sessions.withLock { state throws(SupporterNodeError) in
                guard var rules = state.registry.featureRules(of: code) else {
                    throw SupporterNodeError(registry: RegistryError(.notFound, "no such code"))
                }
                change(&rules)
                do throws(RegistryError) {
                    let (decided, info, intents) = try state.registry.planFeatureRules(code, rules, by: actor, now: now)
                    return (decided, info, rules, intents)
                } catch {
                    throw SupporterNodeError(registry: error)
                }
            }
            guard let decided else { return info }
            try await commit(intents)
            sessions.withLock { _ = $0.registry.apply(decided, now: now) }
            logger.log(.info, "code \(Redact.code(code)): code rules now \(rules.auditText)")
            return info
        }
    }

    /// Deletes a code. Refused while a device is on it: close it first. Its audit history stays.
    public func deleteCode(_ code: String, by actor: AuditActor = .local) async throws(SupporterNodeError) {
        let late = try await changingCode(code) { () throws(SupporterNodeError) -> DeviceConnection? in
            let now = clock.wallTime
            let (decided, intents) = try sessions.withLock { state throws(SupporterNodeError) in
                do throws(RegistryError) {
                    return try state.registry.planDeleteCode(code, by: actor, now: now)
                } catch {
                    throw SupporterNodeError(registry: error)
                }
            }
            try await commit(intents)
            return sessions.withLock { state in state.registry.apply(decided, now: now).flatMap { state.links[$0] } }
        }
        logger.log(.info, "code \(Redact.code(code)) deleted")
        // A device that registered on the code while its deletion was being stored: the code is gone, so is it.
        late?.closeLink(reason: .invalidSessionCode, text: "the session code was deleted")
    }

    /// Closes a code for good: a device on it is told (SESSION_END `session_code_closed`).
    public func closeCode(_ code: String, by actor: AuditActor = .local) async throws(SupporterNodeError) {
        try await finishCode(code, closing: true, by: actor)
    }

    /// Expires a code now: like closing, with `session_code_expired`.
    public func expireCode(_ code: String, by actor: AuditActor = .local) async throws(SupporterNodeError) {
        try await finishCode(code, closing: false, by: actor)
    }

    private func finishCode(_ code: String, closing: Bool, by actor: AuditActor) async throws(SupporterNodeError) {
        let connection = try await changingCode(code) { () throws(SupporterNodeError) -> DeviceConnection? in
            let now = clock.wallTime
            let (decided, intents) = try sessions.withLock { state throws(SupporterNodeError) in
                do throws(RegistryError) {
                    return try state.registry.planFinishCode(code, closing: closing, by: actor, now: now)
                } catch {
                    throw SupporterNodeError(registry: error)
                }
            }
            // Closing a closed code: nothing to store; a device still on it is told again.
            guard let decided else {
                return sessions.withLock { state in state.registry.holder(of: code).flatMap { state.links[$0] } }
            }
            try await commit(intents)
            // The device on the code now, after the commit: one that registered meanwhile is told too.
            return sessions.withLock { state in state.registry.apply(decided, now: now).flatMap { state.links[$0] } }
        }
        logger.log(.info, "code \(Redact.code(code)) \(closing ? "closed" : "expired")")
        guard let connection else { return }
        let reason: ReasonCode = closing ? .sessionCodeClosed : .sessionCodeExpired
        _ = try? await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.end(reason: reason), ())
        }
    }

    /// Runs a change of `code` from its decision to its answer after every earlier change of it (``ChangeLanes``).
    func changingCode<Result: Sendable>(
        _ code: String, _ body: () async throws(SupporterNodeError) -> Result
    ) async throws(SupporterNodeError) -> Result {
        guard let result = try await changes.run("code:" + code, body) else {
            throw SupporterNodeError(
                "\(ChangeLanes.waitingLimit) changes of code \(Redact.code(code)) are waiting already; try again",
                kind: .busy)
        }
        return result
    }
}
