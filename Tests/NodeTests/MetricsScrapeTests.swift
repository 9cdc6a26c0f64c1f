import Foundation
import Testing
import TestSupport
import DeviceNode
import SupporterNode
import SupporterREST
import SupportRuntime
import SupportUtilities

/// Issue 23: a real Prometheus server (Debian's `prometheus`) scrapes a real node's `/metrics` over HTTPS with the
/// metrics token, under a small load, and what it stores is what the test did; `promtool check metrics` passes on the
/// exposition.
@Suite(.serialized, .timeLimit(.minutes(5))) struct MetricsScrapeTests {
    @Test func prometheusScrapesTheDevicesOnlineAndWhatHappenedToThem() async throws {
        let harness = try NodeHarness()
        defer { harness.shutdown() }
        let token = "metrics-" + UUID().uuidString
        var rest = RESTServerConfiguration(host: "127.0.0.1", port: 0)
        rest.metricsAccess = MetricsAccess(allowed: [], token: token)  // the token only: as deploy.md recommends
        let server = try RESTServer(
            node: harness.supporter,
            configuration: rest.withIdentity(
                of: .makeServerConfiguration(
                    certificateChain: .file(harness.certificates.server.certificatePath),
                    privateKey: .file(harness.certificates.server.keyPath))))

        // A small load: three devices online, one session run to its start, one registration refused.
        var joined: [JoinedDevice] = []
        for index in 0..<3 {
            let code = try await harness.supporter.createCode().record.code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online(), "device \(index) online")
            joined.append(device)
        }
        let first = joined[0]
        let firstCode = first.session.code
        let request = try await harness.supporter.requestConnection(
            code: firstCode, supporterName: "Alice", type: .screenShare)
        _ = try #require(await first.request())
        first.session.answer(requestID: request, allow: true)
        _ = await harness.supporterEvent(on: firstCode) { if case .connected = $0 { true } else { false } }
        let refused = try JoinedDevice(node: try harness.device(), code: "000000000")
        _ = await refused.event { if case .error = $0 { true } else { false } }
        // The node's own count, waited for: the device's error event alone does not say the node has counted it.
        try await eventually("the refused registration counted") { () -> Bool? in
            (metricValue(harness.supporter.metrics.exposition(), #"rsup_registrations_total{outcome="refused"}"#) ?? 0)
                >= 1 ? true : nil
        }
        withExtendedLifetime(refused) {}

        // Plain HTTP on both TLS ports: each a failed handshake of the class `plaintext_http`.
        for port in [harness.port, server.port] { _ = await curl(["--max-time", "10", "http://127.0.0.1:\(port)/"]) }
        let failures = try await eventually("both plaintext handshakes counted") { () -> (Double, Double)? in
            let text = harness.supporter.metrics.exposition()
            guard let device = metricValue(text, #"rsup_tls_handshakes_total{outcome="failed",reason="plaintext_http"}"#),
                let api = metricValue(text, #"rsup_http_tls_handshake_failures_total{reason="plaintext_http"}"#)
            else { return nil }
            return (device, api)
        }
        #expect(failures == (1, 1))

        let folder = try TemporaryFolder()
        let tokenFile = folder.path + "/metrics.token"
        try Data(token.utf8).write(to: URL(fileURLWithPath: tokenFile))
        let configuration = """
            global: { scrape_interval: 1s, evaluation_interval: 1s }
            scrape_configs:
              - job_name: rsup
                scheme: https
                tls_config: { ca_file: \(harness.certificates.caPath), server_name: localhost }
                authorization: { credentials_file: \(tokenFile) }
                static_configs: [ { targets: ["127.0.0.1:\(server.port)"] } ]
            """
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: folder.path + "/prometheus.yml"))
        let log = folder.path + "/prometheus.log"
        let prometheus = try ChildProcess(
            "prometheus",
            ["--config.file=\(folder.path)/prometheus.yml", "--storage.tsdb.path=\(folder.path)/data",
             "--web.listen-address=127.0.0.1:0"],
            stdout: .file(log), stderr: .sameAsStdout)
        defer {
            prometheus.signal(SIGKILL)
            _ = prometheus.waitForExit()
        }
        // Its port, once it says where it listens (port 0: the kernel picked one).
        let address = try await eventually("Prometheus listening") { () -> String? in
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").first(where: { $0.contains("msg=\"Listening on\"") }) else {
                return nil
            }
            return line.split(separator: " ").first { $0.hasPrefix("address=") }.map { String($0.dropFirst(8)) }
        }

        /// One instant query's value, as Prometheus answers it (nil before it has one).
        func query(_ expression: String) async -> Double? {
            guard let body = await curl(["http://\(address)/api/v1/query", "--data-urlencode", "query=\(expression)"]),
                let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                let result = (json["data"] as? [String: Any])?["result"] as? [[String: Any]],
                let value = result.first?["value"] as? [Any], let text = value.last as? String
            else { return nil }
            return Double(text)
        }
        /// Asks Prometheus until `expression` has a value `accept` takes (it scrapes every second and announces
        /// nothing, so a test asks again as a dashboard would), for at most 120 s; the last value.
        func stored(_ expression: String, _ accept: (Double) -> Bool) async -> Double? {
            let started = ContinuousClock.now
            var value = await query(expression)
            while !(value.map(accept) ?? false), started.duration(to: .now) < .seconds(120) {
                await wallClockPause(.milliseconds(250))
                value = await query(expression)
            }
            return value
        }
        #expect(await stored("rsup_devices_online") { $0 == 3 } == 3, "rsup_devices_online as Prometheus stored it")
        #expect(await stored("up{job=\"rsup\"}") { $0 == 1 } == 1, "the node's target is up")
        // The load is over: what the node counts now is what Prometheus must store.
        let node = harness.supporter.metrics.exposition()
        for series in [
            #"rsup_registrations_total{outcome="accepted"}"#, #"rsup_registrations_total{outcome="refused"}"#,
            #"rsup_connection_request_outcomes_total{outcome="allowed"}"#, #"rsup_sessions{state="active"}"#,
            "rsup_session_start_seconds_count",
        ] {
            let expected = metricValue(node, series)
            #expect(expected != nil && expected != 0, "\(series) in the node's exposition: \(String(describing: expected))")
            let value = await stored(series) { $0 == expected }
            #expect(value == expected, "\(series): Prometheus \(String(describing: value)), the node \(String(describing: expected))")
        }
        #expect(metricValue(node, #"rsup_registrations_total{outcome="accepted"}"#) == 3)
        #expect(metricValue(node, #"rsup_connection_request_outcomes_total{outcome="allowed"}"#) == 1)
        #expect(metricValue(node, #"rsup_sessions{state="active"}"#) == 1)
        #expect(metricValue(node, "rsup_session_start_seconds_count") == 1)
        #expect((metricValue(node, #"rsup_registrations_total{outcome="refused"}"#) ?? 0) >= 1)
        #expect(await stored("rsup_store_commit_seconds_count") { $0 > 0 } ?? 0 > 0)
        #expect(await stored("process_open_fds") { $0 > 0 } ?? 0 > 0)

        // The exposition itself passes Prometheus's own linter.
        let exposition = try #require(
            await curl(
                ["--cacert", harness.certificates.caPath, "-H", "Authorization: Bearer \(token)",
                 "https://localhost:\(server.port)/metrics"]))
        let check = try ChildProcess("promtool", ["check", "metrics"], stdin: .pipe, stdout: .pipe, stderr: .sameAsStdout)
        check.write(Array(exposition.utf8))
        check.closeStdin()
        let findings = String(decoding: ChildProcess.readAll(check.stdoutFD), as: UTF8.self)
        #expect(await check.waitForExit(timeout: .seconds(60)) == 0, "promtool: \(findings)")
        #expect(!exposition.contains(firstCode), "no session code in any label")
        await server.shutdown()
        withExtendedLifetime(folder) {}
    }

    /// curl's body for `arguments` (nil when it failed).
    private func curl(_ arguments: [String]) async -> String? {
        let output = NSTemporaryDirectory() + "metrics-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        guard let process = try? ChildProcess("curl", ["-sf", "--max-time", "30", "-o", output] + arguments),
            await process.waitForExit(timeout: .seconds(60)) == 0
        else { return nil }
        return try? String(contentsOfFile: output, encoding: .utf8)
    }
}

/// The value of the sample `series` (its name and labels exactly as written) in `exposition`, or nil.
func metricValue(_ exposition: String, _ series: String) -> Double? {
    exposition.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
}
