import SupporterCore
import Synchronization
import SupporterModel
import SupporterStore
import SupportMetrics
import SupportRuntime
import SupportSession
import SupportWire

/// The supporter node's own metrics (issue 23), counted where things happen on the device side; the REST API adds
/// its own families to the same registry. Labels take values from bounded sets only: outcomes, protocol reason
/// codes, session states, handshake failure classes — never a code, an address or a name.
final class NodeMetrics: Sendable {
    let registry: MetricsRegistry
    /// REGISTERs decided, by `outcome` (`accepted`, `refused`).
    private let registrations: CounterFamily
    /// Refused REGISTERs, by protocol `reason` (SPEC §6 reason codes: at most 256 values).
    private let refusals: CounterFamily
    /// RESUMEs decided, by `outcome` (`resumed`, `refused`).
    private let resumes: CounterFamily
    let requestsSent: MetricCounter
    /// How connection requests ended, by `outcome` (`allowed`, `rejected`, `timed_out`, `aborted`).
    private let requestOutcomes: CounterFamily
    /// Sessions (or waits on a code) that ended, by protocol `reason`.
    private let sessionsEnded: CounterFamily
    /// From the device's allow reaching the node to the session being durable and the supporter told.
    let sessionStart: MetricHistogram
    /// TLS handshakes on the device listener, by `outcome` (`completed`: TLS and the HELLO exchange; `failed`: TLS)
    /// and failure `reason` class.
    private let handshakes: CounterFamily

    init(registry: MetricsRegistry) {
        self.registry = registry
        registrations = registry.counters(
            "rsup_registrations_total", "Device registrations (REGISTER) decided, by outcome.", labels: ["outcome"])
        refusals = registry.counters(
            "rsup_registration_refusals_total", "Device registrations refused, by protocol reason code.",
            labels: ["reason"])
        resumes = registry.counters(
            "rsup_resumes_total", "Session resumes (RESUME) decided, by outcome.", labels: ["outcome"])
        requestsSent = registry.counter("rsup_connection_requests_total", "Connection requests sent to devices.")
        requestOutcomes = registry.counters(
            "rsup_connection_request_outcomes_total",
            "How connection requests ended: allowed, rejected, timed_out (the device did not answer), aborted.",
            labels: ["outcome"])
        sessionsEnded = registry.counters(
            "rsup_sessions_ended_total", "Sessions and waits on a code that ended, by protocol reason code.",
            labels: ["reason"])
        sessionStart = registry.histogram(
            "rsup_session_start_seconds",
            "From a device's allow reaching the node to the session being recorded and the supporter told.")
        handshakes = registry.counters(
            "rsup_tls_handshakes_total", "TLS handshakes on the device listener: completed (TLS and HELLO), or failed (by reason class).",
            labels: ["outcome", "reason"])
        for outcome in ["accepted", "refused"] { _ = registrations.counter(outcome) }
        for outcome in ["resumed", "refused"] { _ = resumes.counter(outcome) }
        for outcome in ["allowed", "rejected", "timed_out", "aborted"] { _ = requestOutcomes.counter(outcome) }
        _ = handshakes.counter("completed", "")
        ProcessMetrics.register(in: registry)
    }

    func registrationAccepted() { registrations.counter("accepted").increment() }

    func registrationRefused(_ reason: ReasonCode) {
        registrations.counter("refused").increment()
        refusals.counter(reason.name ?? "other").increment()
    }

    func resumed() { resumes.counter("resumed").increment() }
    func resumeRefused() { resumes.counter("refused").increment() }

    /// Counts what a session step reports (the device's answers, ends).
    func report(_ event: SupporterSessionEvent) {
        switch event {
        case .connected: requestOutcomes.counter("allowed").increment()
        case .rejected: requestOutcomes.counter("rejected").increment()
        case .requestTimedOut: requestOutcomes.counter("timed_out").increment()
        // A device chooses its END's reason byte: a code SPEC §6 does not name counts as `other`.
        case .ended(let reason, _): sessionsEnded.counter(reason.name ?? "other").increment()
        default: break
        }
    }

    func requestAborted() { requestOutcomes.counter("aborted").increment() }

    func handshakeCompleted() { handshakes.counter("completed", "").increment() }

    /// A failed handshake, its reason (OpenSSL's words, a log line's) put in one of a few classes.
    func handshakeFailed(_ reason: String) {
        handshakes.counter("failed", TLSConnection.handshakeFailureClass(reason)).increment()
    }

    /// The families read when scraped from the node's state and its store: devices online, codes by state, the
    /// store writer's queue, jobs and commit latency.
    func registerReads(node: SupporterNode) {
        // One pass over the codes per scrape (one take of the session lock), for both families.
        let census = Mutex<(devicesHere: Int, states: [SessionCodeState: Int])>((0, [:]))
        registry.onScrape { [weak node] in
            let taken = node?.census() ?? (0, [:])
            census.withLock { $0 = taken }
        }
        registry.gauge("rsup_devices_online", "Devices registered on this node now.") {
            Double(census.withLock { $0.devicesHere })
        }
        registry.read(
            "rsup_sessions", "Session codes by state (open, online, request_pending, active, closed, expired).",
            kind: .gauge, labels: ["state"]
        ) {
            let states = census.withLock { $0.states }
            return SessionCodeState.allCases.map { MetricsRegistry.Sample([$0.rawValue], Double(states[$0] ?? 0)) }
        }
        let store = node.store
        registry.gauge("rsup_store_queue_depth", "Store writer jobs waiting to be applied.") {
            Double(store.statistics.queued)
        }
        registry.read(
            "rsup_store_jobs_total", "Store writer jobs, by outcome (applied, failed, refused: the queue was full).",
            kind: .counter, labels: ["outcome"]
        ) {
            let statistics = store.statistics
            return [
                MetricsRegistry.Sample(["applied"], Double(statistics.jobsApplied)),
                MetricsRegistry.Sample(["failed"], Double(statistics.jobsFailed)),
                MetricsRegistry.Sample(["refused"], Double(statistics.refusedWhenFull)),
            ]
        }
        registry.add(
            histogram: store.commitLatency, "rsup_store_commit_seconds",
            "Store writer transactions, from their start to their commit.")
        node.cluster?.metrics.register(in: registry)
    }
}
