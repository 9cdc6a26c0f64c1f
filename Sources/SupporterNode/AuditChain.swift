import SupportUtilities
import SupportWire

/// The audit trail's hash chain: how each event's digest is computed from the one before it.
///
/// `digest = SHA-256(encoding)`, where the encoding is, in order (every length an unsigned 64-bit big-endian count of
/// the bytes that follow it, every integer 64-bit big-endian two's complement):
///
/// | field | encoding |
/// |---|---|
/// | domain | length, then the ASCII bytes `rsup-audit-v1` |
/// | previous digest | length (32), then the previous event's digest; 32 zero bytes for the first event |
/// | id | 8 bytes |
/// | time | 8 bytes, Unix milliseconds as stored |
/// | code | one byte 0 for NULL; or one byte 1, length, then the UTF-8 bytes |
/// | kind | length, then the UTF-8 bytes |
/// | details | length, then the UTF-8 bytes of the JSON text exactly as stored (sorted keys) |
///
/// Every variable field carries its length, so no two different events share an encoding (a code `"a"` with kind
/// `"bc"` differs from code `"ab"` with kind `"c"`, NULL differs from the empty string). The digest covers the stored
/// bytes, not a re-encoding, so it never depends on a JSON encoder's choices.
enum AuditChain {
    /// The previous digest of the first event ever written: 32 zero bytes.
    static let genesis = [UInt8](repeating: 0, count: 32)
    static let domain = Array("rsup-audit-v1".utf8)

    /// One stored event as the chain sees it: the stored bytes, nothing decoded.
    struct Row {
        var id: Int64
        var time: Int64
        var code: [UInt8]?
        var kind: [UInt8]
        var details: [UInt8]
        var previous: [UInt8]?
        var digest: [UInt8]?

        /// The digest this row's contents give after `previous` (its own stored previous digest when nil).
        func computedDigest(after previous: [UInt8]) -> [UInt8] {
            AuditChain.digest(previous: previous, id: id, time: time, code: code, kind: kind, details: details)
        }
    }

    /// Where the next append links: the newest digest, and the id it gets.
    struct Head: Sendable, Hashable {
        var digest: [UInt8]
        var nextID: Int64
    }

    static func digest(
        previous: [UInt8], id: Int64, time: Int64, code: [UInt8]?, kind: [UInt8], details: [UInt8]
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(
            8 + domain.count + 8 + previous.count + 16 + 9 + (code?.count ?? 0) + 8 + kind.count + 8 + details.count)
        func append(_ value: UInt64) {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
        func append(field: [UInt8]) {
            append(UInt64(field.count))
            bytes.append(contentsOf: field)
        }
        append(field: domain)
        append(field: previous)
        append(UInt64(bitPattern: id))
        append(UInt64(bitPattern: time))
        if let code {
            bytes.append(1)
            append(field: code)
        } else {
            bytes.append(0)
        }
        append(field: kind)
        append(field: details)
        return SHA256.hash(bytes)
    }

    /// Lower-case hexadecimal.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of lower- or upper-case hexadecimal text; nil when it is not hexadecimal.
    static func bytes(hex text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    // MARK: reading the store

    /// Reads the head the next append links to, inside the writing transaction.
    ///
    /// The digest is that of the newest event that has one (an event without one was not written by the store, and
    /// ``SessionStore/verifyAudit()`` reports it), else the newest archive anchor's, else ``genesis``. The id is one
    /// above the highest id ever used — the newest event's, the newest anchor's, or SQLite's AUTOINCREMENT counter,
    /// whichever is highest — so events deleted from the end leave a gap that verification reports.
    static func head(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Head {
        let statement = try connection.prepare(
            """
            SELECT (SELECT id FROM audit_events ORDER BY id DESC LIMIT 1),
                (SELECT digest FROM audit_events WHERE digest IS NOT NULL ORDER BY id DESC LIMIT 1),
                (SELECT last_id FROM audit_anchors ORDER BY last_id DESC LIMIT 1),
                (SELECT last_digest FROM audit_anchors ORDER BY last_id DESC LIMIT 1),
                (SELECT seq FROM sqlite_sequence WHERE name = 'audit_events')
            """)
        guard try statement.step() else { return Head(digest: genesis, nextID: 1) }
        let highest = max(statement.int64(at: 0) ?? 0, statement.int64(at: 2) ?? 0, statement.int64(at: 4) ?? 0)
        let digest = statement.blob(at: 1) ?? statement.blob(at: 3) ?? genesis
        return Head(digest: digest, nextID: highest + 1)
    }

    /// The row the statement stands on, selected as `id, time, code, kind, details, prev_digest, digest`.
    static func row(_ statement: borrowing SQLiteDatabase.Statement) -> Row {
        Row(
            id: statement.int64(at: 0) ?? 0, time: statement.int64(at: 1) ?? 0, code: statement.blob(at: 2),
            kind: statement.blob(at: 3) ?? [], details: statement.blob(at: 4) ?? [], previous: statement.blob(at: 5),
            digest: statement.blob(at: 6))
    }

    static let rowColumns = "id, time, code, kind, details, prev_digest, digest"
}

/// Walks a chain of events in id order and notes every place where it does not hold.
///
/// Each row is checked in this order, and the first failing check names the problem:
/// 1. it has both digests, 32 bytes each — else it was not written by the store (*inserted*);
/// 2. its digest is the digest of its contents after its own previous digest — else it was changed (*edited*);
/// 3. its id follows the one before — else the events in between were *deleted*;
/// 4. its previous digest is the digest of the row before — else the link is *broken*: the row before was rewritten
///    with a recomputed digest, or this one was forged with one.
/// After a problem the walk carries on from the row's own stored values, so one problem is reported once.
struct AuditChainWalker {
    /// At most this many problems are kept; the first is the one that matters.
    static let problemLimit = 100

    private(set) var expectedID: Int64
    private(set) var previous: [UInt8]
    private(set) var count = 0
    private(set) var firstID: Int64?
    private(set) var lastID: Int64?
    private(set) var problems: [AuditProblem] = []
    /// Where the walk started: the anchor's id, or 0.
    let startID: Int64

    init(after id: Int64, digest: [UInt8]) {
        startID = id
        expectedID = id + 1
        previous = digest
    }

    mutating func note(_ problem: AuditProblem) {
        if problems.count < Self.problemLimit { problems.append(problem) }
    }

    mutating func visit(_ row: AuditChain.Row) {
        count += 1
        if firstID == nil { firstID = row.id }
        lastID = row.id
        guard row.id >= expectedID else {
            note(
                AuditProblem(
                    .insertedRow, id: row.id,
                    "event \(row.id) lies at or below id \(expectedID - 1), where the chain already is (or where the "
                        + "last archive ended): it was inserted behind the store's back"))
            return
        }
        defer { expectedID = row.id + 1 }
        guard let stored = row.digest, let storedPrevious = row.previous, stored.count == 32,
            storedPrevious.count == 32
        else {
            note(
                AuditProblem(
                    .insertedRow, id: row.id,
                    "event \(row.id) has no chain digest: it was inserted behind the store's back"))
            return  // the next event links past it
        }
        defer { previous = stored }
        if row.computedDigest(after: storedPrevious) != stored {
            note(
                AuditProblem(
                    .editedRow, id: row.id,
                    "event \(row.id) was changed after it was written: its digest does not match its contents"))
        } else if row.id > expectedID {
            let missing = row.id - 1 == expectedID ? "event \(expectedID) is" : "events \(expectedID)–\(row.id - 1) are"
            note(AuditProblem(.deletedRow, id: expectedID, "\(missing) missing: deleted from the trail"))
        } else if storedPrevious != previous {
            note(
                AuditProblem(
                    .brokenLink, id: row.id,
                    "event \(row.id) does not link to event \(row.id - 1): one of them was rewritten with a "
                        + "recomputed digest"))
        }
    }

    /// What the walk found, as a verification.
    func verification(anchor: AuditAnchor?, extra: [AuditProblem] = []) -> AuditVerification {
        AuditVerification(
            eventCount: count, firstID: firstID, lastID: lastID, head: previous, anchor: anchor,
            problems: Array((problems + extra).prefix(Self.problemLimit)))
    }
}
