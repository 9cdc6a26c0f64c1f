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
