import Foundation
import SupporterModel

/// Session reports as CSV (RFC 4180): one row per connection request, the columns of `SessionReportEntry`, for a
/// spreadsheet or a helpdesk import. Every field reaches the text through ``field(_:)``, the one escaping rule of this
/// medium.
enum SessionReportCSV {
    static let header = [
        "code", "device", "request_id", "supporter", "account", "connection_type", "outcome", "requested_at",
        "answered_at", "started_at", "ended_at", "end_reason", "waiting_ms", "active_ms", "reconnects",
        "reconnecting_ms", "granted", "refused", "denied", "revoked", "asked", "messages_sent", "messages_received",
        "files_received", "files_sent",
    ]

    /// The CSV text of `reports`: the header, then their sessions in order; lines end with CRLF.
    static func text(_ reports: [SessionReport]) -> String {
        var lines = [header.map(field).joined(separator: ",")]
        for report in reports {
            for session in report.sessions {
                let values: [String] = [
                    report.code, report.devices.joined(separator: "; "), "\(session.requestID)", session.supporter,
                    session.account ?? "", session.connectionType, session.outcome, RESTTime.format(session.requestedAt),
                    session.answeredAt.map(RESTTime.format) ?? "", session.startedAt.map(RESTTime.format) ?? "",
                    session.endedAt.map(RESTTime.format) ?? "", session.endReason ?? "",
                    session.waitingMilliseconds.map { "\($0)" } ?? "", session.activeMilliseconds.map { "\($0)" } ?? "",
                    "\(session.reconnects)", "\(session.reconnectingMilliseconds)", session.granted.joined(separator: " "),
                    session.refused.joined(separator: " "), session.denied.joined(separator: " "),
                    session.revoked.joined(separator: " "), session.asked.joined(separator: " "),
                    "\(session.messagesSent)", "\(session.messagesReceived)", "\(session.filesReceived)",
                    "\(session.filesSent)",
                ]
                lines.append(values.map(field).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// One field: quoted when it holds a comma, a quote, a line break or leading/trailing space (quotes doubled); a
    /// field a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets
    /// a leading `'` first, so a device or supporter name never becomes a formula (OWASP "CSV injection"). Other
    /// control characters become U+FFFD.
    static func field(_ value: String) -> String {
        var text = String(
            String.UnicodeScalarView(
                value.unicodeScalars.map { scalar in
                    scalar.value < 0x20 && scalar != "\n" && scalar != "\t" && scalar != "\r" || (0x7F...0x9F).contains(scalar.value)
                        ? "\u{FFFD}" : scalar
                }))
        if let first = text.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) { text = "'" + text }
        let needsQuotes =
            text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            || text.hasPrefix(" ") || text.hasSuffix(" ")
        guard needsQuotes else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
