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

    /// How log lines are written (`--log-format`).
    public enum Format: String, Sendable, CaseIterable {
        /// `TIME LEVEL COMPONENT: MESSAGE`, for people and `grep`.
        case text
        /// One JSON object per line, `{"time", "level", "component", "message"}`, for log shippers (journald's JSON,
        /// Vector, Fluent Bit, Loki) that would otherwise parse the text.
        case json
    }

    /// The format `--log-format` names, or `text` without one.
    public static func format(_ text: String?) throws(CLIError) -> Format {
        guard let text else { return .text }
        guard let format = Format(rawValue: text) else {
            throw .usage("--log-format takes text or json, not '\(text)'")
        }
        return format
    }

    /// A logger that writes one line per event to stderr, as `format` says. `NodeLogger` hands each message over
    /// already escaped (SPEC §4.2: no control character, so one event stays one line); JSON escapes it once more as
    /// a string, so a reader that decodes the object gets exactly the text line's message.
    public static func logger(level: LogLevel, component: String, format: Format = .text) -> NodeLogger {
        NodeLogger(minimumLevel: level) { level, message in
            switch format {
            case .text:
                StandardStreams.writeError("\(Console.timestamp()) \(level) \(component): \(message)\n")
            case .json:
                let object: [String: Any] = [
                    "time": Console.timestamp(), "level": "\(level)", "component": component, "message": message,
                ]
                StandardStreams.writeError(Console.encode(object) + "\n")
            }
        }
    }
}
