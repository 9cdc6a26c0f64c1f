import CLIKit
import Foundation
import SupporterNode

/// `rsup-supporter audit`: reads the audit trail straight from the data folder's store, node running or not.
enum Audit {
    static let usage = """
        usage: rsup-supporter audit [--data DIR] [--code CODE] [--from TIME] [--to TIME] [--limit N] [--json]

          --code CODE     only this session code's events
          --from TIME     events at or after TIME (RFC 3339, e.g. 2026-11-30T10:00:00Z)
          --to TIME       events before TIME
          --limit N       at most N events (default 1000)
        """

    static func time(_ text: String?, _ name: String) throws(CLIError) -> Date? {
        guard let text else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        throw .usage("--\(name) takes an RFC 3339 time such as 2026-11-30T10:00:00Z, not '\(text)'")
    }

    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, valueOptions: ["data", "code", "from", "to", "limit"], flagOptions: ["json"])
        if parsed.has("help") {
            print(usage)
            return
        }
        guard parsed.positionals.isEmpty else { throw .usage("unexpected argument '\(parsed.positionals[0])'") }
        let limit = try parsed.options["limit"].map { text throws(CLIError) -> Int in
            guard let value = Int(text), value > 0 else { throw .usage("--limit takes a whole number above 0") }
            return value
        } ?? 1000
        let path = (parsed.options["data"] ?? "supporter-data") + "/supporter.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            throw .failure("no audit trail at \(path): give the data folder of a supporter node with --data")
        }
        let events: [AuditEvent]
        do {
            let store = try SessionStore(path: path)
            events = try store.auditEvents(
                code: parsed.options["code"], from: try time(parsed.options["from"], "from"),
                to: try time(parsed.options["to"], "to"), limit: limit, afterID: nil)
        } catch {
            throw .failure("cannot read the audit trail: \(error)")
        }
        let console = Console(json: parsed.has("json"))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for event in events {
            if console.json {
                var object: [String: Any] = [
                    "id": Int(event.id), "time": formatter.string(from: event.time), "kind": event.kind.rawValue,
                    "details": event.details,
                ]
                if let code = event.code { object["code"] = code }
                console.line(Console.encode(object))
            } else {
                let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                console.line(
                    escaping: "\(formatter.string(from: event.time))  \(event.code ?? "-")  \(event.kind.rawValue)  "
                        + details.joined(separator: " "))
            }
        }
        if events.isEmpty, !console.json { console.line("no audit events match") }
    }
}
