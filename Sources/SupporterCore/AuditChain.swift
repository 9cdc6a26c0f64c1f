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
package enum AuditChain {
    /// The previous digest of the first event ever written: 32 zero bytes.
    package static let genesis = [UInt8](repeating: 0, count: 32)
    package static let domain = Array("rsup-audit-v1".utf8)

    /// One stored event as the chain sees it: the stored bytes, nothing decoded.
    package struct Row {
        package var id: Int64
        package var time: Int64
        package var code: [UInt8]?
        package var kind: [UInt8]
        package var details: [UInt8]
        package var previous: [UInt8]?
        package var digest: [UInt8]?

        package init(
            id: Int64, time: Int64, code: [UInt8]?, kind: [UInt8], details: [UInt8], previous: [UInt8]?,
            digest: [UInt8]?
        ) {
            self.id = id
            self.time = time
            self.code = code
            self.kind = kind
            self.details = details
            self.previous = previous
            self.digest = digest
        }

        /// The digest this row's contents give after `previous` (its own stored previous digest when nil).
        package func computedDigest(after previous: [UInt8]) -> [UInt8] {
            AuditChain.digest(previous: previous, id: id, time: time, code: code, kind: kind, details: details)
        }
    }

    /// Where the next append links: the newest digest, and the id it gets.
    package struct Head: Sendable, Hashable {
        package var digest: [UInt8]
        package var nextID: Int64

        package init(digest: [UInt8], nextID: Int64) {
            self.digest = digest
            self.nextID = nextID
        }
    }

    package static func digest(
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

    /// Lower-case hexadecimal (``Hex/encode(_:)``).
    package static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    /// The bytes of lower- or upper-case hexadecimal text; nil when it is not hexadecimal (``Hex/decode(_:)``).
    package static func bytes(hex text: String) -> [UInt8]? { Hex.decode(text) }

    /// The columns of an audit row, in the order ``Row`` is read from (both engines select them).
    package static let rowColumns = "id, time, code, kind, details, prev_digest, digest"
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
package struct AuditChainWalker {
    /// At most this many problems are kept; the first is the one that matters.
    package static let problemLimit = 100

    package private(set) var expectedID: Int64
    package private(set) var previous: [UInt8]
    package private(set) var count = 0
    package private(set) var firstID: Int64?
    package private(set) var lastID: Int64?
    package private(set) var problems: [AuditProblem] = []
    /// Where the walk started: the anchor's id, or 0.
    package let startID: Int64

    package init(after id: Int64, digest: [UInt8]) {
        startID = id
        expectedID = id + 1
        previous = digest
    }

    package mutating func note(_ problem: AuditProblem) {
        if problems.count < Self.problemLimit { problems.append(problem) }
    }

    package mutating func visit(_ row: AuditChain.Row) {
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
    package func verification(anchor: AuditAnchor?, extra: [AuditProblem] = []) -> AuditVerification {
        AuditVerification(
            eventCount: count, firstID: firstID, lastID: lastID, head: previous, anchor: anchor,
            problems: Array((problems + extra).prefix(Self.problemLimit)))
    }
}
