import CLIKit
import Foundation
import SupporterNode
import SupporterStore
import SupporterStores
import SupporterCore
import SupporterREST
import SupportSession
import SupportWire
import SupportRuntime
import SupportUtilities
import SupporterModel

/// `rsup-supporter audit`: reads, verifies and archives the audit trail straight from the node's store (the data
/// folder's SQLite file, or `--store` as for `serve`), node running or not.
///
/// Every command works the same on SQLite and on PostgreSQL (the same archive files, the same anchors).
enum Audit {
    static let usage = """
        usage: rsup-supporter audit [--data DIR | --store STORE] [--code CODE] [--from TIME] [--to TIME] [--limit N]
                                    [--json]
               rsup-supporter audit --verify [--archive FILE] [--data DIR | --store STORE] [--json]
               rsup-supporter audit prune --before TIME --archive FILE [--data DIR | --store STORE] [--json]

          --store STORE     the store the node serves with: sqlite:DIR, postgres://USER@HOST/DB or libpq key=value
                            pairs (default: the SQLite file in --data)

          --code CODE       only this session code's events
          --from TIME       events at or after TIME (RFC 3339, e.g. 2026-11-30T10:00:00Z)
          --to TIME         events before TIME
          --limit N         at most N events (default 1000)
          --verify          check the hash chain and the append-only triggers; prints the head digest to keep
                            elsewhere, or the first problem (exit 1). With --archive FILE: check an archive file
                            against the database's anchors instead
          prune             move the events before --before TIME into a new archive file (JSON lines, mode 0600;
                            never overwritten) and delete them from the store, keeping the chain verifiable
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
            arguments, valueOptions: ["data", "store", "code", "from", "to", "limit", "archive", "before"],
            flagOptions: ["json", "verify"])
        if parsed.has("help") {
            print(usage)
            return
        }
        if parsed.positionals.first == "prune" {
            return try prune(parsed)
        }
        guard parsed.positionals.isEmpty else { throw .usage("unexpected argument '\(parsed.positionals[0])'") }
        if parsed.has("verify") {
            return try verify(parsed)
        }
        for option in ["archive", "before"] where parsed.options[option] != nil {
            throw .usage("--\(option) goes with --verify or prune")
        }
        let limit = try parsed.options["limit"].map { text throws(CLIError) -> Int in
            guard let value = Int(text), value > 0 else { throw .usage("--limit takes a whole number above 0") }
            return value
        } ?? 1000
        // Usage errors (exit 2) before the store is opened.
        let from = try time(parsed.options["from"], "from")
        let to = try time(parsed.options["to"], "to")
        let store = try openStore(parsed)
        defer { store.close() }
        let events: [AuditEvent]
        do {
            events = try store.events(code: parsed.options["code"], from: from, to: to, limit: limit, afterID: nil)
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

extension Audit {
    /// The store `--store` names (as for `serve`), or else the data folder `--data` names; it must exist.
    static func openStore(_ parsed: ParsedArguments) throws(CLIError) -> AuditTrail {
        if parsed.options["store"] != nil, parsed.options["data"] != nil {
            throw .usage("--data does not go with --store: --store names the store")
        }
        let choice = try Serve.storeBackend(parsed.options["store"], dataFolder: parsed.options["data"] ?? "supporter-data")
        if case .sqlite(let path) = choice, !FileManager.default.fileExists(atPath: path) {
            throw .failure("no audit trail at \(path): give the data folder of a supporter node with --data")
        }
        do {
            switch choice {
            case .sqlite(let path): return try AuditTrail(sqlitePath: path)
            case .postgres(let connectionString): return try AuditTrail(postgres: connectionString)
            }
        } catch {
            throw .failure("cannot open the audit trail: \(error)")
        }
    }

    static func refuse(_ options: [String], in parsed: ParsedArguments, with what: String) throws(CLIError) {
        for option in options where parsed.options[option] != nil {
            throw .usage("--\(option) does not go with \(what)")
        }
    }

    /// The first 12 hexadecimal digits of a digest: enough to compare by eye with a head kept elsewhere.
    static func short(_ hex: String) -> String { String(hex.prefix(12)) }

    /// `audit --verify [--archive FILE]`.
    static func verify(_ parsed: ParsedArguments) throws(CLIError) {
        try refuse(["code", "from", "to", "limit", "before"], in: parsed, with: "--verify")
        let store = try openStore(parsed)
        defer { store.close() }
        let console = Console(json: parsed.has("json"))
        let archive = parsed.options["archive"]
        let verification: AuditVerification
        do {
            verification = try archive.map { path throws(StoreError) in try store.verifyArchive(at: path) }
                ?? store.verify()
        } catch {
            throw .failure("cannot verify the audit trail: \(error)")
        }
        if console.json {
            var object: [String: Any] = [
                "verified": verification.isVerified, "events": verification.eventCount, "head": verification.headHex,
                "problems": verification.problems.map { problem -> [String: Any] in
                    var entry: [String: Any] = ["kind": problem.kind.description, "message": problem.message]
                    if let id = problem.id { entry["id"] = Int(id) }
                    if let trigger = problem.trigger { entry["trigger"] = trigger }
                    return entry
                },
            ]
            if let first = verification.firstID, let last = verification.lastID {
                object["first_id"] = Int(first)
                object["last_id"] = Int(last)
            }
            if let anchor = verification.anchor {
                object["anchor"] = ["last_id": Int(anchor.lastID), "digest": anchor.digestHex]
            }
            console.line(Console.encode(object))
        }
        if let problem = verification.problem {
            let more = verification.problems.count > 1 ? " (and \(verification.problems.count - 1) more)" : ""
            throw .failure("\(archive == nil ? "audit trail" : "archive") check failed: \(problem.message)\(more)")
        }
        guard !console.json else { return }
        if archive != nil {
            let range = verification.firstID.map { "\($0)–\(verification.lastID ?? $0)" } ?? "none"
            console.line(
                "archive verified: \(verification.eventCount) events (ids \(range)), anchor \(short(verification.headHex))")
        } else {
            console.line("audit trail verified: \(verification.eventCount) events, head \(short(verification.headHex))")
        }
    }

    /// `audit prune --before TIME --archive FILE`.
    static func prune(_ parsed: ParsedArguments) throws(CLIError) {
        guard parsed.positionals.count == 1 else { throw .usage("unexpected argument '\(parsed.positionals[1])'") }
        try refuse(["code", "from", "to", "limit"], in: parsed, with: "prune")
        if parsed.has("verify") { throw .usage("--verify does not go with prune") }
        let beforeText = try parsed.require("before")
        guard let before = try time(beforeText, "before") else { throw .usage("--before is required") }
        let archive = try parsed.require("archive")
        let store = try openStore(parsed)
        defer { store.close() }
        let summary: ArchiveSummary
        do {
            summary = try store.archive(before: before, to: archive)
        } catch {
            throw .failure("cannot archive the audit trail: \(error)")
        }
        let console = Console(json: parsed.has("json"))
        if console.json {
            var object: [String: Any] = ["archived": summary.eventCount, "archive": archive, "bytes": summary.byteCount]
            if let first = summary.firstID, let last = summary.lastID, let anchor = summary.anchor {
                object["first_id"] = Int(first)
                object["last_id"] = Int(last)
                object["anchor"] = anchor.digestHex
            }
            console.line(Console.encode(object))
        } else if let first = summary.firstID, let last = summary.lastID, let anchor = summary.anchor {
            console.line(
                "archived \(summary.eventCount) events (ids \(first)–\(last)) to \(archive); anchor "
                    + short(anchor.digestHex))
        } else {
            console.line("no audit events before \(beforeText): nothing archived, no file written")
        }
    }
}
