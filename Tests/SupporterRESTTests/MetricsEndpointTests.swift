import Foundation
import Testing
import TestSupport
import SupportHTTP
import SupportUtilities
@testable import SupporterREST

/// `GET /metrics` (issue 23): who may read it, and what its REST families say. The router in process: its requests
/// come from 127.0.0.1 (``RouterFixture/request(_:_:body:headers:)``); a real Prometheus over HTTPS is
/// MetricsScrapeTests.
@Suite struct MetricsEndpointTests {
    @Test func aClientOutsideTheAllowedNetworksNeedsTheMetricsToken() async throws {
        let token = "metrics-" + UUID().uuidString
        let fixture = try RouterFixture(
            metricsAccess: MetricsAccess(allowed: [try #require(IPPrefix("10.0.0.0/8"))], token: token))
        defer { fixture.stop() }
        let outside = await fixture.handle(.get, "/metrics", headers: [("Authorization", "")])
        #expect(outside.status.code == 403)
        #expect(outside.errorMessage?.contains("--metrics-allow") == true, "\(outside.text)")
        let withToken = await fixture.handle(.get, "/metrics", headers: [("Authorization", "Bearer \(token)")])
        #expect(withToken.status.code == 200)
        #expect(withToken.text.contains("# TYPE rsup_devices_online gauge"))
        let wrong = await fixture.handle(.get, "/metrics", headers: [("Authorization", "Bearer \(token)x")])
        #expect(wrong.status.code == 401)
        let admin = await fixture.handle(.get, "/metrics")  // the fixture's admin API token
        #expect(admin.status.code == 200)
    }

    /// Behind a trusted proxy (here on loopback, the allowed network) the client is whom X-Forwarded-For names; a
    /// request through it without one is refused, not taken for the proxy.
    @Test func throughATrustedProxyTheForwardedClientDecides() async throws {
        let fixture = try RouterFixture(trustedProxies: ["127.0.0.1"])
        defer { fixture.stop() }
        let none: (String, String) = ("Authorization", "")
        #expect(await fixture.handle(.get, "/metrics", headers: [none]).status.code == 403)
        let outside = await fixture.handle(.get, "/metrics", headers: [none, ("X-Forwarded-For", "203.0.113.9")])
        #expect(outside.status.code == 403)
        let inside = await fixture.handle(.get, "/metrics", headers: [none, ("X-Forwarded-For", "::1")])
        #expect(inside.status.code == 200)
    }

    @Test func noAddressWithMetricsAllowNoneAndAnIPv6ClientInAnIPv6Network() async throws {
        let nobody = try RouterFixture(metricsAccess: MetricsAccess(allowed: []))
        defer { nobody.stop() }
        #expect(await nobody.handle(.get, "/metrics", headers: [("Authorization", "")]).status.code == 403)
        let v6 = try RouterFixture(
            metricsAccess: MetricsAccess(allowed: [try #require(IPPrefix("2001:db8::/32"))]), trustedProxies: ["127.0.0.1"])
        defer { v6.stop() }
        let from = { (address: String) in [("Authorization", ""), ("X-Forwarded-For", address)] }
        #expect(await v6.handle(.get, "/metrics", headers: from("2001:db8:5::7")).status.code == 200)
        #expect(await v6.handle(.get, "/metrics", headers: from("2001:db9::7")).status.code == 403)
        #expect(await v6.handle(.get, "/metrics", headers: from("10.0.0.1")).status.code == 403)
    }

    @Test func requestsAreCountedByRouteTemplateNeverByTheCodeAsked() async throws {
        let fixture = try RouterFixture()
        defer { fixture.stop() }
        let code = try await fixture.node.createCode().record.code
        #expect(await fixture.handle(.get, "/api/v1/sessions/\(code)").status.code == 200)
        #expect(await fixture.handle(.get, "/api/v1/sessions/\(code)").status.code == 200)
        let unknown = await fixture.handle(.get, "/api/v1/sessions/nosuchcode").status.code
        let metrics = await fixture.handle(.get, "/metrics", headers: [("Authorization", "")]).text
        #expect(
            metrics.contains(#"rsup_http_requests_total{route="/api/v1/sessions/{code}",method="GET",status="200"} 2"#),
            "\(metrics)")
        #expect(
            metrics.contains(
                #"rsup_http_requests_total{route="/api/v1/sessions/{code}",method="GET",status="\#(unknown)"} 1"#))
        #expect(metrics.contains(#"rsup_http_request_duration_seconds_count{route="/api/v1/sessions/{code}"} 3"#))
        #expect(!metrics.contains(code) && !metrics.contains("nosuchcode"), "no code in any label")
        #expect(metrics.contains("rsup_sessions{state=\"open\"} 1"))
        #expect(metrics.contains("rsup_event_streams 0"))
    }
}
