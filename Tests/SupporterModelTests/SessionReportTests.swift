import Foundation
import Testing
import SupporterModel

/// A code's report from its audit rows: requests and their outcomes, times, features, reconnects, the end.
@Suite struct SessionReportTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func row(_ seconds: Double, _ kind: AuditEvent.Kind, _ details: [String: String] = [:], code: String = "123456789")
        -> AuditEvent
    {
        AuditEvent(time: start.addingTimeInterval(seconds), code: code, kind: kind, details: details)
    }

    @Test func aSessionWithGrantsARevocationAReconnectAndItsEnd() {
        let rows: [AuditEvent] = [
            Self.row(0, .codeCreated),
            Self.row(1, .deviceOnline, ["device": "Pixel 8"]),
            Self.row(2, .requestSent, ["request_id": "1", "supporter": "Alice", "type": "assist_ar", "actor_account": "alice"]),
            Self.row(2.5, .featureDenied, ["features": "remote_control", "by": "code_rule"]),
            Self.row(4, .requestRejected, ["request_id": "1", "reason": "rejected_by_user"]),
            Self.row(10, .requestSent, ["request_id": "2", "supporter": "Alice", "type": "screen_share"]),
            Self.row(12, .requestAllowed, ["request_id": "2"]),
            Self.row(12, .sessionStarted, ["request_id": "2"]),
            Self.row(12, .featuresGranted, ["features": "voip,chat"]),
            Self.row(20, .featureGranted, ["feature": "file_share"]),
            Self.row(25, .featureRefused, ["feature": "remote_control", "reason": "rejected_by_user"]),
            Self.row(30, .featureRevoked, ["feature": "chat"]),
            Self.row(40, .deviceReconnecting),
            Self.row(43.5, .deviceResumed),
            Self.row(60, .sessionEnded, ["reason": "ended_by_supporter", "duration_ms": "48000"]),
            Self.row(60, .deviceOffline, ["reason": "ended_by_supporter"]),
            Self.row(61, .deviceOnline, ["device": "other code"], code: "987654321"),
        ]
        let report = SessionReport(code: "123456789", events: rows)
        #expect(report.devices == ["Pixel 8"])
        #expect(report.firstOnline == Self.start.addingTimeInterval(1))
        #expect(report.lastOffline == Self.start.addingTimeInterval(60))
        #expect(report.sessions.count == 2)
        let refused = report.sessions[0]
        #expect(refused.outcome == "rejected" && refused.account == "alice" && refused.connectionType == "assist_ar")
        #expect(refused.waitingMilliseconds == 2_000 && refused.startedAt == nil && refused.activeMilliseconds == nil)
        #expect(refused.denied == ["remote_control"])
        let session = report.sessions[1]
        #expect(session.outcome == "allowed" && session.waitingMilliseconds == 2_000)
        #expect(session.activeMilliseconds == 48_000 && session.endReason == "ended_by_supporter")
        #expect(session.granted == ["voip", "file_share"])
        #expect(session.revoked == ["chat"] && session.refused == ["remote_control"])
        #expect(session.reconnects == 1 && session.reconnectingMilliseconds == 3_500)
    }

    @Test func aPendingRequestAndALinkLostUntilTheEnd() {
        let rows: [AuditEvent] = [
            Self.row(0, .requestSent, ["request_id": "7", "supporter": "Bo"]),
            Self.row(1, .requestAllowed, ["request_id": "7"]),
            Self.row(1, .sessionStarted, ["request_id": "7"]),
            Self.row(5, .deviceReconnecting),
            Self.row(35, .sessionEnded, ["reason": "connection_lost"]),
            Self.row(40, .requestSent, ["request_id": "8", "supporter": "Bo"]),
        ]
        let report = SessionReport(code: "123456789", events: rows)
        #expect(report.sessions.map(\.outcome) == ["allowed", "pending"])
        #expect(report.sessions[0].reconnects == 0 && report.sessions[0].reconnectingMilliseconds == 30_000)
        #expect(report.sessions[0].endReason == "connection_lost")
        #expect(report.sessions[1].answeredAt == nil && report.sessions[1].waitingMilliseconds == nil)
    }
}
