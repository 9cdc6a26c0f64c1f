import SupportSession

extension SupporterNode {
    private func connection(for code: String) throws(SupporterNodeError) -> DeviceConnection {
        guard let connection = state.withLock({ $0.connections[code] }) else {
            throw SupporterNodeError("no device is online on code \(Redact.code(code))", kind: .conflict)
        }
        return connection
    }

    /// Sends a connection request to the device on `code` as `supporterName`; returns the request id. The answer
    /// arrives as an event (`connected`, `rejected`, `requestTimedOut`).
    @discardableResult
    public func requestConnection(
        code: String, supporterName: String, type: ConnectionType, features: FeatureSet = []
    ) async throws(SupporterNodeError) -> UInt32 {
        guard (1...WireLimits.nameLength).contains(supporterName.utf8.count) else {
            throw SupporterNodeError("a supporter name has 1 to \(WireLimits.nameLength) bytes", kind: .invalid)
        }
        let connection = try connection(for: code)
        let id = try await connection.run { [self] machine throws(SupporterSessionMachine.Refusal) in
            let actions = try machine.requestConnection(
                supporterName: supporterName, type: type, features: features, now: DeviceConnection.now())
            var id: UInt32 = 0
            if case .requestPending(_, let request, _) = machine.state { id = request.requestID }
            // In the trail before the request leaves, so its answer can never be recorded ahead of it.
            audit(
                .requestSent, code: code,
                ["request_id": "\(id)", "supporter": supporterName, "type": type == .screenShare ? "screen_share" : "assist_ar"])
            return (actions, id)
        }
        let record = state.withLock { state -> SessionCodeRecord? in
            state.codes[code]?.record.assignedSupporter = supporterName
            return state.codes[code]?.record
        }
        if let record { try? store.update(record) }
        logger.log(.info, "code \(Redact.code(code)): request \(id) sent as '\(supporterName)' (\(type))")
        return id
    }

    /// Withdraws the pending request on `code`.
    public func abortRequest(code: String) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        let id = try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            var id: UInt32 = 0
            if case .requestPending(_, let request, _) = machine.state { id = request.requestID }
            return (try machine.abortRequest(), id)
        }
        audit(.requestAborted, code: code, ["request_id": "\(id)", "by": "supporter"])
    }

    /// Ends the session (or the waiting) on `code`; the device is told `ended_by_supporter`.
    public func endSession(code: String, text: String? = nil) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.end(reason: .endedBySupporter, text: text), ())
        }
    }
}
