public import Foundation
public import SupporterCore
public import SupporterStore
import SupporterStorePostgres
import SupporterStoreSQLite
import SupportUtilities
public import SupporterModel

/// A supporter node's audit trail opened by a tool (`rsup-supporter audit`), node running or not, in whichever store
/// holds it: the SQLite file or a PostgreSQL database.
///
/// Listing and ``verify()`` give the same answers on both engines: one ``AuditChainWalker`` recomputes every digest
/// and checks every link, then each engine adds its own checks (SQLite: the id counter, its triggers and the archive
/// gate; PostgreSQL: the chain's head row, its triggers and their functions, the archive gate). Archiving
/// (``archive(before:to:)``) writes the same file and keeps the same anchor on both, and ``verifyArchive(at:)`` checks
/// a file against either.
///
/// Opening never creates a store: a PostgreSQL database without a node's tables is ``StoreError/Kind/notFound``.
/// Call ``close()`` when done.
public final class AuditTrail: Sendable {
    private enum Engine: Sendable {
        case sqlite(SessionStore)
        case postgres(PostgresStoreEngine)
    }

    private let engine: Engine
    /// Where the trail is: the SQLite file, or the PostgreSQL server without its password.
    public let location: String

    /// Opens the SQLite store at `path` (see ``SessionStore/init(path:durability:)``).
    public init(sqlitePath path: String) throws(StoreError) {
        engine = .sqlite(try SessionStore(path: path))
        location = path
    }

    /// Opens the store a node keeps in the PostgreSQL database `connectionString` (libpq's form, as
    /// ``StoreBackend/postgres(_:)``), reading only.
    public init(postgres connectionString: String) throws(StoreError) {
        let store = try PostgresStoreEngine(connectionString: connectionString, logger: .disabled, migrating: false)
        engine = .postgres(store)
        location = store.location
    }

    /// Stored events in id order, filtered as ``SessionStore/auditEvents(code:from:to:limit:afterID:beforeID:newestFirst:)``.
    public func events(code: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int = 1000, afterID: Int64? = nil)
        throws(StoreError) -> [AuditEvent]
    {
        switch engine {
        case .sqlite(let store):
            try store.auditEvents(code: code, from: from, to: to, limit: limit, afterID: afterID)
        case .postgres(let store):
            try store.auditEvents(
                code: code, from: from, to: to, limit: limit, afterID: afterID, beforeID: nil, newestFirst: false)
        }
    }

    /// Checks the whole trail (see the type's summary); throws only when the store cannot be read.
    public func verify() throws(StoreError) -> AuditVerification {
        switch engine {
        case .sqlite(let store): try store.verifyAudit()
        case .postgres(let store): try store.verifyAudit()
        }
    }

    /// Checks an archive file against the store's anchors (``AuditArchive/verify(at:anchors:)``).
    public func verifyArchive(at path: String) throws(StoreError) -> AuditVerification {
        switch engine {
        case .sqlite(let store): try store.verifyArchive(at: path)
        case .postgres(let store): try store.verifyArchive(at: path)
        }
    }

    /// Moves the events before `cut` to a new archive file (``SessionStore/archiveAudit(before:to:)``,
    /// ``PostgresStoreEngine/archiveAudit(before:to:)``).
    public func archive(before cut: Date, to path: String) throws(StoreError) -> ArchiveSummary {
        switch engine {
        case .sqlite(let store): try store.archiveAudit(before: cut, to: path)
        case .postgres(let store): try store.archiveAudit(before: cut, to: path)
        }
    }

    /// Lets go of the store (the PostgreSQL connection and its thread). Later calls on PostgreSQL throw.
    public func close() {
        if case .postgres(let store) = engine { store.stop() }
    }
}
