public import Foundation
import SupportWire
import SupportUtilities

/// What checking the audit trail's hash chain found (see ``SessionStore/verifyAudit()`` and
/// ``SessionStore/verifyArchive(at:)``).
///
/// The chain proves that no stored event was changed, removed or slipped in between others, relative to a head you
/// trust: someone who can write the database file and knows the (public) digest format can still append forged events
/// with correct digests, or cut the newest ones together with SQLite's id counter. Record ``head`` somewhere else
/// (the `audit --verify` command prints it) to catch that too.
public struct AuditVerification: Sendable, Hashable {
    /// How many events were checked.
    public var eventCount: Int
    /// The first and last id checked; nil when there were none.
    public var firstID: Int64?
    public var lastID: Int64?
    /// The digest the chain ends with: the newest event's; the anchor's or 32 zero bytes when there are no events.
    public var head: [UInt8]
    /// The archive anchor the database's chain starts from (``SessionStore/archiveAudit(before:to:)``), or the anchor
    /// an archive file ends at; nil when none.
    public var anchor: AuditAnchor?
    /// Every problem found, first the events' in id order, then the schema's (at most 100); empty when verified.
    public var problems: [AuditProblem]

    public init(
        eventCount: Int, firstID: Int64?, lastID: Int64?, head: [UInt8], anchor: AuditAnchor?,
        problems: [AuditProblem]
    ) {
        self.eventCount = eventCount
        self.firstID = firstID
        self.lastID = lastID
        self.head = head
        self.anchor = anchor
        self.problems = problems
    }

    /// True when the chain holds and every append-only trigger is in place.
    public var isVerified: Bool { problems.isEmpty }
    /// The first problem, the one to look at first; nil when verified.
    public var problem: AuditProblem? { problems.first }
    /// ``head`` in lower-case hexadecimal.
    public var headHex: String { AuditChain.hex(head) }
}

/// One place where the audit trail does not hold: what kind of tampering it shows, and where.
public struct AuditProblem: Sendable, Hashable, CustomStringConvertible {
    /// What the problem shows. A struct over a private enum, so new kinds can be added without breaking callers.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case editedRow, insertedRow, deletedRow, brokenLink, missingTrigger, alteredTrigger, openGate,
                anchorMismatch, malformedArchive
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An event's contents no longer match its digest: it was changed after it was written.
        public static let editedRow = Kind(.editedRow)
        /// An event the store did not write: no digest, or an id where the chain has already passed.
        public static let insertedRow = Kind(.insertedRow)
        /// Ids are missing (between two events, or at the end): events were deleted outside an archive.
        public static let deletedRow = Kind(.deletedRow)
        /// An event's previous digest is not the digest of the event before it: one of the two was rewritten together
        /// with a recomputed digest.
        public static let brokenLink = Kind(.brokenLink)
        /// An append-only trigger is gone: updates or deletes are no longer refused.
        public static let missingTrigger = Kind(.missingTrigger)
        /// An append-only trigger is not the one the store created.
        public static let alteredTrigger = Kind(.alteredTrigger)
        /// The archive gate holds rows outside an archive: deletes are not refused.
        public static let openGate = Kind(.openGate)
        /// An archive file does not start or end where the database's anchors say an archive did.
        public static let anchorMismatch = Kind(.anchorMismatch)
        /// A line of an archive file is not an archived event.
        public static let malformedArchive = Kind(.malformedArchive)

        public var description: String { base.rawValue }
    }

    public var kind: Kind
    /// The event concerned (for a deletion, the first missing id); nil for a problem of the schema.
    public var id: Int64?
    /// The trigger concerned, for ``Kind/missingTrigger`` and ``Kind/alteredTrigger``.
    public var trigger: String?
    /// One sentence for people.
    public var message: String

    public init(_ kind: Kind, id: Int64? = nil, trigger: String? = nil, _ message: String) {
        self.kind = kind
        self.id = id
        self.trigger = trigger
        self.message = message
    }

    public var description: String { message }
}

/// Where the database's audit chain starts after events were archived: the last archived event's id and digest.
public struct AuditAnchor: Sendable, Hashable {
    /// The id of the last event the archive took; the chain in the database continues at the next id.
    public var lastID: Int64
    /// That event's digest: the previous digest of the next event.
    public var digest: [UInt8]
    /// When the archive was made.
    public var archivedAt: Date
    /// How many events that archive took.
    public var eventCount: Int

    public init(lastID: Int64, digest: [UInt8], archivedAt: Date, eventCount: Int) {
        self.lastID = lastID
        self.digest = digest
        self.archivedAt = archivedAt
        self.eventCount = eventCount
    }

    /// ``digest`` in lower-case hexadecimal.
    public var digestHex: String { AuditChain.hex(digest) }
}

/// What ``SessionStore/archiveAudit(before:to:)`` did.
public struct ArchiveSummary: Sendable, Hashable {
    /// The archive file; not created when nothing was archived.
    public var path: String
    /// How many events were written to the file and removed from the database.
    public var eventCount: Int
    public var firstID: Int64?
    public var lastID: Int64?
    /// The anchor stored with the removal; nil when nothing was archived.
    public var anchor: AuditAnchor?
    /// The size of the archive file.
    public var byteCount: Int

    public init(
        path: String, eventCount: Int, firstID: Int64?, lastID: Int64?, anchor: AuditAnchor?, byteCount: Int
    ) {
        self.path = path
        self.eventCount = eventCount
        self.firstID = firstID
        self.lastID = lastID
        self.anchor = anchor
        self.byteCount = byteCount
    }
}
