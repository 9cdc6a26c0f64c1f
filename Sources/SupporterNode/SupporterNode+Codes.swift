import Foundation
import SupportSession

/// What a new session code holds besides its type.
public struct SessionCodeDetails: Sendable, Hashable {
    public var description: String?
    public var customerName: String?
    public var customerEmail: String?
    /// Shown to the device's user while waiting (sent with REGISTER_RESULT).
    public var waitingMessage: String?

    public init(
        description: String? = nil, customerName: String? = nil, customerEmail: String? = nil,
        waitingMessage: String? = nil
    ) {
        self.description = description
        self.customerName = customerName
        self.customerEmail = customerEmail
        self.waitingMessage = waitingMessage
    }
}

extension SupporterNode {
    /// Creates a code of `type`, valid for `lifetime` (default from the configuration) or until `validUntil`, stored
    /// and audited before it returns.
    @discardableResult
    public func createCode(
        type: SessionCodeType = .remoteSupport, description: String? = nil, lifetime: Duration? = nil
    ) throws(SupporterNodeError) -> SessionCodeInfo {
        try createCode(type: type, details: SessionCodeDetails(description: description), lifetime: lifetime)
    }

    /// Creates a code with all its details.
    @discardableResult
    public func createCode(
        type: SessionCodeType, details: SessionCodeDetails, lifetime: Duration? = nil, validUntil: Date? = nil
    ) throws(SupporterNodeError) -> SessionCodeInfo {
        let now = Date()
        let seconds = Double((lifetime ?? configuration.defaultCodeLifetime).components.seconds)
            + Double((lifetime ?? configuration.defaultCodeLifetime).components.attoseconds) / 1e18
        let record = try state.withLock { state throws(SupporterNodeError) -> SessionCodeRecord in
            var code = SessionCodeFormat.generate()
            while state.codes[code] != nil { code = SessionCodeFormat.generate() }
            let record = SessionCodeRecord(
                code: code, type: type, description: details.description, customerName: details.customerName,
                customerEmail: details.customerEmail, waitingMessage: details.waitingMessage, isClosed: false,
                createdAt: now, validUntil: validUntil ?? now.addingTimeInterval(seconds), closedAt: nil,
                assignedSupporter: nil)
            do throws(StoreError) { try store.insert(record) } catch { throw SupporterNodeError(store: error) }
            state.codes[code] = CodeEntry(record: record)
            return record
        }
        audit(.codeCreated, code: record.code, ["type": record.type.name], time: now)
        logger.log(.info, "code \(Redact.code(record.code)) created (\(type))")
        return SessionCodeInfo(record: record, state: .open, deviceName: nil)
    }

    /// Every code with its live state, oldest first.
    public func codes() -> [SessionCodeInfo] {
        let now = Date()
        return state.withLock { state in
            state.codes.values.map { $0.info(now: now) }.sorted {
                ($0.record.createdAt, $0.record.code) < ($1.record.createdAt, $1.record.code)
            }
        }
    }

    /// One page of codes, oldest first, and the total.
    public func codes(offset: Int, limit: Int) -> (codes: [SessionCodeInfo], total: Int) {
        let all = codes()
        guard offset < all.count else { return ([], all.count) }
        return (Array(all[offset..<min(all.count, offset + limit)]), all.count)
    }

    /// One code with its live state.
    public func code(_ code: String) -> SessionCodeInfo? {
        let now = Date()
        return state.withLock { $0.codes[code]?.info(now: now) }
    }

    /// Changes a code's stored metadata (not its state: see ``closeCode(_:)``), stored and audited.
    @discardableResult
    public func updateCode(_ code: String, _ change: @Sendable (inout SessionCodeRecord) -> Void)
        throws(SupporterNodeError) -> SessionCodeInfo
    {
        let now = Date()
        let info = try state.withLock { state throws(SupporterNodeError) -> SessionCodeInfo in
            guard var entry = state.codes[code] else { throw SupporterNodeError("no such code", kind: .notFound) }
            var record = entry.record
            change(&record)
            record.code = entry.record.code
            record.isClosed = entry.record.isClosed
            record.closedAt = entry.record.closedAt
            record.createdAt = entry.record.createdAt
            do throws(StoreError) { try store.update(record) } catch { throw SupporterNodeError(store: error) }
            if record.validUntil > now { entry.expiryRecorded = false }
            entry.record = record
            state.codes[code] = entry
            return entry.info(now: now)
        }
        audit(.codeUpdated, code: code, [:], time: now)
        return info
    }

    /// Deletes a code. Refused while a device is on it: close it first. Its audit history stays.
    public func deleteCode(_ code: String) throws(SupporterNodeError) {
        try state.withLock { state throws(SupporterNodeError) in
            guard state.codes[code] != nil else { throw SupporterNodeError("no such code", kind: .notFound) }
            guard state.connections[code] == nil else {
                throw SupporterNodeError("a device is on this code; close it first", kind: .conflict)
            }
            do throws(StoreError) { _ = try store.delete(code: code) } catch { throw SupporterNodeError(store: error) }
            state.codes[code] = nil
        }
        audit(.codeDeleted, code: code)
        logger.log(.info, "code \(Redact.code(code)) deleted")
    }

    /// Closes a code for good: a device on it is told (SESSION_END `session_code_closed`).
    public func closeCode(_ code: String) async throws(SupporterNodeError) {
        try await finishCode(code, reason: .sessionCodeClosed)
    }

    /// Expires a code now: like closing, with `session_code_expired`.
    public func expireCode(_ code: String) async throws(SupporterNodeError) {
        try await finishCode(code, reason: .sessionCodeExpired)
    }

    private func finishCode(_ code: String, reason: ReasonCode) async throws(SupporterNodeError) {
        let now = Date()
        let closing = reason == .sessionCodeClosed
        let connection = try state.withLock { state throws(SupporterNodeError) -> DeviceConnection? in
            guard var entry = state.codes[code] else { throw SupporterNodeError("no such code", kind: .notFound) }
            if closing {
                guard !entry.record.isClosed else { return state.connections[code] }
                entry.record.isClosed = true
                entry.record.closedAt = now
            } else {
                entry.record.validUntil = min(entry.record.validUntil, now)
            }
            entry.expiryRecorded = true
            do throws(StoreError) { try store.update(entry.record) } catch { throw SupporterNodeError(store: error) }
            state.codes[code] = entry
            return state.connections[code]
        }
        audit(closing ? .codeClosed : .codeExpired, code: code, [:], time: now)
        logger.log(.info, "code \(Redact.code(code)) \(closing ? "closed" : "expired")")
        guard let connection else { return }
        _ = try? await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.end(reason: reason), ())
        }
    }

    /// Codes whose validity ran out: devices on them are told (SESSION_END `session_code_expired`), and each expiry
    /// enters the audit trail once, at the sweep after it happened.
    func expireDueCodes() async {
        let now = Date()
        let (withDevices, idle) = state.withLock { state -> ([String], [(String, Date)]) in
            var withDevices: [String] = []
            var idle: [(String, Date)] = []
            for (code, entry) in state.codes where !entry.expiryRecorded && now >= entry.record.validUntil {
                if state.connections[code] != nil {
                    withDevices.append(code)
                } else {
                    state.codes[code]?.expiryRecorded = true
                    idle.append((code, entry.record.validUntil))
                }
            }
            return (withDevices, idle)
        }
        for (code, validUntil) in idle {
            audit(.codeExpired, code: code, ["valid_until": SessionJSON.time(validUntil)], time: now)
        }
        for code in withDevices { try? await expireCode(code) }
    }
}

extension SessionCodeType {
    /// The name used in the REST API and the audit trail.
    public var name: String {
        switch self {
        case .remoteSupport: "remote_support"
        case .assistAR: "assist_ar"
        }
    }
}
