import Foundation
import SupportSession

/// What the node does for its device connections, on their loops.
extension SupporterNode {
    /// Decides a REGISTER: back-off, token, code, state. Refusals are counted (durably) against the code and the
    /// source address.
    func authorize(_ register: Register, from connection: DeviceConnection) -> RegistrationDecision {
        let now = Date()
        let clock = Self.wallClock(now)
        let code = register.sessionCode
        let address = connection.sourceAddress
        let keys = ["addr:" + address, "code:" + code]
        var refusal: (ReasonCode, String)?
        var persist: [String] = []
        let decision = state.withLock { state -> RegistrationDecision in
            var wait: Duration?
            for key in keys where wait == nil { wait = state.backoff.retryAfter(key, now: clock) }
            if let wait {
                refusal = (.rateLimited, "back-off")
                return .refuse(.rateLimited, text: "too many failed attempts", retryAfterMilliseconds: wait.millisecondsRoundedUp)
            }
            func refuse(_ reason: ReasonCode, _ text: String) -> RegistrationDecision {
                for key in keys { state.backoff.recordFailure(key, now: clock) }
                persist = keys
                refusal = (reason, text)
                return .refuse(reason, text: text)
            }
            guard state.tokens.accepts(register.apiToken, scope: .device) else {
                return refuse(.invalidAPIToken, "unknown API token")
            }
            guard var entry = state.codes[code] else { return refuse(.invalidSessionCode, "no such session code") }
            if entry.record.isClosed { return refuse(.sessionCodeClosed, "the code was closed") }
            if now >= entry.record.validUntil { return refuse(.sessionCodeExpired, "the code expired") }
            if state.connections[code] != nil { return refuse(.sessionCodeInUse, "another device is on this code") }
            state.backoff.recordSuccess(keys[1])
            persist = [keys[1]]
            state.connections[code] = connection
            entry.live = .online
            entry.deviceName = connection.deviceName
            entry.deviceAddress = address
            state.codes[code] = entry
            return .accept(codeType: entry.record.type, waitingMessage: entry.record.waitingMessage)
        }
        persistBackoff(keys: persist)
        if let (reason, text) = refusal {
            logger.log(.warning, "registration of code \(Redact.code(code)) from \(address) refused: \(reason)")
            audit(
                .error, code: code,
                ["what": "registration_refused", "reason": "\(reason)", "detail": text, "source_address": address],
                time: now)
        } else {
            logger.log(.info, "code \(Redact.code(code)) online: device '\(connection.deviceName ?? "?")' from \(address)")
        }
        return decision
    }

    /// Writes the back-off state of `keys` through to the store, so bans survive a restart.
    ///
    /// Read and written under the registry lock (as codes are): two failures from one address on two loops must not
    /// store the older count last, which would shorten the ban a restart restores.
    func persistBackoff(keys: [String]) {
        for key in keys {
            let failure: StoreError? = state.withLock { state in
                do throws(StoreError) {
                    if let entry = state.backoff.state(of: key) {
                        try store.saveBackoff(
                            key: key, failures: entry.failures,
                            blockedUntil: entry.blockedUntil.map { Date(unixMilliseconds: $0.wholeMilliseconds) },
                            lastFailure: Date(unixMilliseconds: entry.lastFailure.wholeMilliseconds))
                    } else {
                        try store.deleteBackoff(key: key)
                    }
                    return nil
                } catch {
                    return error
                }
            }
            if let failure {
                logger.log(.error, "cannot store the back-off of \(key.hasPrefix("code:") ? "a code" : key): \(failure)")
            }
        }
    }

    /// The audit record of a device-side event.
    func recordAudit(of event: SupporterNodeEvent, sourceAddress: String) {
        let code = event.code
        let now = Date()
        switch event.event {
        case .deviceOnline:
            audit(.deviceOnline, code: code, ["source_address": sourceAddress, "device": event.deviceName ?? ""], time: now)
        case .registrationRefused:
            break  // audited with its reason in `authorize`
        case .connected(let id):
            state.withLock { $0.codes[code]?.activeSince = now }
            audit(.requestAllowed, code: code, ["request_id": "\(id)"], time: now)
            audit(.sessionStarted, code: code, ["request_id": "\(id)"], time: now)
        case .rejected(let id, let reason):
            audit(
                reason == .requestTimedOut ? .requestTimedOut : .requestRejected, code: code,
                ["request_id": "\(id)", "reason": "\(reason)", "by": "device"], time: now)
        case .requestTimedOut(let id):
            audit(.requestTimedOut, code: code, ["request_id": "\(id)", "by": "supporter"], time: now)
        case .ended(let reason, let text):
            let since = state.withLock { state -> Date? in
                let since = state.codes[code]?.activeSince
                state.codes[code]?.activeSince = nil
                return since
            }
            if let since {
                let milliseconds = Int((now.timeIntervalSince(since) * 1000).rounded())
                audit(.sessionEnded, code: code, ["reason": "\(reason)", "duration_ms": "\(milliseconds)"], time: now)
            }
            var details = ["reason": "\(reason)", "source_address": sourceAddress]
            if let text { details["text"] = String(text.prefix(256)) }
            audit(.deviceOffline, code: code, details, time: now)
        case .voipState(let voip, _):
            audit(.voipState, code: code, ["state": "\(voip)"], time: now)
        case .sessionError(let reason, let feature, _):
            audit(
                .error, code: code,
                ["what": "session_error", "reason": "\(reason)", "feature": feature.map { "\($0)" } ?? ""], time: now)
        }
    }

    func updateLiveState(code: String, connection: DeviceConnection, state machineState: SupporterSessionMachine.State) {
        state.withLock { state in
            guard state.connections[code] === connection else { return }
            switch machineState {
            case .idle: state.codes[code]?.live = .open
            case .online: state.codes[code]?.live = .online
            case .requestPending: state.codes[code]?.live = .requestPending
            case .active: state.codes[code]?.live = .active
            }
        }
    }

    /// The device left `code` (or its link died): the code is free again.
    func detach(_ connection: DeviceConnection, code: String) {
        state.withLock { state in
            guard state.connections[code] === connection else { return }
            state.connections[code] = nil
            state.codes[code]?.live = .open
            state.codes[code]?.deviceName = nil
            state.codes[code]?.deviceAddress = nil
        }
        logger.log(.info, "code \(Redact.code(code)) offline")
    }

    func connectionClosed(_ connection: DeviceConnection) {
        state.withLock { _ = $0.links.removeValue(forKey: ObjectIdentifier(connection)) }
    }
}

extension Duration {
    var millisecondsRoundedUp: UInt32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return UInt32(clamping: max(0, milliseconds))
    }

    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
