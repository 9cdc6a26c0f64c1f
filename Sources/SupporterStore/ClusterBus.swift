public import SupporterCore
public import SupportUtilities
public import SupporterModel

/// The other nodes sharing a node's database, as the node reaches them: what they commit (``ClusterNews``), who holds
/// which device, and commands for the devices they hold. The PostgreSQL engine's `ClusterPeers` is one; a node alone
/// (SQLite) has none.
///
/// Nothing here blocks an event loop: reads and sends are async, and news arrive on the bus's own thread (the node
/// does only brief in-memory work there).
public protocol ClusterBus: Sendable {
    /// This node's id among the nodes sharing the database.
    var nodeID: String { get }
    /// How long a node's claim on a device lasts without renewal.
    var presenceLease: Duration { get }

    /// Starts listening for the other nodes; `deliver` gets what they commit, in commit order. Returns once listening
    /// or after `timeout` (false: still trying in the background).
    func start(logger: NodeLogger, timeout: Duration, deliver: @escaping @Sendable (ClusterNews) -> Void) -> Bool
    /// Stops listening; returns within about a second.
    func stop()
    /// Whether the bus hears the other nodes now (its listening connection is up): part of a node's readiness.
    var isListening: Bool { get }
    /// What the bus counts, for the node's metrics.
    var metrics: ClusterMetrics { get }
    /// From now on presence renewal renews only the codes `watch` names as held, and reports those another node took.
    func watchPresence(_ watch: PresenceWatch)

    /// Sends `command` to `node` and waits for its answer. A command `node` has not taken within `timeout` is
    /// withdrawn (it can no longer be taken) and answered `busy`, "nothing was done"; one it took is answered with its
    /// outcome — or, should that answer never come (the holder died carrying it out, the database is gone), with an
    /// error saying the outcome is unknown. Never "not done" for a command that was done.
    func send(_ command: ClusterCommand, to node: String, timeout: Duration) async throws(SupporterNodeError)
        -> ClusterCommandAnswer
    /// Whether this node takes command `id` to carry it out: true once, and only while its sender still waits for it
    /// (false when it was taken already — a command read twice runs once — or withdrawn, or the store cannot say).
    /// A `vacate` is taken without asking the store: carried out late it changes nothing, and it must be quick.
    func take(_ id: Int64, _ command: ClusterCommand) async -> Bool
    /// Answers command `id` of node `origin`.
    func answer(_ id: Int64, to origin: String, _ answer: ClusterCommandAnswer) async
    /// The answer to a command this node sent arrived (`onlyIfWaiting`: read again after a reconnection).
    func answered(_ id: Int64, _ answer: ClusterCommandAnswer, onlyIfWaiting: Bool)
    /// The node holding the device on `code`, from the database (leases not run out); nil when none or this one.
    func holder(of code: String) async throws(SupporterNodeError) -> RemotePresence?
    /// Who holds the session on `code`, with the stored resume state of a node whose lease ran out.
    func holding(of code: String) async throws(SupporterNodeError) -> ClusterHolding
}
