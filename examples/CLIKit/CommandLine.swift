import Foundation
import SupportUtilities

/// A command line split into positionals, `--option value` pairs and `--flag`s, checked against what the command
/// accepts. Conventional and small on purpose: no outside argument parser can be fetched here.
public struct ParsedArguments: Sendable {
    public var positionals: [String] = []
    /// Each value option's value; the last one when it was given more than once.
    public var options: [String: String] = [:]
    /// Every value of each value option, in order (for repeatable options such as `--trusted-proxy`).
    public var allOptions: [String: [String]] = [:]
    public var flags: Set<String> = []
    /// Where an option that was not on the command line came from (`serve.conf line 4`, `the environment
    /// (RSUP_STORE)`), for errors about its value (``locating(_:)``); see ``fill(from:environment:valueOptions:flagOptions:)``.
    public var origins: [String: String] = [:]

    /// Parses `arguments` (without the program and command names).
    ///
    /// - Parameters:
    ///   - valueOptions: options that take a value (`--code 123`, `--code=123`).
    ///   - flagOptions: options that take none (`--json`). `--help` is always accepted.
    ///   - repeatableOptions: value options that may be given more than once (see ``allOptions``); any other given
    ///     twice is a usage error, not a silent choice of the last one.
    public init(
        _ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>, repeatableOptions: Set<String> = []
    ) throws(CLIError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                if argument == "--" {
                    positionals += arguments[index...]
                    break
                }
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" || flagOptions.contains(name) {
                guard inlineValue == nil else { throw .usage("--\(name) takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw .usage("--\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                if options[name] != nil, !repeatableOptions.contains(name) {
                    throw .usage("--\(name) is given twice; give it once")
                }
                options[name] = value
                allOptions[name, default: []].append(value)
            } else {
                throw .usage("unknown option --\(name)")
            }
        }
    }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// A required option's value.
    public func require(_ name: String) throws(CLIError) -> String {
        guard let value = options[name], !value.isEmpty else { throw .usage("--\(name) is required") }
        return value
    }

    /// An option parsed as a number of seconds or milliseconds: `15`, `15s`, `250ms`.
    public func duration(_ name: String, default fallback: Duration) throws(CLIError) -> Duration {
        guard let text = options[name] else { return fallback }
        if text.hasSuffix("ms"), let value = Int64(text.dropLast(2)), value > 0 { return .milliseconds(value) }
        let trimmed = text.hasSuffix("s") ? String(text.dropLast()) : text
        if let value = Double(trimmed), value > 0 { return .milliseconds(Int64(value * 1000)) }
        throw .usage("--\(name) takes a duration such as 15s or 250ms, not '\(text)'")
    }

    /// An option parsed as a whole number of seconds, minutes, hours or days (`90s`, `30m`, `12h`, `7d`; a bare
    /// number is seconds), or `0`; at most `maximum`.
    public func period(_ name: String, default fallback: Duration, maximum: Duration) throws(CLIError) -> Duration {
        guard let text = options[name] else { return fallback }
        let units: [(String, Int64)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]
        let unit = units.first { text.hasSuffix($0.0) }
        let digits = unit.map { String(text.dropLast($0.0.count)) } ?? text
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), digits.count <= 9,
            let value = Int64(digits), value * (unit?.1 ?? 1) <= maximum.components.seconds
        else {
            throw .usage(
                "--\(name) takes a period such as 7d, 12h, 30m or 0, at most \(maximum.components.seconds / 86_400)d, not '\(text)'")
        }
        return .seconds(value * (unit?.1 ?? 1))
    }

    /// An option parsed as a number of bytes: `1048576`, `512KiB`, `64MiB`, `2GiB` (K, M, G alike: powers of 1024);
    /// from `minimum` to `maximum`.
    public func byteCount(_ name: String, default fallback: Int, minimum: Int, maximum: Int) throws(CLIError) -> Int {
        guard let text = options[name] else { return fallback }
        let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)]
        let unit = units.first { text.hasSuffix($0.0) }
        let digits = unit.map { String(text.dropLast($0.0.count)) } ?? text
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), digits.count <= 12,
            let value = Int(digits), (minimum...maximum).contains(value * (unit?.1 ?? 1))
        else {
            throw .usage(
                "--\(name) takes a size such as 512MiB or 2GiB, from \(minimum >> 20) MiB to \(maximum >> 30) GiB, not '\(text)'")
        }
        return value * (unit?.1 ?? 1)
    }
}

/// `HOST:PORT`, `[IPv6]:PORT`, or `HOST` with a default port.
public struct HostPort: Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init(_ text: String, defaultPort: UInt16) throws(CLIError) {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .usage("'\(text)' is not [IPv6]:port") }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty {
                port = defaultPort
            } else {
                guard rest.hasPrefix(":"), let value = UInt16(rest.dropFirst()) else {
                    throw .usage("'\(text)' has no valid port after ']'")
                }
                port = value
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let value = UInt16(text[text.index(after: colon)...]) else {
                throw .usage("'\(text)': the port must be a number from 0 to 65535")
            }
            port = value
        } else {
            host = text
            port = defaultPort
        }
        guard !host.isEmpty else { throw .usage("'\(text)' names no host") }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// What ends a command: a usage error (exit 2) or a failure (exit 1), with one line for people.
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers. Throw
/// ``usage(_:)`` or ``failure(_:)``; test ``kind``.
public struct CLIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What ended the command, coarsely; each kind has one exit status.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case usage, failure
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The command line is wrong: exit status 2, and the command's help is pointed to.
        public static let usage = Kind(.usage)
        /// The command was right but failed: exit status 1.
        public static let failure = Kind(.failure)

        /// The process's exit status for this kind.
        public var exitCode: Int32 {
            switch base {
            case .usage: 2
            case .failure: 1
            }
        }

        public var description: String { base.rawValue }
    }

    /// What ended the command, coarsely.
    public var kind: Kind
    /// The one line for people, e.g. `'x' names no host`.
    public var message: String
    /// The error underneath, when there is one. Not part of equality.
    public var underlying: (any Error & Sendable)?

    public init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// A usage error (exit 2) saying `message`.
    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }
    /// A failure (exit 1) saying `message`.
    public static func failure(_ message: String) -> CLIError { CLIError(.failure, message) }

    public static func == (lhs: CLIError, rhs: CLIError) -> Bool { lhs.kind == rhs.kind && lhs.message == rhs.message }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
    }

    /// The process's exit status: 2 for a usage error, 1 for a failure.
    public var exitCode: Int32 { kind.exitCode }

    /// The message.
    public var description: String { message }
}
