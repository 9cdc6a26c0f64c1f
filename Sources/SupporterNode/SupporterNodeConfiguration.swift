public import SupporterCore
import SupportSession
public import SupportRuntime
public import SupportUtilities
public import SupportWire

/// How a supporter node listens and what it allows. Defaults on every field but the TLS identity.
public struct SupporterNodeConfiguration: Sendable {
    /// Listen address; `::` or `0.0.0.0` for all, `127.0.0.1` for loopback only.
    public var host: String = "127.0.0.1"
    /// Listen port; 0 picks a free one (see ``SupporterNode/port``).
    public var port: UInt16 = 7443
    /// The node's TLS server configuration (certificate chain and key; client certificates if wanted).
    public var tls: TLSConfiguration
    /// The name devices see in HELLO_ACK.
    public var nodeName: String = "supporter-node"
    /// The least keepalive interval the node accepts (SPEC §5.2: the effective one is the larger of both).
    public var keepaliveInterval: Duration = .seconds(15)
    /// How long a connection request waits for the device's answer before it is aborted.
    public var requestTimeout: Duration = .seconds(90)
    /// The protocol extensions the node offers (SPEC §15.1): access control, in-session messages and session
    /// resume. `.none` speaks protocol 1.0 exactly.
    public var extensions: ProtocolExtensions = .all
    /// With session resume: how long a session whose link was lost waits for the device's RESUME (announced in
    /// HELLO_ACK, 1–600 s).
    public var resumeGrace: Duration = .seconds(30)
    /// How long a new code stays valid.
    public var defaultCodeLifetime: Duration = .seconds(24 * 3600)
    /// Event loops (threads) for connections.
    public var loopCount: Int = 2
    /// Back-off, refusal and connection limits (SPEC §13).
    public var registryPolicy = CodeRegistry.Policy()
    /// How long an accepted connection may stay without registering on a code (SPEC §13).
    public var registrationDeadline: Duration = .seconds(10)
    /// Most store jobs waiting for the writer; beyond it new events are refused (SPEC §13).
    public var storeQueueCapacity = 65_536
    public var logger: NodeLogger = .disabled
    /// Which engine keeps the node's durable state: the SQLite file at ``storePath`` (default) or a PostgreSQL
    /// database.
    public var storeBackend: StoreBackend = .sqlite
    /// With ``StoreBackend/postgres(_:)`` (several nodes may share the database): how long another node keeps
    /// seeing this node's devices after it stopped renewing (it died or lost the database). Renewed every third of
    /// it. Keep it well under the resume grace period.
    public var presenceLease: Duration = .seconds(10)
    /// With ``StoreBackend/sqlite``: the SQLite file that keeps codes, the audit trail, token digests and bans; `:memory:` keeps nothing.
    public var storePath: String = ":memory:"
    /// What a committed audit event survives: a crash of the node (default) or also a power loss (slower).
    public var durability: SQLiteDatabase.Durability = .processCrash

    public init(tls: TLSConfiguration) { self.tls = tls }
}
