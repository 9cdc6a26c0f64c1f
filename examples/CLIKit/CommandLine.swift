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
public enum CLIError: Error, Sendable, CustomStringConvertible {
    case usage(String)
    case failure(String)

    public var exitCode: Int32 {
        switch self {
        case .usage: 2
        case .failure: 1
        }
    }

    public var description: String {
        switch self {
        case .usage(let text), .failure(let text): text
        }
    }
}
