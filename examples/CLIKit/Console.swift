public import Foundation
import SupportSession
import Synchronization
import SupportUtilities

/// Prints events and results for people or, with `--json`, as one JSON object per line; errors go to stderr.
///
/// Text for people may hold strings from the wire or the store: ``event(_:_:_:)`` and ``error(_:)`` escape it with
/// `TerminalText.escaped` (SPEC §4.2), ``line(escaping:)`` too; ``line(_:)`` writes as it is (JSON, fixed text).
/// JSON escapes every C0 control by its own rules (`JSONSerialization` writes `\uXXXX`, `\n`, …), and
/// ``encode(_:)`` escapes the rest of SPEC §4.2's classes the same way (`TerminalText.escapedJSON`).
public final class Console: Sendable {
    public let json: Bool
    private let lock = Mutex<Void>(())

    public init(json: Bool) { self.json = json }

    /// A timestamp with milliseconds, UTC: what every line starts with.
    public static func timestamp(_ date: Date = Date()) -> String {
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded(.down))
        var time = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, milliseconds % 1000)
    }

    /// One event: `text` for people (escaped), `fields` for machines (a `time` and `event` key are added).
    public func event(_ name: String, _ text: String, _ fields: [String: any Sendable] = [:]) {
        if json {
            var object: [String: Any] = ["time": Self.timestamp(), "event": name]
            for (key, value) in fields { object[key] = value }
            line(Self.encode(object))
        } else {
            line("\(Self.timestamp()) \(TerminalText.escaped(text))")
        }
    }

    /// A plain line on stdout, whole, as it is: for JSON and for text that holds nothing from outside.
    public func line(_ text: String) {
        _ = lock.withLock { _ in
            StandardStreams.writeOutput(text + "\n")
        }
    }

    /// A line for people on stdout that holds strings from outside (names, descriptions, audit details): escaped.
    public func line(escaping text: String) { line(TerminalText.escaped(text)) }

    /// One line on stderr (escaped): what happened and what to do.
    public func error(_ text: String) {
        lock.withLock { _ in
            StandardStreams.writeError("error: " + TerminalText.escaped(text) + "\n")
        }
    }

    public static func encode(_ object: Any) -> String {
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return "{}" }
        return TerminalText.escapedJSON(String(decoding: data, as: UTF8.self))
    }
}

/// A value shared between threads and tasks, behind a lock.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<Result>(_ body: (inout sending Value) -> sending Result) -> Result { mutex.withLock(body) }
}
