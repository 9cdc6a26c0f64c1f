package import Foundation
package import SupporterModel

/// What both store engines share about kept contents (``SessionContent``): the columns a content is stored in, and
/// the one statement that trims them to a size.
package enum SessionContentSQL {
    /// Deletes the oldest contents (lowest audit ids) until those left take at most the limit, the statement's one
    /// parameter (`?` in SQLite, `$1` in PostgreSQL): every row whose size, with all newer ones, passes it.
    package static func pruneOverLimit(parameter: String) -> String {
        """
        DELETE FROM session_contents WHERE audit_id <= (
            SELECT coalesce(max(audit_id), 0) FROM (
                SELECT audit_id, sum(size) OVER (ORDER BY audit_id DESC) AS kept FROM session_contents
            ) AS newest_first WHERE kept > \(parameter)
        )
        """
    }
}

extension SessionContent {
    /// The columns a content is stored in: its content type and name (nil where the kind has none), and its bytes
    /// (a chat line's UTF-8).
    package var stored: (contentType: String?, name: String?, bytes: [UInt8]) {
        switch body {
        case .chat(let text): (nil, nil, Array(text.utf8))
        case .application(let type, let bytes): (type, nil, bytes)
        case .file(let name, let type, let bytes): (type, name, bytes)
        }
    }

    /// A content read back from its columns; nil for an unknown kind or a chat line that is not UTF-8.
    package init?(code: String, time: Date, kind: String, contentType: String?, name: String?, bytes: [UInt8]) {
        let body: Body
        switch kind {
        case "chat":
            guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
            body = .chat(text)
        case "application": body = .application(contentType: contentType ?? "application/octet-stream", bytes: bytes)
        case "file": body = .file(name: name ?? "file", contentType: contentType, bytes: bytes)
        default: return nil
        }
        self.init(code: code, time: time, body: body)
    }
}
