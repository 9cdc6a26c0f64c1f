import Foundation
import SupporterModel

/// `SessionReport` of protocol/openapi.yaml: the answer of `GET /sessions/{code}/report`.
struct APISessionReport: Encodable {
    let report: SessionReport

    enum CodingKeys: String, CodingKey {
        case code, devices, firstOnline = "first_online", lastOffline = "last_offline", sessions
    }

    enum SessionKeys: String, CodingKey {
        case requestID = "request_id", supporter, account, connectionType = "connection_type", outcome
        case requestedAt = "requested_at", answeredAt = "answered_at", startedAt = "started_at", endedAt = "ended_at"
        case endReason = "end_reason", waitingMS = "waiting_ms", activeMS = "active_ms"
        case reconnects, reconnectingMS = "reconnecting_ms", granted, refused, denied, revoked, asked
        case pendingAsks = "pending_asks", messagesSent = "messages_sent", messagesReceived = "messages_received"
        case filesReceived = "files_received", filesSent = "files_sent"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(report.code, forKey: .code)
        try container.encode(report.devices, forKey: .devices)
        try container.encode(report.firstOnline.map(RESTTime.format), forKey: .firstOnline)
        try container.encode(report.lastOffline.map(RESTTime.format), forKey: .lastOffline)
        var sessions = container.nestedUnkeyedContainer(forKey: .sessions)
        for session in report.sessions {
            var entry = sessions.nestedContainer(keyedBy: SessionKeys.self)
            try entry.encode(session.requestID, forKey: .requestID)
            try entry.encode(session.supporter, forKey: .supporter)
            try entry.encode(session.account, forKey: .account)
            try entry.encode(session.connectionType, forKey: .connectionType)
            try entry.encode(session.outcome, forKey: .outcome)
            try entry.encode(RESTTime.format(session.requestedAt), forKey: .requestedAt)
            try entry.encode(session.answeredAt.map(RESTTime.format), forKey: .answeredAt)
            try entry.encode(session.startedAt.map(RESTTime.format), forKey: .startedAt)
            try entry.encode(session.endedAt.map(RESTTime.format), forKey: .endedAt)
            try entry.encode(session.endReason, forKey: .endReason)
            try entry.encode(session.waitingMilliseconds, forKey: .waitingMS)
            try entry.encode(session.activeMilliseconds, forKey: .activeMS)
            try entry.encode(session.reconnects, forKey: .reconnects)
            try entry.encode(session.reconnectingMilliseconds, forKey: .reconnectingMS)
            try entry.encode(session.granted, forKey: .granted)
            try entry.encode(session.refused, forKey: .refused)
            try entry.encode(session.denied, forKey: .denied)
            try entry.encode(session.revoked, forKey: .revoked)
            try entry.encode(session.asked, forKey: .asked)
            try entry.encode(session.pendingAsks, forKey: .pendingAsks)
            try entry.encode(session.messagesSent, forKey: .messagesSent)
            try entry.encode(session.messagesReceived, forKey: .messagesReceived)
            try entry.encode(session.filesReceived, forKey: .filesReceived)
            try entry.encode(session.filesSent, forKey: .filesSent)
        }
    }
}
