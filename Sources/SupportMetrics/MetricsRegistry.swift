import Synchronization

/// Every metric of a process, rendered in the Prometheus text exposition format (version 0.0.4) by
/// ``exposition()``.
///
/// A family is one metric name with its help text, its type and its series (one per set of label values). Counters and
/// histograms are objects their owners keep and update where things happen (``MetricCounter``,
/// ``MetricHistogram``); values someone else already keeps (devices online, a queue's depth) are read when scraped,
/// by a function the owner registers. Label values must come from bounded sets (a reason code, a route template, a
/// state): never a session code, an address or a login, so that the series stay few whatever clients do.
public final class MetricsRegistry: Sendable {
    /// A metric's Prometheus type.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// One series' current value.
    public struct Sample: Sendable {
        public var labels: [String]
        public var value: Double

        public init(_ labels: [String], _ value: Double) {
            self.labels = labels
            self.value = value
        }

        /// A sample of a family without labels.
        public init(_ value: Double) { self.init([], value) }
    }

    private enum Source: Sendable {
        case counters(CounterFamily)
        case histograms(HistogramFamily)
        case read(@Sendable () -> [Sample])
    }

    private struct Family: Sendable {
        let name: String
        let help: String
        let kind: Kind
        let labelNames: [String]
        let source: Source
    }

    private let families = Mutex<[Family]>([])
    /// Run at the start of each ``exposition()``: an owner reads a costly state once for several families.
    private let scrapeHooks = Mutex<[@Sendable () -> Void]>([])

    public init() {}

    /// A counter family: ask it for the counter of each set of label values (`labelNames.count` values each).
    /// Asked again for a name it holds, it returns the family it made the first time (a service started twice
    /// beside one node goes on counting where it was).
    public func counters(_ name: String, _ help: String, labels labelNames: [String] = []) -> CounterFamily {
        families.withLock { families in
            for family in families where family.name == name {
                if case .counters(let existing) = family.source { return existing }
            }
            let family = CounterFamily(labelCount: labelNames.count)
            Self.add(Family(name: name, help: help, kind: .counter, labelNames: labelNames, source: .counters(family)), to: &families)
            return family
        }
    }

    /// One counter without labels.
    public func counter(_ name: String, _ help: String) -> MetricCounter {
        counters(name, help).counter()
    }

    /// A histogram family of durations in seconds, with `bounds` for each of its series.
    public func histograms(
        _ name: String, _ help: String, labels labelNames: [String] = [],
        bounds: [Double] = MetricHistogram.latencyBounds
    ) -> HistogramFamily {
        families.withLock { families in
            for family in families where family.name == name {
                if case .histograms(let existing) = family.source { return existing }
            }
            let family = HistogramFamily(labelCount: labelNames.count, bounds: bounds)
            Self.add(
                Family(name: name, help: help, kind: .histogram, labelNames: labelNames, source: .histograms(family)),
                to: &families)
            return family
        }
    }

    /// One histogram without labels.
    public func histogram(_ name: String, _ help: String, bounds: [Double] = MetricHistogram.latencyBounds)
        -> MetricHistogram
    {
        histograms(name, help, bounds: bounds).histogram()
    }

    /// A histogram its owner made (a store engine's commit latency, say), shown under `name`.
    public func add(histogram: MetricHistogram, _ name: String, _ help: String) {
        let family = HistogramFamily(labelCount: 0, bounds: histogram.bounds)
        family.adopt(histogram)
        add(Family(name: name, help: help, kind: .histogram, labelNames: [], source: .histograms(family)))
    }

    /// A family whose samples `read` gives when scraped: a gauge, or a counter someone else keeps. `read` runs on the
    /// scraping thread and must not block for long. A later `read` of the same name replaces it (the newest source
    /// of a value wins: a service started again beside one node).
    public func read(
        _ name: String, _ help: String, kind: Kind, labels labelNames: [String] = [],
        _ read: @escaping @Sendable () -> [Sample]
    ) {
        let family = Family(name: name, help: help, kind: kind, labelNames: labelNames, source: .read(read))
        families.withLock { families in
            if let index = families.firstIndex(where: { $0.name == name }) {
                if case .read = families[index].source { families[index] = family }
                return
            }
            families.append(family)
        }
    }

    /// A gauge without labels, read when scraped.
    public func gauge(_ name: String, _ help: String, _ value: @escaping @Sendable () -> Double) {
        read(name, help, kind: .gauge) { [Sample(value())] }
    }

    /// Runs `hook` at the start of every ``exposition()``, before any family is read.
    public func onScrape(_ hook: @escaping @Sendable () -> Void) { scrapeHooks.withLock { $0.append(hook) } }

    /// Names registered so far, in order.
    public var names: [String] { families.withLock { $0.map(\.name) } }

    private func add(_ family: Family) {
        families.withLock { Self.add(family, to: &$0) }
    }

    private static func add(_ family: Family, to families: inout [Family]) {
        // A second family of one name would make the exposition invalid: the first one stays.
        guard !families.contains(where: { $0.name == family.name }) else { return }
        families.append(family)
    }

    /// Every family with its samples, in the text exposition format (`text/plain; version=0.0.4`).
    public func exposition() -> String {
        for hook in scrapeHooks.withLock({ $0 }) { hook() }
        var text = ""
        for family in families.withLock({ $0 }) {
            text += "# HELP \(family.name) \(MetricsText.help(family.help))\n"
            text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            switch family.source {
            case .counters(let counters):
                for (labels, counter) in counters.series {
                    text += MetricsText.line(family.name, family.labelNames, labels, Double(counter.value))
                }
            case .histograms(let histograms):
                for (labels, histogram) in histograms.series {
                    let (cumulative, sum) = histogram.snapshot
                    let names = family.labelNames + ["le"]
                    for (index, bound) in histogram.bounds.enumerated() {
                        text += MetricsText.line(
                            family.name + "_bucket", names, labels + [MetricsText.number(bound)],
                            Double(cumulative[index]))
                    }
                    let total = Double(cumulative.last ?? 0)
                    text += MetricsText.line(family.name + "_bucket", names, labels + ["+Inf"], total)
                    text += MetricsText.line(family.name + "_sum", family.labelNames, labels, sum)
                    text += MetricsText.line(family.name + "_count", family.labelNames, labels, total)
                }
            case .read(let read):
                for sample in read() where sample.labels.count == family.labelNames.count {
                    text += MetricsText.line(family.name, family.labelNames, sample.labels, sample.value)
                }
            }
        }
        return text
    }
}

/// The counters of one family, one per set of label values, made on first use and kept (label values come from
/// bounded sets, so this stays small).
public final class CounterFamily: Sendable {
    private let labelCount: Int
    private let counters = Mutex<[[String]: MetricCounter]>([:])

    init(labelCount: Int) { self.labelCount = labelCount }

    /// The counter of `labels` (as many as the family's label names; missing ones are empty, extra ones dropped).
    public func counter(_ labels: String...) -> MetricCounter { counter(labels) }

    /// The counter of `labels`.
    public func counter(_ labels: [String]) -> MetricCounter {
        let key = MetricsText.fitted(labels, labelCount)
        return counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = MetricCounter()
            counters[key] = made
            return made
        }
    }

    /// Every series, ordered by its label values.
    var series: [([String], MetricCounter)] {
        counters.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
    }
}

/// The histograms of one family, one per set of label values, made on first use and kept.
public final class HistogramFamily: Sendable {
    private let labelCount: Int
    private let bounds: [Double]
    private let histograms = Mutex<[[String]: MetricHistogram]>([:])

    init(labelCount: Int, bounds: [Double]) {
        self.labelCount = labelCount
        self.bounds = bounds
    }

    /// The histogram of `labels`.
    public func histogram(_ labels: String...) -> MetricHistogram { histogram(labels) }

    /// The histogram of `labels`.
    public func histogram(_ labels: [String]) -> MetricHistogram {
        let key = MetricsText.fitted(labels, labelCount)
        return histograms.withLock { histograms in
            if let existing = histograms[key] { return existing }
            let made = MetricHistogram(bounds: bounds)
            histograms[key] = made
            return made
        }
    }

    func adopt(_ histogram: MetricHistogram) { histograms.withLock { $0[[]] = histogram } }

    var series: [([String], MetricHistogram)] {
        histograms.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
    }
}
