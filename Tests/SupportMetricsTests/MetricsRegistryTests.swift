import Testing
@testable import SupportMetrics

/// The exposition a scraper reads: families with HELP and TYPE, labelled series, histograms with cumulative buckets,
/// values read when scraped, and escaping of what could break a line.
@Suite struct MetricsRegistryTests {
    @Test func countersAndReadGaugesAreShownWithHelpTypeAndLabels() {
        let registry = MetricsRegistry()
        let refusals = registry.counters("rsup_refusals_total", "Refusals, by reason.", labels: ["reason"])
        refusals.counter("bad_code").increment()
        refusals.counter("bad_code").increment(by: 2)
        refusals.counter("rate_limited").increment()
        refusals.counter("ignored").increment(by: -5)  // a counter never goes down
        registry.gauge("rsup_devices_online", "Devices online.") { 7 }
        #expect(
            registry.exposition() == """
                # HELP rsup_refusals_total Refusals, by reason.
                # TYPE rsup_refusals_total counter
                rsup_refusals_total{reason="bad_code"} 3
                rsup_refusals_total{reason="ignored"} 0
                rsup_refusals_total{reason="rate_limited"} 1
                # HELP rsup_devices_online Devices online.
                # TYPE rsup_devices_online gauge
                rsup_devices_online 7

                """)
    }

    @Test func aHistogramHasCumulativeBucketsAnInfiniteOneItsSumAndCount() {
        let registry = MetricsRegistry()
        let latency = registry.histogram("rsup_commit_seconds", "Commits.", bounds: [0.01, 0.1, 1])
        for seconds in [0.005, 0.01, 0.05, 2.0] { latency.observe(seconds) }
        latency.observe(Duration.milliseconds(500))
        #expect(
            registry.exposition() == """
                # HELP rsup_commit_seconds Commits.
                # TYPE rsup_commit_seconds histogram
                rsup_commit_seconds_bucket{le="0.01"} 2
                rsup_commit_seconds_bucket{le="0.1"} 3
                rsup_commit_seconds_bucket{le="1"} 4
                rsup_commit_seconds_bucket{le="+Inf"} 5
                rsup_commit_seconds_sum 2.565
                rsup_commit_seconds_count 5

                """)
    }

    @Test func labelValuesAndHelpAreEscapedAndASecondFamilyOfOneNameIsIgnored() {
        let registry = MetricsRegistry()
        registry.counters("rsup_x_total", "a \\ help\nwith a line", labels: ["what"]).counter("a\"b\\c\nd").increment()
        _ = registry.histogram("rsup_x_total", "the same name, another kind: not shown")
        #expect(registry.names == ["rsup_x_total"])
        #expect(
            registry.exposition() == """
                # HELP rsup_x_total a \\\\ help\\nwith a line
                # TYPE rsup_x_total counter
                rsup_x_total{what="a\\"b\\\\c\\nd"} 1

                """)
    }

    @Test func numbersAreWrittenAsPrometheusReadsThem() {
        #expect(MetricsText.number(3) == "3")
        #expect(MetricsText.number(0.25) == "0.25")
        #expect(MetricsText.number(.infinity) == "+Inf")
        #expect(MetricsText.number(-.infinity) == "-Inf")
        #expect(MetricsText.number(.nan) == "NaN")
        #expect(MetricsText.number(1e20) == "1e+20")
    }
}
