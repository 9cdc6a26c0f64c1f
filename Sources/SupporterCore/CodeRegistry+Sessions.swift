public import Foundation
public import SupportSession
import SupportWire
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

/// What the registry made of a session event: the records to write before anyone is told, and whether the event is
/// reported one by one (false for a repeatable device event over its audit quota: it is only counted, and an
/// aggregate row follows, so every reported event stays in the audit trail).
public struct SessionEventOutcome: Sendable, Hashable {
    public var intents: [StoreIntent]
    public var reported: Bool
}

extension CodeRegistry {
    /// A session event of a device connection (from its session machine): the live state follows, and the audit
    /// records to write before anyone is told are returned. `ended` frees the connection's code.
    public mutating func sessionEvent(
        _ event: SupporterSessionEvent, on connection: ConnectionID, now: Date
    ) -> [StoreIntent] {
        sessionEventOutcome(event, on: connection, now: now).intents
    }

    /// ``sessionEvent(_:on:now:)``, telling also whether the event is reported one by one
    /// (``Policy/deviceEventRowsPerCode``).
    public mutating func sessionEventOutcome(
        _ event: SupporterSessionEvent, on connection: ConnectionID, now: Date
    ) -> SessionEventOutcome {
        switch event {
        case .voipState, .sessionError:
            guard let entry = connections[connection], let code = entry.code else {
                return SessionEventOutcome(intents: [], reported: true)
            }
            guard admitDeviceEvent(code: code, token: entry.tokenID, now: now) else {
                return SessionEventOutcome(intents: [], reported: false)
            }
        default: break
        }
        let code = connections[connection]?.code
        let intents = recordedSessionEvent(event, on: connection, now: now)
        return SessionEventOutcome(intents: code.map { Self.fenced(intents, code: $0) } ?? intents, reported: true)
    }

    /// `intents` about the device session on `code`, fenced: they commit only while this node's claim on the code
    /// stands (``StoreIntent/requirePresence(code:)``). A job that writes the presence row already checks it.
    static func fenced(_ intents: [StoreIntent], code: String) -> [StoreIntent] {
        guard !intents.isEmpty else { return intents }
        for intent in intents {
            switch intent {
            case .claimPresence(code, _), .presenceState(code, _), .releasePresence(code), .requirePresence(code),
                .handOverPresence(code):
                return intents
            default: continue
            }
        }
        return [.requirePresence(code: code)] + intents
    }

    /// Whether a repeatable device event on `code` gets its own row: under the code's quota and its token's.
    private mutating func admitDeviceEvent(code: String, token: String?, now: Date) -> Bool {
        let clock = Self.clock(now)
        guard deviceEventAudit.admit(code, now: clock) else { return false }
        guard let token else { return true }
        return deviceTokenAudit.admit(token, now: clock)
    }

    /// Closes every audit window still open, run out or not (refused registrations, repeatable device events): their
    /// aggregate rows, for a node that stops, so that no count held back is lost.
    public mutating func closeAuditWindows(now: Date) -> [StoreIntent] {
        flushRefusalWindows(now: now, everything: true) + flushDeviceEventWindows(now: now, everything: true)
    }

    /// Closes device-event windows that have run out: one `device_events_suppressed` row for each that held events
    /// back, per code (with the code) and per device token (with the token's id), and one for the global excess.
    mutating func flushDeviceEventWindows(now: Date, everything: Bool = false) -> [StoreIntent] {
        let clock = Self.clock(now)
        let byCode = deviceEventAudit.flush(now: clock, everything: everything).map { suppressed in
            audit(
                .error, suppressed.key, now,
                [
                    "what": "device_events_suppressed", "scope": suppressed.key == nil ? "*" : "code",
                    "count": "\(suppressed.count)", "since": "\(Self.date(suppressed.since).unixMilliseconds)",
                ])
        }
        let byToken = deviceTokenAudit.flush(now: clock, everything: everything).map { suppressed in
            audit(
                .error, nil, now,
                [
                    "what": "device_events_suppressed", "scope": "token", "token": suppressed.key ?? "*",
                    "count": "\(suppressed.count)", "since": "\(Self.date(suppressed.since).unixMilliseconds)",
                ])
        }
        return byCode + byToken
    }

    private mutating func recordedSessionEvent(
        _ event: SupporterSessionEvent, on connection: ConnectionID, now: Date
    ) -> [StoreIntent] {
        guard var entry = connections[connection], let code = entry.code else { return [] }
        let address = entry.address
        switch event {
        case .deviceOnline, .registrationRefused:
            return []  // audited when decided (``register(_:now:)``)
        case .connected(let id):
            codes[code]?.activeSince = now
            codes[code]?.messages = SessionMessageLedger()
            codes[code]?.live = .active
            return [
                audit(.requestAllowed, code, now, ["request_id": "\(id)"]),
                audit(.sessionStarted, code, now, ["request_id": "\(id)"]),
                .presenceState(code: code, state: .active),
            ]
        case .rejected(let id, let reason):
            codes[code]?.live = .online
            return [
                audit(
                    reason == .requestTimedOut ? .requestTimedOut : .requestRejected, code, now,
                    ["request_id": "\(id)", "reason": "\(reason)", "by": "device"]),
                .presenceState(code: code, state: .online),
            ]
        case .requestTimedOut(let id):
            codes[code]?.live = .online
            return [
                audit(.requestTimedOut, code, now, ["request_id": "\(id)", "by": "supporter"]),
                .presenceState(code: code, state: .online),
            ]
        case .ended(let reason, let text):
            var intents: [StoreIntent] = []
            let actorDetails = codes[code]?.endActor?.details ?? [:]
            codes[code]?.endActor = nil
            codes[code]?.messages = SessionMessageLedger()
            if let since = codes[code]?.activeSince, codes[code]?.holder == connection {
                let milliseconds = Int((now.timeIntervalSince(since) * 1000).rounded())
                intents.append(
                    audit(
                        .sessionEnded, code, now,
                        actorDetails.merging(["reason": "\(reason)", "duration_ms": "\(milliseconds)"]) { $1 }))
            }
            var details = actorDetails.merging(["reason": "\(reason)", "source_address": address]) { $1 }
            if let text { details["text"] = String(text.prefix(256)) }
            intents.append(audit(.deviceOffline, code, now, details))
            intents.append(.releasePresence(code: code))
            entry.code = nil
            connections[connection] = entry
            releaseCode(code, from: connection)
            countUnauthenticatedChange(address, +1)
            return intents
        case .voipState(let voip, _):
            return [audit(.voipState, code, now, ["state": "\(voip)"])]
        case .featuresDenied(let features):
            return [audit(.featureDenied, code, now, ["features": Self.names(features), "by": "code_rule"])]
        case .grantInEffect(let features):
            return [audit(.featuresGranted, code, now, ["features": Self.names(features)])]
        case .featureGranted(let feature):
            return [audit(.featureGranted, code, now, ["feature": "\(feature)"])]
        case .featureRefused(let feature, let reason):
            return [audit(.featureRefused, code, now, ["feature": "\(feature)", "reason": "\(reason)"])]
        case .featureRevoked(let feature):
            return [audit(.featureRevoked, code, now, ["feature": "\(feature)"])]
        case .reconnecting:
            codes[code]?.reconnecting = true
            return [audit(.deviceReconnecting, code, now, ["source_address": address])]
        case .resumed:
            codes[code]?.reconnecting = false
            return [audit(.deviceResumed, code, now, ["source_address": address])]
        case .messageReceived(let delivery):
            return received(delivery, on: code, now: now)
        case .messageDelivered(let id):
            guard codes[code]?.messages.settled(id) == true else { return [] }
            return [audit(.messageDelivered, code, now, ["message_id": "\(id)"])]
        case .messageRefused(let id, let reason, _):
            guard codes[code]?.messages.settled(id) == true else { return [] }
            return [audit(.messageRefused, code, now, ["message_id": "\(id)", "reason": "\(reason)"])]
        case .fileDelivered(let transfer):
            return [audit(.fileDelivered, code, now, ["transfer_id": "\(transfer)"])]
        case .fileRefused(let transfer, let reason):
            return [audit(.fileRefused, code, now, ["transfer_id": "\(transfer)", "reason": "\(reason)"])]
        case .messagesUndelivered(let undelivered):
            let ids = codes[code]?.messages.undelivered(undelivered.sent) ?? []
            guard !ids.isEmpty else { return [] }
            return [audit(.messagesUndelivered, code, now, ["message_ids": ids.map { "\($0)" }.joined(separator: ",")])]
        case .sessionError(let reason, let feature, _):
            return [
                audit(
                    .error, code, now,
                    ["what": "session_error", "reason": "\(reason)", "feature": feature.map { "\($0)" } ?? ""])
            ]
        }
    }

    /// A message from the device: the fact in the audit trail, its content kept apart (``SessionContent``).
    private mutating func received(_ delivery: MessageChannel.Delivery, on code: String, now: Date) -> [StoreIntent] {
        switch delivery {
        case .chat(let id, let text):
            return recorded(
                AuditEvent(
                    time: now, code: code, kind: .messageReceived,
                    details: ["kind": "chat", "message_id": "\(id)", "size": "\(text.utf8.count)"]),
                SessionContent(code: code, time: now, body: .chat(text)))
        case .application(let id, let type, let body):
            return recorded(
                AuditEvent(
                    time: now, code: code, kind: .messageReceived,
                    details: ["kind": "application", "message_id": "\(id)", "content_type": type, "size": "\(body.count)"]),
                SessionContent(code: code, time: now, body: .application(contentType: type, bytes: body)))
        case .fileProgress(let transfer, let name, let received, let total):
            guard codes[code]?.messages.progress(transfer: transfer, received: received, total: total) == true else {
                return []
            }
            return [
                audit(
                    .fileProgress, code, now,
                    ["transfer_id": "\(transfer)", "name": name, "received": "\(received)", "size": "\(total)"])
            ]
        case .file(let transfer, let name, let type, let bytes):
            codes[code]?.messages.finished(transfer: transfer)
            var details = ["transfer_id": "\(transfer)", "name": name, "size": "\(bytes.count)"]
            if let type { details["content_type"] = type }
            return recorded(
                AuditEvent(time: now, code: code, kind: .fileReceived, details: details),
                SessionContent(code: code, time: now, body: .file(name: name, contentType: type, bytes: bytes)))
        }
    }

    /// A supporter's chat line or application message went out to the device on `code` as message `id`: what to
    /// store (the fact by `actor` in the audit trail, the content apart), fenced by the code's presence.
    /// A file goes the same way as `message_sent` of kind `file`, `id` its transfer id (its parts' acknowledgements are
    /// the channel's: `file_delivered`).
    public mutating func messageSent(
        code: String, id: UInt32, content: SessionContent.Body, by actor: AuditActor, now: Date
    ) -> [StoreIntent] {
        guard codes[code] != nil else { return [] }
        var details = actor.details
        if case .file = content {
            details["transfer_id"] = "\(id)"
        } else {
            codes[code]?.messages.sent(id)
            details["message_id"] = "\(id)"
        }
        switch content {
        case .chat(let text):
            details["kind"] = "chat"
            details["size"] = "\(text.utf8.count)"
        case .application(let type, let bytes):
            details["kind"] = "application"
            details["content_type"] = type
            details["size"] = "\(bytes.count)"
        case .file(let name, let type, let bytes):
            details["kind"] = "file"
            details["name"] = name
            details["size"] = "\(bytes.count)"
            if let type { details["content_type"] = type }
        }
        let event = AuditEvent(time: now, code: code, kind: .messageSent, details: details)
        return Self.fenced(recorded(event, SessionContent(code: code, time: now, body: content)), code: code)
    }

    /// `event` with `content` when contents are kept (``Policy/contentRetention``), else the row alone; after a file,
    /// the contents are pruned to their limit.
    private func recorded(_ event: AuditEvent, _ content: SessionContent) -> [StoreIntent] {
        guard policy.contentRetention > .zero else { return [.audit(event)] }
        var intents: [StoreIntent] = [.auditWithContent(event, content)]
        if case .file = content.body { intents.append(contentPrune(now: content.time)) }
        return intents
    }

    /// Forgets contents older than the retention, then the oldest beyond the limit.
    func contentPrune(now: Date) -> StoreIntent {
        let retention = policy.contentRetention.components
        let seconds = Double(retention.seconds) + Double(retention.attoseconds) / 1e18
        return .pruneContents(before: now.addingTimeInterval(-seconds), keepingBytes: policy.contentLimitBytes)
    }

    /// A supporter asked the device on `code` for `feature` (ask `askID`): the row that records it.
    public func featureAsked(
        code: String, feature: Feature.ID, askID: UInt32, by actor: AuditActor, now: Date
    ) -> [StoreIntent] {
        var details = actor.details
        details["feature"] = "\(feature)"
        details["ask_id"] = "\(askID)"
        return Self.fenced([audit(.featureAsked, code, now, details)], code: code)
    }

    /// The supporter withdrew its pending ask `askID` for `feature` (FEATURE_WITHDRAW sent): what to store. The
    /// device's answer (`feature_refused`, reason `aborted_by_supporter`, or a grant that crossed it) follows.
    public func featureAskWithdrawn(
        code: String, feature: Feature.ID, askID: UInt32, by actor: AuditActor, now: Date
    ) -> [StoreIntent] {
        var details = actor.details
        details["feature"] = "\(feature)"
        details["ask_id"] = "\(askID)"
        return Self.fenced([audit(.featureAskWithdrawn, code, now, details)], code: code)
    }

    /// Feature names for an audit detail: `chat,remote_control`.
    static func names(_ features: FeatureSet) -> String { features.map { "\($0.id)" }.joined(separator: ",") }

    /// The device connection's session machine moved to `state` (request pending, active, …).
    public mutating func machineState(_ state: SupporterSessionMachine.State, on connection: ConnectionID) {
        guard let code = connections[connection]?.code, codes[code]?.holder == connection else { return }
        switch state {
        case .idle: codes[code]?.live = .open
        case .online: codes[code]?.live = .online
        case .requestPending: codes[code]?.live = .requestPending
        case .active: codes[code]?.live = .active
        }
    }

    /// A supporter sends connection request `requestID` on `code` as `supporterName`: what to store. The code is
    /// assigned to `assignTo` (the supporter's account, or the name when there is none) when it is unassigned, or
    /// always with `replacingAssignee` — in the store by these intents, in memory only once they are committed
    /// (``requestCommitted(code:assignee:)`` with the returned assignee).
    public func requestSent(
        code: String, requestID: UInt32, supporterName: String, type: ConnectionType, by actor: AuditActor, now: Date,
        assignTo: String? = nil, replacingAssignee: Bool = true
    ) -> (intents: [StoreIntent], assignee: String?) {
        guard var entry = codes[code] else { return ([], nil) }
        var intents: [StoreIntent] = []
        let assignee = assignTo ?? supporterName
        var assigned: String? = nil
        if entry.record.assignedSupporter != assignee, replacingAssignee || entry.record.assignedSupporter == nil {
            entry.record.assignedSupporter = assignee
            assigned = assignee
            intents.append(.updateCode(entry.record))
        }
        var details = actor.details
        details["request_id"] = "\(requestID)"
        details["supporter"] = supporterName
        details["type"] = type == .screenShare ? "screen_share" : "assist_ar"
        intents.append(audit(.requestSent, code, now, details))
        intents.append(.presenceState(code: code, state: .requestPending))
        return (intents, assigned)
    }

    /// The request's records are committed: the code's new assignee (if the request set one) holds in memory too.
    public mutating func requestCommitted(code: String, assignee: String?) {
        guard let assignee else { return }
        codes[code]?.record.assignedSupporter = assignee
    }

    /// A supporter asked to end the session on `code`: the rows of its end name `actor`.
    public mutating func endRequested(code: String, by actor: AuditActor) {
        codes[code]?.endActor = actor
    }

    /// A supporter withdrew request `requestID` on `code`.
    public func requestAborted(code: String, requestID: UInt32, by actor: AuditActor, now: Date) -> [StoreIntent] {
        var details = actor.details
        details["request_id"] = "\(requestID)"
        details["by"] = "supporter"
        return [audit(.requestAborted, code, now, details), .presenceState(code: code, state: .online)]
    }

    func audit(_ kind: AuditEvent.Kind, _ code: String?, _ now: Date, _ details: [String: String]) -> StoreIntent {
        .audit(AuditEvent(time: now, code: code, kind: kind, details: details))
    }
}
