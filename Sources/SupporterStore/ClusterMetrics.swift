public import SupportMetrics
import Synchronization

/// What a node's cluster bus counts (issue 23): presence rows held, lease renewals, listener reconnects, commands
/// routed to other nodes and how long their answers took. Kept by the bus where things happen; shown by the node's
/// registry (``register(in:)``).
public final class ClusterMetrics: Sendable {
    /// Presence rows this node held at its last lease renewal.
    private let rowsHeld = Atomic<Int>(0)
    public let leaseRenewals = MetricCounter()
    public let leaseRenewalFailures = MetricCounter()
    /// Times the listening connection was opened again after it was lost.
    public let listenerReconnects = MetricCounter()
    /// Supporters' commands sent to another node and carried out there.
    public let routedAnswered = MetricCounter()
    /// Supporters' commands the holding node refused (a conflict, not granted, forbidden): business, not transport.
    public let routedRefused = MetricCounter()
    /// Supporters' commands that got no answer: withdrawn after the timeout, too many waiting, the database
    /// unreachable, the outcome unknown.
    public let routedFailed = MetricCounter()
    /// From sending a command to its answer.
    public let routedLatency = MetricHistogram()

    public init() {}

    /// The presence rows held, as the last renewal found them.
    public var presenceRowsHeld: Int {
        get { rowsHeld.load(ordering: .relaxed) }
        set { rowsHeld.store(newValue, ordering: .relaxed) }
    }

    /// Adds the cluster's families to `registry`.
    public func register(in registry: MetricsRegistry) {
        registry.gauge("rsup_cluster_presence_rows", "Device presence rows this node held at its last lease renewal.") {
            [self] in Double(presenceRowsHeld)
        }
        registry.read(
            "rsup_cluster_lease_renewals_total", "Renewals of this node's presence leases, by outcome.", kind: .counter,
            labels: ["outcome"]
        ) { [self] in
            [
                MetricsRegistry.Sample(["ok"], Double(leaseRenewals.value)),
                MetricsRegistry.Sample(["failed"], Double(leaseRenewalFailures.value)),
            ]
        }
        registry.read(
            "rsup_cluster_listener_reconnects_total",
            "Times the cluster listener's PostgreSQL connection was opened again after it was lost.", kind: .counter
        ) { [self] in [MetricsRegistry.Sample(Double(listenerReconnects.value))] }
        registry.read(
            "rsup_cluster_routed_commands_total",
            "Supporters' commands sent to the node holding a device: answered (carried out), refused by that node, "
                + "failed (no answer: timed out, queue full, database unreachable).",
            kind: .counter, labels: ["outcome"]
        ) { [self] in
            [
                MetricsRegistry.Sample(["answered"], Double(routedAnswered.value)),
                MetricsRegistry.Sample(["refused"], Double(routedRefused.value)),
                MetricsRegistry.Sample(["failed"], Double(routedFailed.value)),
            ]
        }
        registry.add(
            histogram: routedLatency, "rsup_cluster_routed_command_seconds",
            "From sending a supporter's command to another node to its answer (or to giving up on it).")
    }
}
