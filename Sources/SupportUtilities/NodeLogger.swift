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
/// One line per event. Secrets never reach it whole: use ``Redact`` on codes and tokens. The logger escapes every
/// message with ``TerminalText/escaped(_:)`` before the sink sees it, so a string from the wire inside a message can
/// neither break the line nor forge another: callers interpolate such strings as they are.
public struct NodeLogger: Sendable {
    public var minimumLevel: LogLevel
    private let sink: @Sendable (LogLevel, String) -> Void

    /// - Parameter sink: writes one line; it receives the message already escaped (no control characters).
    public init(minimumLevel: LogLevel = .info, sink: @escaping @Sendable (LogLevel, String) -> Void) {
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// Logs nothing.
    public static let disabled = NodeLogger(minimumLevel: .error) { _, _ in }

    /// Logs `message`, escaped, if `level` reaches ``minimumLevel``.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard level >= minimumLevel else { return }
        sink(level, TerminalText.escaped(message()))
    }
}

/// Redaction of secrets for logs (SPEC §13).
public enum Redact {
    /// A session code: its first 3 Unicode scalars, escaped (``TerminalText``), then `…`.
    ///
    /// A code from a REGISTER is the peer's text, so the kept part is escaped here too: the result is safe wherever
    /// it goes (a log, an error message, a console). In a log line it is escaped once more with the whole message,
    /// which doubles its backslashes and keeps it unambiguous.
    public static func code(_ code: String) -> String {
        TerminalText.escaped(String(String.UnicodeScalarView(code.unicodeScalars.prefix(3)))) + "…"
    }
    /// An API token: never shown; only its length.
    public static func token(_ token: String) -> String { "<token: \(token.utf8.count) bytes>" }
}
