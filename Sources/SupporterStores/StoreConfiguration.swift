public import SupporterStore
public import SupporterStoreSQLite
public import SupportUtilities
import SupporterCore
import SupporterStorePostgres
import SupportPostgres
public import SupporterModel

/// Where and how a supporter node keeps its durable state, and the one place that opens an engine by name: the CLI,
/// the benchmarks and the tests build a node as
/// `SupporterNode(configuration:, store: opened.engine, cluster: opened.cluster)` from ``open()``.
public struct StoreConfiguration: Sendable {
    /// The storage libraries this process runs with, for `--version`: SQLite and libpq.
    public static var libraryVersions: [(name: String, version: String)] {
        [("SQLite", SQLiteLibrary.version), ("libpq", PostgresLibrary.version)]
    }

    /// Which engine: the SQLite file at ``path`` (default) or a PostgreSQL database.
    public var backend: StoreBackend = .sqlite
    /// With ``StoreBackend/sqlite``: the SQLite file that keeps codes, the audit trail, token digests and bans;
    /// `:memory:` keeps nothing.
    public var path: String = ":memory:"
    /// With ``StoreBackend/sqlite``: what a committed audit event survives: a crash of the node (default) or also a
    /// power loss (slower).
    public var durability: SQLiteDatabase.Durability = .processCrash
    /// Most store jobs waiting for the writer; beyond it new events are refused (SPEC §13).
    public var queueCapacity = 65_536
    /// With ``StoreBackend/postgres(_:)`` (several nodes may share the database): how long another node keeps
    /// seeing this node's devices after it stopped renewing (it died or lost the database). Renewed every third of
    /// it. Keep it well under the resume grace period.
    public var presenceLease: Duration = .seconds(10)
    public var logger: NodeLogger = .disabled

    public init(backend: StoreBackend = .sqlite, path: String = ":memory:") {
        self.backend = backend
        self.path = path
    }

    /// An opened engine, and the cluster bus that comes with it (PostgreSQL only).
    public struct Opened: Sendable {
        public let engine: any StoreEngine
        public let cluster: (any ClusterBus)?
    }

    /// ``open()``, with its failure as the node's own error (`.store`), for callers that build a node next.
    public func openForNode() throws(SupporterNodeError) -> Opened {
        do throws(StoreError) { return try open() } catch { throw SupporterNodeError(store: error) }
    }

    /// Opens (creating or migrating) the store.
    public func open() throws(StoreError) -> Opened {
        switch backend {
        case .sqlite:
            let engine = try SQLiteStoreEngine(path: path, durability: durability, logger: logger, capacity: queueCapacity)
            return Opened(engine: engine, cluster: nil)
        case .postgres(let connectionString):
            let member = ClusterMember(presenceLease: presenceLease)
            let engine = try PostgresStoreEngine(
                connectionString: connectionString, logger: logger, capacity: queueCapacity, member: member)
            return Opened(
                engine: engine,
                cluster: ClusterPeers(member: member, engine: engine, connectionString: connectionString))
        }
    }
}
