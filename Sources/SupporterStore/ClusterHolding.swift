public import SupporterCore

/// Who holds the session on a code, for a RESUME that arrived at a node that does not hold it.
public enum ClusterHolding: Sendable {
    /// No node holds it.
    case nobody
    /// A live node holds it (its lease runs for `remaining` more); the device should try again, or that node.
    case held(node: String, remaining: Duration)
    /// Its node died (the lease ran out): the session as that node last recorded it.
    case lapsed(node: String, StoredResumeState?)
}
