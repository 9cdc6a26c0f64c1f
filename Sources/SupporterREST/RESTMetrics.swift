import SupportHTTP
import SupportMetrics
import SupportRuntime
import SupportUtilities

/// The REST API's metrics, in the node's registry: requests by route template, method and status, their latency by
/// route template, and the event streams open. A route's label is its pattern (`/api/v1/sessions/{code}`), never
/// the path asked for, so the series stay as few as the routes.
struct RESTMetrics: Sendable {
    private let requests: CounterFamily
    private let latency: HistogramFamily
    private let handshakeFailures: CounterFamily

    init(registry: MetricsRegistry, feed: EventFeed) {
        requests = registry.counters(
            "rsup_http_requests_total", "REST API and console requests answered, by route template, method and status.",
            labels: ["route", "method", "status"])
        latency = registry.histograms(
            "rsup_http_request_duration_seconds",
            "From a REST API request's arrival at the router to its answer (an event stream: to its first bytes), by "
                + "route template.",
            labels: ["route"])
        registry.gauge("rsup_event_streams", "Event streams (GET /api/v1/events) open now.") { [weak feed] in
            Double(feed?.subscriberCount ?? 0)
        }
        handshakeFailures = registry.counters(
            "rsup_http_tls_handshake_failures_total", "Failed TLS handshakes on the REST API's port, by reason class.",
            labels: ["reason"])
    }

    /// A failed handshake on the API port.
    func handshakeFailed(_ reason: String) {
        handshakeFailures.counter(TLSConnection.handshakeFailureClass(reason)).increment()
    }

    /// The HTTP server's connection counts, read when scraped.
    static func register(_ server: HTTPServer, in registry: MetricsRegistry) {
        registry.gauge("rsup_http_connections", "Connections open on the REST API's port now.") { [weak server] in
            Double(server?.connectionCount ?? 0)
        }
        registry.read(
            "rsup_http_connections_closed_total",
            "REST API connections closed by the server's caps: refused (a cap was reached), evicted (idle, to make room).",
            kind: .counter, labels: ["why"]
        ) { [weak server] in
            [
                MetricsRegistry.Sample(["refused"], Double(server?.refusedConnections ?? 0)),
                MetricsRegistry.Sample(["evicted"], Double(server?.evictedConnections ?? 0)),
            ]
        }
    }

    /// Methods shown by name; any other token counts as `OTHER` (a client may send any token).
    private static let knownMethods: Set<HTTPMethod> = [.get, .head, .post, .put, .patch, .delete, .options]

    /// Counts one answered request of `route` (a template, or `other`).
    func answered(route: String, method: HTTPMethod, status: Int, after duration: Duration) {
        requests.counter(route, Self.knownMethods.contains(method) ? method.rawValue : "OTHER", "\(status)").increment()
        latency.histogram(route).observe(duration)
    }
}
