import SupporterCore
import SupportWire
import SupportUtilities

/// An error of the supporter node's durable store: what was being done, what the engine (SQLite, PostgreSQL) said,
/// and where.
///
/// A struct over a small kind, so new kinds can be added without breaking callers that switch on ``kind``.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely, for callers that react differently (a duplicate code, a missing code, …).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case sqlite, cantOpen, corrupt, duplicate, notFound, schemaTooNew, invalidData, constraint, busy, integrity,
                revoked, io, postgres, unavailable, heldElsewhere, fenced, unsupported
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Any other failure reported by SQLite (see ``StoreError/resultCode``).
        public static let sqlite = Kind(.sqlite)
        /// The database file could not be opened or created (missing folder, permissions, read-only file system).
        public static let cantOpen = Kind(.cantOpen)
        /// The file is not an SQLite database, or it is damaged.
        public static let corrupt = Kind(.corrupt)
        /// A row with the same key already exists (for example a session code), or a file that is never overwritten
        /// (an audit archive).
        public static let duplicate = Kind(.duplicate)
        /// The row to change does not exist.
        public static let notFound = Kind(.notFound)
        /// The database was written by a newer version of the node.
        public static let schemaTooNew = Kind(.schemaTooNew)
        /// A value read from the file cannot be understood (unknown code type, malformed JSON, …).
        public static let invalidData = Kind(.invalidData)
        /// A constraint or trigger refused the change (for example an UPDATE of an audit event).
        public static let constraint = Kind(.constraint)
        /// Another process held the database locked for longer than the busy timeout.
        public static let busy = Kind(.busy)
        /// The audit trail fails its verification (see ``SessionStore/verifyAudit()``), so the store will not archive
        /// it; or a folder is open to other users and cannot be closed (see ``DataFolder``).
        public static let integrity = Kind(.integrity)
        /// The API token was revoked: it is never accepted, or added, again.
        public static let revoked = Kind(.revoked)
        /// Reading or writing a file other than the database failed (an audit archive, the data folder).
        public static let io = Kind(.io)
        /// Any other failure reported by PostgreSQL (see ``StoreError/underlying`` for its SQLSTATE).
        public static let postgres = Kind(.postgres)
        /// The database server cannot be reached, or the connection to it broke: nothing of the change is stored; the
        /// store reconnects and later changes go through once the server is back.
        public static let unavailable = Kind(.unavailable)
        /// Several nodes share the database and another node's live presence holds the device on this code: the
        /// registration did not happen here.
        public static let heldElsewhere = Kind(.heldElsewhere)
        /// Several nodes share the database and another node claimed the code since this node did (this node's
        /// lease lapsed: it was frozen or cut off): what this node was about to record about the session did not
        /// happen, since the session now continues there.
        public static let fenced = Kind(.fenced)
        /// The store's engine cannot do this: nothing was changed.
        public static let unsupported = Kind(.unsupported)

        public var description: String { base.rawValue }
    }

    /// What went wrong, coarsely.
    public var kind: Kind
    /// What the store was doing, e.g. `open`, `prepare`, `insert session code`.
    public var operation: String
    /// SQLite's message (`sqlite3_errmsg`) or the store's own explanation.
    public var message: String
    /// The database file (`:memory:` for an in-memory database).
    public var path: String
    /// SQLite's extended result code, when SQLite reported the error.
    public var resultCode: Int32?
    /// The error of the engine below, when there is one (a `PostgresError`, with its SQLSTATE). Not part of equality.
    public var underlying: (any Error & Sendable)?

    public init(
        kind: Kind, operation: String, message: String, path: String, resultCode: Int32? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.message = message
        self.path = path
        self.resultCode = resultCode
        self.underlying = underlying
    }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool {
        lhs.kind == rhs.kind && lhs.operation == rhs.operation && lhs.message == rhs.message && lhs.path == rhs.path
            && lhs.resultCode == rhs.resultCode
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(operation)
        hasher.combine(message)
        hasher.combine(path)
        hasher.combine(resultCode)
    }

    public var description: String {
        var text = "\(operation) failed on \(path): \(message)"
        if let resultCode { text += " (SQLite code \(resultCode))" }
        return text
    }
}
