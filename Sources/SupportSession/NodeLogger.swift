/// Severity of a log line.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, warning, error
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// Where a node's log lines go. Libraries never print: the caller passes a logger, or nothing is logged.
///
/// One line per event. Secrets never reach it whole: use ``Redact`` on codes and tokens.
public struct NodeLogger: Sendable {
    public var minimumLevel: LogLevel
    private let sink: @Sendable (LogLevel, String) -> Void

    public init(minimumLevel: LogLevel = .info, sink: @escaping @Sendable (LogLevel, String) -> Void) {
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// Logs nothing.
    public static let disabled = NodeLogger(minimumLevel: .error) { _, _ in }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard level >= minimumLevel else { return }
        sink(level, message())
    }
}

/// Redaction of secrets for logs (SPEC §13).
public enum Redact {
    /// A session code: its first 3 characters, then `…`.
    public static func code(_ code: String) -> String { String(code.prefix(3)) + "…" }
    /// An API token: never shown; only its length.
    public static func token(_ token: String) -> String { "<token: \(token.utf8.count) bytes>" }
}
