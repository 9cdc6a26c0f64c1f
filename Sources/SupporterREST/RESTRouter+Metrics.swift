import SupportHTTP
import SupportUtilities
import SupporterModel

/// `GET /metrics`: every metric of the node and of its REST API in the Prometheus text exposition format (0.0.4),
/// for a scraper that holds no supporter account: allowed by its address or a token (``MetricsAccess``).
extension RESTRouter {
    /// The content type Prometheus asks for and reads.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    func metricsExposition(_ call: RESTCall) throws(RESTError) -> HTTPResponse {
        let request = call.request
        if let header = request.headers["Authorization"] {
            guard let token = AuthenticationGuard.bearerToken(header),
                metricsAccess.isMetricsToken(token) || node.tokenRecord(of: token)?.scope == .admin
            else {
                throw RESTError(.unauthorized, "that is neither the metrics token nor an admin API token")
            }
        } else {
            let address = clientAddress(request)
            guard metricsAccess.allows(address) else {
                throw RESTError(
                    .forbidden,
                    "metrics are served to the addresses of --metrics-allow, or with the metrics token "
                        + "(Authorization: Bearer)")
            }
        }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": Self.metricsContentType, "Cache-Control": "no-store"],
            body: Array(node.metrics.exposition().utf8))
    }
}
