/// What a node of several tells its store about the devices it holds, for presence renewal, and what the store tells
/// it back (docs/cluster.md, "Presence"). Both are called on the store's writer thread: brief in-memory work only.
public struct PresenceWatch: Sendable {
    /// The codes the node holds a device on now: `all` (claims still being committed included) and `committed`.
    /// Renewal extends the leases of `all` and of nothing else, and frees the node's other rows (a release that
    /// failed while the database was away).
    public var held: @Sendable () -> (all: Set<String>, committed: Set<String>)
    /// Codes of `committed` whose row another node claimed since (this node's lease lapsed): the node drops those
    /// sessions without recording anything (fencing).
    public var lost: @Sendable ([String]) -> Void

    public init(
        held: @escaping @Sendable () -> (all: Set<String>, committed: Set<String>),
        lost: @escaping @Sendable ([String]) -> Void
    ) {
        self.held = held
        self.lost = lost
    }
}
