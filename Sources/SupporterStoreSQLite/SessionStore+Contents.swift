public import SupporterStore
package import Foundation
public import SupporterModel
import SupportUtilities

/// The contents of messages and files (``SessionContent``), kept apart from the audit trail under their row's id, for
/// the retention time and within a total size.
extension SessionStore {
    /// The contents kept for `auditIDs`, by id; a file's bytes only with `fileBytes`.
    public func contents(auditIDs: [Int64], fileBytes: Bool) throws(StoreError) -> [Int64: StoredSessionContent] {
        guard !auditIDs.isEmpty else { return [:] }
        let body = fileBytes ? "body" : "CASE WHEN kind = 'file' THEN NULL ELSE body END"
        return try perform("read message contents") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [Int64: StoredSessionContent] in
            var found: [Int64: StoredSessionContent] = [:]
            // In slices, under SQLite's limit on parameters.
            for start in stride(from: 0, to: auditIDs.count, by: 500) {
                let slice = auditIDs[start..<min(start + 500, auditIDs.count)]
                let marks = Array(repeating: "?", count: slice.count).joined(separator: ", ")
                let statement = try connection.prepare(
                    """
                    SELECT audit_id, code, time, kind, content_type, name, size, \(body)
                    FROM session_contents WHERE audit_id IN (\(marks))
                    """)
                for (index, id) in slice.enumerated() { try statement.bind(id, at: index + 1) }
                while try statement.step() {
                    guard let id = statement.int64(at: 0), let code = statement.text(at: 1),
                        let time = statement.int64(at: 2), let kind = statement.text(at: 3),
                        let size = statement.int64(at: 6)
                    else { throw Self.invalidData("a message content row lacks a required value") }
                    let bytes = statement.blob(at: 7) ?? []
                    guard
                        let content = SessionContent(
                            code: code, time: Date(unixMilliseconds: time), kind: kind,
                            contentType: statement.text(at: 4), name: statement.text(at: 5), bytes: bytes)
                    else { throw Self.invalidData("a message content row of unknown kind '\(kind)'") }
                    found[id] = StoredSessionContent(auditID: id, content: content, size: Int(size))
                }
            }
            return found
        }
    }
}

extension StoreTransaction {
    /// Keeps `content` under audit row `auditID`.
    package mutating func insertContent(_ content: SessionContent, auditID: Int64) throws(StoreError) {
        let stored = content.stored
        try run("keep a message content") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                """
                INSERT INTO session_contents (audit_id, code, time, kind, content_type, name, size, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            try statement.bind(auditID, at: 1)
            try statement.bind(content.code, at: 2)
            try statement.bind(content.time.unixMilliseconds, at: 3)
            try statement.bind(content.kind, at: 4)
            try statement.bind(stored.contentType, at: 5)
            try statement.bind(stored.name, at: 6)
            try statement.bind(Int64(stored.bytes.count), at: 7)
            try statement.bind(blob: stored.bytes, at: 8)
            try statement.run()
        }
    }

    /// Forgets contents kept before `before`, then the oldest until the rest take at most `keepingBytes`.
    package mutating func pruneContents(before: Date, keepingBytes: Int) throws(StoreError) {
        try run("prune message contents") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let old = try connection.prepare("DELETE FROM session_contents WHERE time < ?")
            try old.bind(before.unixMilliseconds, at: 1)
            try old.run()
            let over = try connection.prepare(SessionContentSQL.pruneOverLimit(parameter: "?"))
            try over.bind(Int64(keepingBytes), at: 1)
            try over.run()
        }
    }
}
