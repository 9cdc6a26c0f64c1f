import SupportHTTP
import SupportUtilities
import SupporterModel

/// `GET /metrics`: every metric of the node and of its REST API in the Prometheus text exposition format (0.0.4),
/// for a scraper that holds no supporter account: allowed by its address or a token (``MetricsAccess``).
extension RESTRouter {
    /// The content type Prometheus asks for and reads.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    func metricsExposition(_ call: RESTCall) async throws(RESTError) -> HTTPResponse {
        let request = call.request
        if request.headers["Authorization"] != nil {
            let token = AuthenticationGuard.bearerToken(request.headers["Authorization"])
            if token.map(metricsAccess.isMetricsToken) != true {
                // Any other credential takes the API's own check: an unknown token backs off and is audited as every
                // guess is, and an admin API token may read metrics too.
                let (principal, _) = try await authenticate(request)
                guard principal.isAdmin else {
                    throw RESTError(.forbidden, "metrics are read with the metrics token or an admin API token")
                }
            }
        } else {
            // Behind a trusted proxy the client is whom X-Forwarded-For names; without it the client is unknown, and
            // an unknown client is not an allowed one (the proxy's own address may well be).
            let peer = request.peerAddress.map { IPAddressText.canonical($0.host) ?? $0.host }
            if let peer, resolver.trustedProxies.contains(peer), request.headers.values(for: "X-Forwarded-For").isEmpty {
                throw RESTError(
                    .forbidden, "metrics through a proxy need X-Forwarded-For, or the metrics token (Authorization: Bearer)")
            }
            guard metricsAccess.allows(clientAddress(request)) else {
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
