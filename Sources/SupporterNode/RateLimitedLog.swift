import Synchronization
import SupportSession
import SupportUtilities
import SupportWire

/// Log lines that an attacker can trigger at will (failed handshakes, refused connections): at most one line per key
/// per interval. The lines held back are counted; ``flush(now:)``, called about once a second, reports each key's
/// count once its interval is over (with the last line that was logged for it) and forgets the key, so a burst that
/// stops is still accounted for, and keys do not pile up.
final class RateLimitedLog: Sendable {
    private struct Entry {
        var last: Deadline
        var suppressed: Int
        var level: LogLevel
        /// The line logged at `last`, for the report of what was held back after it.
        var message: String
    }

    private let logger: NodeLogger
    private let interval: Duration
    private let entries = Mutex<[String: Entry]>([:])
    /// Most keys tracked at once; beyond it new keys share one entry until ``flush(now:)`` frees some.
    private static let maximumKeys = 1024

    init(logger: NodeLogger, interval: Duration) {
        self.logger = logger
        self.interval = interval
    }

    func log(_ level: LogLevel, key: String, now: Deadline = .now(), _ message: @autoclosure () -> String) {
        guard level >= logger.minimumLevel else { return }
        let logged = entries.withLock { entries -> String? in
            let key = entries[key] != nil || entries.count < Self.maximumKeys ? key : "*"
            if var entry = entries[key], now < entry.last + interval {
                entry.suppressed += 1
                entries[key] = entry
                return nil
            }
            let text = message()
            entries[key] = Entry(last: now, suppressed: 0, level: level, message: text)
            return text
        }
        if let logged { logger.log(level, logged) }
    }

    /// Reports, for every key whose interval is over, how many lines were held back after its last one, and forgets
    /// those keys.
    func flush(now: Deadline = .now()) {
        let held = entries.withLock { entries -> [(LogLevel, Int, String)] in
            let over = entries.filter { now >= $0.value.last + interval }
            for key in over.keys { entries[key] = nil }
            return over.values.filter { $0.suppressed > 0 }.map { ($0.level, $0.suppressed, $0.message) }
        }
        for (level, count, message) in held {
            logger.log(
                level, "held back \(count) more like this (one line per \(interval.components.seconds) s): \(message)")
        }
    }
}
