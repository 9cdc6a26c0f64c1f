public import SupportMetrics
import Glibc

/// The process's own metrics under the names every Prometheus client library uses (`process_*`), read from the
/// kernel when scraped, and the node's descriptor budget (``DescriptorBudget``).
public enum ProcessMetrics {
    /// Adds the process families to `registry`.
    public static func register(in registry: MetricsRegistry, budget: DescriptorBudget = .process) {
        registry.read("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", kind: .counter) {
            [MetricsRegistry.Sample(cpuSeconds())]
        }
        registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.") { memory().resident }
        registry.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.") { memory().virtual }
        registry.gauge("process_open_fds", "Number of open file descriptors.") { Double(openDescriptors()) }
        registry.gauge("process_max_fds", "Maximum number of open file descriptors.") {
            Double(DescriptorBudget.softLimit())
        }
        registry.gauge(
            "rsup_descriptor_budget_remaining",
            "Connections the process may still accept before its descriptor budget sheds new ones."
        ) { Double(max(budget.capacity - budget.inUse, 0)) }
        registry.gauge("rsup_descriptor_budget_capacity", "Connections the descriptor budget allows at once.") {
            Double(budget.capacity)
        }
    }

    /// User plus system CPU time of every thread so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Resident and virtual size, from `/proc/self/statm` (pages).
    static func memory() -> (resident: Double, virtual: Double) {
        guard let text = readSmallFile("/proc/self/statm") else { return (0, 0) }
        let fields = text.split(separator: " ").compactMap { Double($0) }
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        guard fields.count >= 2 else { return (0, 0) }
        return (fields[1] * page, fields[0] * page)
    }

    /// Entries of `/proc/self/fd`, less the one the count itself opens.
    static func openDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return max(count - 1, 0)
    }

    /// A `/proc` file's text (at most 4 KiB).
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
