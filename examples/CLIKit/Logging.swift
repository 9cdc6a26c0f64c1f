import Foundation
import SupportSession
public import SupportUtilities

/// Parses `--log-level` and makes a logger that writes one line per event to stderr.
public enum Logging {
    /// The level `--log-level` names, or `fallback` without one.
    public static func level(_ text: String?, default fallback: LogLevel = .warning) throws(CLIError) -> LogLevel {
        guard let text else { return fallback }
        guard let level = LogLevel.allCases.first(where: { $0.description == text }) else {
            throw .usage("--log-level takes error, warning, info, debug or trace, not '\(text)'")
        }
        return level
    }

    /// A logger that writes `TIME LEVEL COMPONENT: MESSAGE` lines to stderr; `NodeLogger` hands each message over
    /// already escaped (SPEC §4.2), so one event stays one line.
    public static func logger(level: LogLevel, component: String) -> NodeLogger {
        NodeLogger(minimumLevel: level) { level, message in
            StandardStreams.writeError("\(Console.timestamp()) \(level) \(component): \(message)\n")
        }
    }
}
