package import SupporterCore
import Foundation
import Glibc
import SupportWire
import SupportUtilities

/// Audit archive files, whichever store made them (``SessionStore/archiveAudit(before:to:)``,
/// ``PostgresStoreEngine/archiveAudit(before:to:)``): one JSON object per line per event, checked against the anchors
/// the store kept when it removed those events.
package enum AuditArchive {
    /// Refuses an archive file that exists already: archives are never overwritten.
    package static func refuseExisting(_ archivePath: String) throws(StoreError) {
        guard access(archivePath, F_OK) != 0 else {
            throw StoreError(
                kind: .duplicate, operation: "archive audit events",
                message: "the archive file exists already; archives are never overwritten: give a new file name",
                path: archivePath)
        }
    }

    /// Why a trail that `verification` found wanting is not archived (archiving would bury the evidence); nil when
    /// it verified.
    package static func refusal(_ verification: AuditVerification, location: String) -> StoreError? {
        guard let problem = verification.problem else { return nil }
        return StoreError(
            kind: .integrity, operation: "archive audit events",
            message:
                "the audit trail fails verification, so nothing is archived: \(problem.message)"
                + (verification.problems.count > 1 ? " (and \(verification.problems.count - 1) more)" : "")
                + "; investigate with 'rsup-supporter audit --verify'",
            path: location)
    }

    /// Checks the archive file at `archivePath` against a store's `anchors`: every line an event, ids without gaps,
    /// every digest and link, the first event linked to the anchor before it (or to the genesis digest), and the last
    /// event equal to one of the anchors (``AuditVerification/anchor``). Throws when the file cannot be read; every
    /// other finding is a problem in the result.
    package static func verify(at archivePath: String, anchors: [AuditAnchor]) throws(StoreError) -> AuditVerification {
        let text: String
        do {
            text = try String(contentsOfFile: archivePath, encoding: .utf8)
        } catch {
            throw StoreError(
                kind: .io, operation: "read audit archive",
                message: "cannot read it as UTF-8 text: \(error.localizedDescription)", path: archivePath)
        }
        var walker: AuditChainWalker?
        var problems: [AuditProblem] = []
        let decoder = JSONDecoder()
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty { continue }
            guard let archived = try? decoder.decode(ArchivedAuditEvent.self, from: Data(line.utf8)),
                let row = archived.row
            else {
                problems.append(
                    AuditProblem(
                        .malformedArchive, "line \(index + 1) of the archive is not an archived audit event"))
                continue
            }
            if walker == nil {
                let before = row.id - 1
                let start = before == 0 ? AuditChain.genesis : anchors.first { $0.lastID == before }?.digest
                if start == nil || start != row.previous {
                    problems.append(
                        AuditProblem(
                            .anchorMismatch, id: row.id,
                            before == 0
                                ? "the archive's first event does not start the chain"
                                : "the archive starts at event \(row.id), but the database has no anchor at "
                                    + "event \(before) that it links to: it is not an archive of this database, "
                                    + "or events before it are missing"))
                }
                walker = AuditChainWalker(after: before, digest: row.previous ?? start ?? AuditChain.genesis)
            }
            walker?.visit(row)
        }
        guard let walker else {
            return AuditVerification(
                eventCount: 0, firstID: nil, lastID: nil, head: AuditChain.genesis, anchor: nil,
                problems: problems + [AuditProblem(.malformedArchive, "the archive holds no events")])
        }
        let end = anchors.first { $0.lastID == walker.lastID }
        if let end, end.digest == walker.previous {
            if let first = walker.firstID, end.eventCount != Int(end.lastID - first + 1) {
                problems.append(
                    AuditProblem(
                        .anchorMismatch, id: end.lastID,
                        "the archive holds events \(first)–\(end.lastID), but its anchor says that archive took "
                            + "\(end.eventCount)"))
            }
        } else {
            problems.append(
                AuditProblem(
                    .anchorMismatch, id: walker.lastID,
                    end == nil
                        ? "the archive ends at event \(walker.lastID ?? 0), where the database has no anchor: it is "
                            + "not an archive of this database, or its last events are missing"
                        : "the archive's last event \(walker.lastID ?? 0) has a digest other than the database's "
                            + "anchor"))
        }
        var verification = walker.verification(anchor: end)
        // The walk's own findings first, in id order, then those about the file and the anchors.
        verification.problems = Array((verification.problems + problems).prefix(AuditChainWalker.problemLimit))
        return verification
    }
}

/// One line of an audit archive file.
package struct ArchivedAuditEvent: Codable {
    package var id: Int64
    package var time: Int64
    package var code: String?
    package var kind: String
    /// The stored JSON text, exactly.
    package var details: String
    package var prev_digest: String
    package var digest: String

    package init(_ row: AuditChain.Row) {
        id = row.id
        time = row.time
        code = row.code.map { String(decoding: $0, as: UTF8.self) }
        kind = String(decoding: row.kind, as: UTF8.self)
        details = String(decoding: row.details, as: UTF8.self)
        prev_digest = AuditChain.hex(row.previous ?? [])
        digest = AuditChain.hex(row.digest ?? [])
    }

    /// The event as the chain sees it; nil when a digest is not hexadecimal.
    package var row: AuditChain.Row? {
        guard let previous = AuditChain.bytes(hex: prev_digest), let stored = AuditChain.bytes(hex: digest) else {
            return nil
        }
        return AuditChain.Row(
            id: id, time: time, code: code.map { Array($0.utf8) }, kind: Array(kind.utf8),
            details: Array(details.utf8), previous: previous, digest: stored)
    }

    // Encoded explicitly so `code` is written as null rather than left out.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(time, forKey: .time)
        try container.encode(code, forKey: .code)
        try container.encode(kind, forKey: .kind)
        try container.encode(details, forKey: .details)
        try container.encode(prev_digest, forKey: .prev_digest)
        try container.encode(digest, forKey: .digest)
    }
}

/// A new archive file: created exclusively with mode `0600`, written fully, flushed with its folder, closed.
package final class ArchiveFile {
    private var fd: Int32
    package let path: String
    private var byteCount = 0
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()
    /// The digest of the last event appended: the anchor's.
    package private(set) var lastDigest: [UInt8] = []

    package init(creating path: String) throws(StoreError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw StoreError(
                kind: code == EEXIST ? .duplicate : .io, operation: "create audit archive",
                message: code == EEXIST
                    ? "the archive file exists already; archives are never overwritten: give a new file name"
                    : String(cString: strerror(code)),
                path: path)
        }
        fchmod(fd, 0o600)  // exactly, whatever the umask
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends `row` as one line (``ArchivedAuditEvent``).
    package func append(_ row: AuditChain.Row) throws(StoreError) {
        let line: Data
        do { line = try encoder.encode(ArchivedAuditEvent(row)) } catch {
            throw StoreError(kind: .invalidData, operation: "encode", message: "event \(row.id): \(error)", path: path)
        }
        try write(Array(line) + [UInt8(ascii: "\n")])
        lastDigest = row.digest ?? []
    }

    private func write(_ bytes: [UInt8]) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw failure("write")
            }
            offset += written
        }
        byteCount += bytes.count
    }

    /// Flushes the file and its folder entry to the disk and closes it; returns its size.
    package func finish() throws(StoreError) -> Int {
        guard fsync(fd) == 0 else { throw failure("fsync") }
        let closed = close(fd)
        fd = -1
        guard closed == 0 else { throw failure("close") }
        let folder = (path as NSString).deletingLastPathComponent
        let folderFD = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            defer { close(folderFD) }
            guard fsync(folderFD) == 0 else { throw failure("fsync the folder of") }
        }
        return byteCount
    }

    private func failure(_ what: String) -> StoreError {
        StoreError(
            kind: .io, operation: "\(what) audit archive", message: String(cString: strerror(errno)), path: path)
    }
}
