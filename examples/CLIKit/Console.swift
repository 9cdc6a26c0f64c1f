import Foundation
import Synchronization

/// Prints events and results for people or, with `--json`, as one JSON object per line; errors go to stderr.
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

    /// One event: `text` for people, `fields` for machines (a `time` and `event` key are added).
    public func event(_ name: String, _ text: String, _ fields: [String: any Sendable] = [:]) {
        if json {
            var object: [String: Any] = ["time": Self.timestamp(), "event": name]
            for (key, value) in fields { object[key] = value }
            line(Self.encode(object))
        } else {
            line("\(Self.timestamp()) \(text)")
        }
    }

    /// A plain line on stdout, whole.
    public func line(_ text: String) {
        lock.withLock { _ in
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }

    /// One line on stderr: what happened and what to do.
    public func error(_ text: String) {
        lock.withLock { _ in
            FileHandle.standardError.write(Data(("error: " + text + "\n").utf8))
        }
    }

    public static func encode(_ object: Any) -> String {
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A value shared between threads and tasks, behind a lock.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<Result>(_ body: (inout sending Value) -> sending Result) -> Result { mutex.withLock(body) }
}
