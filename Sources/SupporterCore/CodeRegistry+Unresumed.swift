public import Foundation
import SupportWire
import SupporterModel

/// Sessions of this node's previous process (``UnresumedSession``): a lone node on SQLite restarted with the same
/// data folder resumes them from the stored state when their devices come back, and ends them when they do not.
extension CodeRegistry {
    /// Puts back the sessions the previous process left (at start): each may resume here until `deadline` (now + the
    /// resume grace), after which ``tick(now:)`` ends it. A code that is gone, closed or expired ends at the first
    /// tick: a session never outlives its code.
    public mutating func loadUnresumed(_ sessions: [UnresumedSession], deadline: Date) {
        guard !sessions.isEmpty else { return }
        for session in sessions {
            unresumed[session.code] = session
            codes[session.code]?.awaitingResume =
                switch session.state.phase {
                case "active": .active
                case "request_pending": .requestPending
                default: .online
                }
        }
        unresumedUntil = deadline
    }

    /// The session of the previous process on `code` that may still resume, if any.
    public func unresumedSession(on code: String) -> UnresumedSession? { unresumed[code] }

    /// Time passed (the node's once-a-second sweep): the previous process's sessions not resumed by now end once
    /// the grace has run out — or at once when their code closed, expired or was deleted — as sessions whose device
    /// never came back (`session_ended` if it was active, `device_offline`, both with reason `connection_lost`), and
    /// their codes are free. Returns the codes that ended and the records to write.
    public mutating func expireUnresumed(now: Date) -> (ended: [String], intents: [StoreIntent]) {
        guard let until = unresumedUntil else { return ([], []) }
        var ended: [String] = []
        var intents: [StoreIntent] = []
        for code in unresumed.keys.sorted() {
            let codeGone = codes[code].map { $0.record.isClosed || now >= $0.record.validUntil } ?? true
            guard now >= until || codeGone else { continue }
            intents += endUnresumed(code, now: now, text: Self.unresumedText)
            ended.append(code)
        }
        if unresumed.isEmpty { unresumedUntil = nil }
        return (ended, intents)
    }

    /// The `device_offline` row's text for a session of the previous process whose device did not come back.
    public static let unresumedText = "the device did not resume after the node restarted"

    /// Ends the previous process's session on `code` (see ``expireUnresumed(now:)``); nothing when there is none.
    mutating func endUnresumed(_ code: String, now: Date, text: String) -> [StoreIntent] {
        guard let session = unresumed.removeValue(forKey: code) else { return [] }
        codes[code]?.awaitingResume = nil
        let reason = "\(ReasonCode.connectionLost)"
        var intents: [StoreIntent] = []
        if session.state.phase == "active", let since = session.activeSince {
            let milliseconds = Int((now.timeIntervalSince(since) * 1000).rounded())
            intents.append(audit(.sessionEnded, code, now, ["reason": reason, "duration_ms": "\(milliseconds)"]))
        }
        intents.append(audit(.deviceOffline, code, now, ["reason": reason, "text": text]))
        intents.append(.releasePresence(code: code))
        return intents
    }

    /// The previous process's session on `code` resumed here (``adoptSession(_:code:deviceName:state:previousNode:why:now:)``).
    mutating func forgetUnresumed(_ code: String) {
        guard unresumed.removeValue(forKey: code) != nil else { return }
        codes[code]?.awaitingResume = nil
        if unresumed.isEmpty { unresumedUntil = nil }
    }
}
