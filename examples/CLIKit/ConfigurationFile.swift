import Foundation

/// A command's options from a file and the environment (`--config FILE`, `RSUP_*`), beside its command line.
///
/// The file is the command line written down, one option per line: `name = value`, where `name` is the option
/// without its `--` (`listen = [::]:7443`, `keepalive = 15s`), a flag is `name = true` or `false`, a repeatable option
/// is written once per value, `#` starts a comment line, blank lines are ignored, and a value is taken as it stands
/// after the `=` (spaces around it trimmed; no quoting, so a value may hold `#`, spaces and `=`). Chosen over TOML or
/// YAML because it needs no parser we would have to write and keep, maps one to one onto `--help`, and a wrong line is
/// easy to name.
///
/// The environment variable of option `name` is `RSUP_` followed by the name in capitals with `-` as `_`
/// (`RSUP_API_TOKEN`, `RSUP_STORE`): the place for secrets (systemd's `EnvironmentFile=` or credentials).
/// Precedence: the command line, then the environment, then the file, then the command's defaults.
public struct ConfigurationFile: Sendable {
    /// One `name = value` line.
    public struct Entry: Sendable, Hashable {
        public let name: String
        public let value: String
        public let line: Int
    }

    public let path: String
    public let entries: [Entry]

    /// Reads and checks `path` against the options a command takes: every line must be a comment, blank, or
    /// `name = value` with a known name; an option that is not repeatable may appear once.
    public init(
        path: String, valueOptions: Set<String>, flagOptions: Set<String>, repeatableOptions: Set<String>
    ) throws(CLIError) {
        self.path = path
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw .usage("--config \(path): cannot be read (\(error.localizedDescription))")
        }
        var entries: [Entry] = []
        var seen: [String: Int] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw .usage("\(path) line \(line): expected 'name = value', not '\(trimmed)'")
            }
            let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            let value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard valueOptions.contains(name) || flagOptions.contains(name) else {
                let known = (valueOptions.union(flagOptions)).sorted().joined(separator: ", ")
                throw .usage("\(path) line \(line): unknown key '\(name)'; the keys are \(known)")
            }
            guard !value.isEmpty else { throw .usage("\(path) line \(line): '\(name)' has no value") }
            if flagOptions.contains(name), value != "true", value != "false" {
                throw .usage("\(path) line \(line): '\(name)' is true or false, not '\(value)'")
            }
            if let first = seen[name], !repeatableOptions.contains(name) {
                throw .usage("\(path) line \(line): '\(name)' is given twice (first on line \(first)); give it once")
            }
            seen[name] = seen[name] ?? line
            entries.append(Entry(name: name, value: value, line: line))
        }
        self.entries = entries
    }

    /// The environment variable of option `name`.
    public static func environmentName(of name: String) -> String {
        "RSUP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}

extension ParsedArguments {
    /// Fills every option the command line did not give from `environment` (``ConfigurationFile/environmentName(of:)``)
    /// or else from `file`, and notes where each came from in ``origins``. A flag from the environment is `true`,
    /// `false`, `1` or `0`.
    public mutating func fill(
        from file: ConfigurationFile?, environment: [String: String], valueOptions: Set<String>,
        flagOptions: Set<String>
    ) throws(CLIError) {
        for name in valueOptions.sorted() where options[name] == nil {
            let variable = ConfigurationFile.environmentName(of: name)
            if let value = environment[variable], !value.isEmpty {
                options[name] = value
                allOptions[name] = [value]
                origins[name] = "the environment (\(variable))"
            } else if let file {
                let values = file.entries.filter { $0.name == name }
                guard let last = values.last else { continue }
                options[name] = last.value
                allOptions[name] = values.map(\.value)
                origins[name] = "\(file.path) line \(values[0].line)"
            }
        }
        for name in flagOptions.sorted() where !flags.contains(name) {
            let variable = ConfigurationFile.environmentName(of: name)
            if let value = environment[variable], !value.isEmpty {
                switch value {
                case "1", "true": flags.insert(name)
                case "0", "false": break
                default: throw .usage("\(variable) is true or false, not '\(value)'")
                }
                origins[name] = "the environment (\(variable))"
            } else if let entry = file?.entries.last(where: { $0.name == name }) {
                if entry.value == "true" { flags.insert(name) }
                origins[name] = "\(file?.path ?? "") line \(entry.line)"
            }
        }
    }

    /// `error` with where the option it names came from, when that was not the command line: "--keepalive takes 1s
    /// to 120s (set in serve.conf line 4)".
    public func locating(_ error: CLIError) -> CLIError {
        guard error.kind == .usage else { return error }
        let text = error.message
        for (name, origin) in origins.sorted(by: { $0.key.count > $1.key.count }) where text.contains("--\(name)") {
            return .usage(text + " (set in \(origin))")
        }
        return error
    }
}
