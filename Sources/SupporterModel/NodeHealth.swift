/// What a node's readiness probe (`GET /readyz`) checks, each part on its own: the node is ready to take new devices
/// and supporters only when every part is. Liveness (`GET /livez`) is separate: the process and its loops run.
public struct NodeHealth: Sendable, Hashable {
    /// The device port is open (it closes when the node drains or stops).
    public var listening: Bool
    /// The node is draining (SIGTERM, `drain`): it takes no new device, and hands its sessions over.
    public var draining: Bool
    /// A read of the store came back (SQLite's file, or PostgreSQL) within the probe's time.
    public var storeReachable: Bool
    /// Several nodes: the cluster listener hears the other nodes; nil for a node alone.
    public var clusterConnected: Bool?

    public init(listening: Bool, draining: Bool, storeReachable: Bool, clusterConnected: Bool?) {
        self.listening = listening
        self.draining = draining
        self.storeReachable = storeReachable
        self.clusterConnected = clusterConnected
    }

    /// Every part is as it should be.
    public var isReady: Bool { listening && !draining && storeReachable && clusterConnected != false }

    /// The parts that are not, in words for the node's log (never for the unauthenticated answer).
    public var problems: [String] {
        var problems: [String] = []
        if !listening { problems.append("the device port is not open") }
        if draining { problems.append("the node is draining") }
        if !storeReachable { problems.append("the store did not answer") }
        if clusterConnected == false { problems.append("the cluster listener is not connected") }
        return problems
    }
}
