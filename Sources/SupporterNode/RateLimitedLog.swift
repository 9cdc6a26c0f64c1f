import Synchronization
import SupportSession
import SupportTransport

/// Log lines that an attacker can trigger at will (failed handshakes, refused connections): at most one line per key
/// per interval; the lines held back are counted and their number is reported with the next line of that key.
final class RateLimitedLog: Sendable {
    private struct Entry {
        var last: Deadline
        var suppressed: Int
    }

    private let logger: NodeLogger
    private let interval: Duration
    private let entries = Mutex<[String: Entry]>([:])
    /// Most keys tracked; beyond it new keys share one entry.
    private static let maximumKeys = 1024

    init(logger: NodeLogger, interval: Duration) {
        self.logger = logger
        self.interval = interval
    }

    func log(_ level: LogLevel, key: String, _ message: @autoclosure () -> String) {
        guard level >= logger.minimumLevel else { return }
        let now = Deadline.now()
        let suppressed = entries.withLock { entries -> Int? in
            let key = entries[key] != nil || entries.count < Self.maximumKeys ? key : "*"
            if var entry = entries[key], now < entry.last + interval {
                entry.suppressed += 1
                entries[key] = entry
                return nil
            }
            let suppressed = entries[key]?.suppressed ?? 0
            entries[key] = Entry(last: now, suppressed: 0)
            return suppressed
        }
        guard let suppressed else { return }
        logger.log(level, suppressed > 0 ? "\(message()) (and \(suppressed) more like it)" : message())
    }
}
