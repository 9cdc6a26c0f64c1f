public import SupportHTTP
public import SupportRuntime
public import SupportUtilities

/// Where and how the REST API is served, with defaults on every field (SPEC §13 states the limits).
public struct RESTServerConfiguration: Sendable {
    /// Listen address.
    public var host: String = "127.0.0.1"
    /// Listen port; 0 picks a free one (see ``RESTServer/port``).
    public var port: UInt16 = 7444
    /// The HTTPS certificate chain and key; both required (`rsup-supporter serve` gives the node's unless told
    /// otherwise).
    public var certificateChain: PEMSource?
    public var privateKey: PEMSource?
    /// Reverse proxies whose `X-Forwarded-For` is believed (IP addresses); see ``ClientAddressResolver``. They are
    /// also exempt from the per-address connection cap, since they carry many clients' connections.
    public var trustedProxies: [String] = []
    /// Unknown-token back-off and the bounds of its audit rows.
    public var authentication = AuthenticationGuard.Policy()
    /// HTTP limits and timeouts: requests (line 8 KiB, header section 16 KiB / 100 fields, body 64 KiB; a file sent to
    /// a device, `POST /sessions/{code}/files`, up to 16 MiB, 4 at once, 120 s to arrive), header 10 s, body 10 s,
    /// idle keep-alive 30 s, handler 30 s; at most 1024 connections in all and 32 per client address.
    public var http: HTTPServerConfiguration = {
        var http = HTTPServerConfiguration()
        http.limits.largeBodies = [
            HTTPRequestParser.LargeBodyRoute(
                method: .post, pathPrefix: "/api/v1/sessions/", pathSuffix: "/files", maxBytes: 16 << 20)
        ]
        return http
    }()
    /// Event loops (threads) of the REST API's own; device connections never share them.
    public var loopCount = 1
    /// Who may read `GET /metrics` without an account: loopback clients by default; more networks, and a metrics
    /// token, as the operator configures (`--metrics-allow`, `RSUP_METRICS_TOKEN`).
    public var metricsAccess = MetricsAccess()
    /// Where the REST API logs (refused authentications once per address per minute, start and stop).
    public var logger: NodeLogger = .disabled

    public init(host: String = "127.0.0.1", port: UInt16 = 7444) {
        self.host = host
        self.port = port
    }

    /// This configuration with the certificate chain and key of `tls` where it has none (a node's, to serve the API
    /// under the node's name).
    public func withIdentity(of tls: TLSConfiguration) -> RESTServerConfiguration {
        var configuration = self
        if configuration.certificateChain == nil || configuration.privateKey == nil {
            configuration.certificateChain = tls.certificateChain
            configuration.privateKey = tls.privateKey
        }
        return configuration
    }
}
