import CLIKit
import Foundation
import SupportUtilities

/// `rsup-supporter webhook …`: webhook endpoints of the running node, through its control socket (owner-only). Each
/// change is audited by the node (`webhook_created`, `webhook_changed`, `webhook_deleted`, `webhook_redelivered`,
/// actor `local`).
enum Webhooks {
    static let usage = """
        usage: rsup-supporter webhook add URL --events KINDS [--description TEXT]
               rsup-supporter webhook list
               rsup-supporter webhook change ID [--url URL] [--events KINDS] [--description TEXT]
               rsup-supporter webhook enable ID | disable ID
               rsup-supporter webhook rotate-secret ID
               rsup-supporter webhook remove ID
               rsup-supporter webhook deliveries ID [--state pending|delivered|failed] [--limit N]
               rsup-supporter webhook redeliver ID DELIVERY
               rsup-supporter webhook retry ID
        common options: [--data DIR] [--json]

        The node POSTs each audit event of the KINDS (comma-separated audit kinds such as session_started,session_ended,
        or '*' for every kind) to URL, signed with the endpoint's secret (shown by add and rotate-secret only; the old
        secret keeps signing for 24 hours after a rotation). URL is https://, or http:// for a host the node allows
        (serve --webhook-allow-http). Deliveries are retried for 24 hours, in order per endpoint; retry makes an
        endpoint's pending deliveries due at once (its receiver is back); see docs/webhooks.md.
        """

    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, valueOptions: ["events", "description", "url", "state", "limit", "data"], flagOptions: ["json"])
        if parsed.has("help") || parsed.positionals.isEmpty {
            print(usage)
            if parsed.positionals.isEmpty, !parsed.has("help") { throw .usage("webhook needs a subcommand") }
            return
        }
        let subcommand = parsed.positionals[0]
        let rest = Array(parsed.positionals.dropFirst())
        func one(_ what: String) throws(CLIError) -> String {
            guard rest.count == 1 else { throw .usage("webhook \(subcommand) takes one \(what)") }
            return rest[0]
        }
        func kinds() -> [String]? {
            parsed.options["events"].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        }
        var request: [String: Any]
        switch subcommand {
        case "add":
            guard let events = kinds() else { throw .usage("webhook add needs --events (e.g. session_started or '*')") }
            request = ["command": "webhook-add", "url": try one("URL"), "events": events]
            if let description = parsed.options["description"] { request["description"] = description }
        case "list":
            request = ["command": "webhook-list"]
        case "change":
            request = ["command": "webhook-change", "id": try one("ID")]
            if let url = parsed.options["url"] { request["url"] = url }
            if let events = kinds() { request["events"] = events }
            if let description = parsed.options["description"] { request["description"] = description }
        case "enable", "disable":
            request = ["command": "webhook-change", "id": try one("ID"), "enabled": subcommand == "enable"]
        case "rotate-secret":
            request = ["command": "webhook-change", "id": try one("ID"), "rotate": true]
        case "remove":
            request = ["command": "webhook-remove", "id": try one("ID")]
        case "deliveries":
            request = ["command": "webhook-deliveries", "id": try one("ID")]
            if let state = parsed.options["state"] {
                guard ["pending", "delivered", "failed"].contains(state) else {
                    throw .usage("--state is pending, delivered or failed")
                }
                request["state"] = state
            }
            if let text = parsed.options["limit"] {
                guard let limit = Int(text), (1...500).contains(limit) else { throw .usage("--limit takes 1 to 500") }
                request["limit"] = limit
            }
        case "retry":
            request = ["command": "webhook-retry", "id": try one("ID")]
        case "redeliver":
            guard rest.count == 2, let delivery = Int(rest[1]), delivery > 0 else {
                throw .usage("usage: rsup-supporter webhook redeliver ID DELIVERY (a delivery's number)")
            }
            request = ["command": "webhook-redeliver", "id": rest[0], "delivery": delivery]
        default:
            throw .usage(
                "unknown webhook subcommand '\(TerminalText.escaped(subcommand))' (add, list, change, enable, disable, "
                    + "rotate-secret, remove, deliveries, redeliver, retry)")
        }
        guard let (reply, console) = try sendCommand(request, parsed) else { return }
        if subcommand == "remove" { return console.line("removed") }
        if subcommand == "retry" {
            return console.line("\(reply["retried"] ?? 0) pending deliveries are due now")
        }
        if let endpoints = reply["webhooks"] as? [[String: Any]] {
            if endpoints.isEmpty { console.line("no webhook endpoints; add one with 'rsup-supporter webhook add'") }
            for endpoint in endpoints {
                let events = (endpoint["events"] as? [String] ?? []).joined(separator: ",")
                let state = endpoint["enabled"] as? Bool == false ? "disabled" : "enabled"
                console.line(
                    escaping: "\(endpoint["id"] ?? "?")  \(state)  \(endpoint["url"] ?? "")  events \(events)  "
                        + "pending \(endpoint["pending"] ?? 0)  failed \(endpoint["failed"] ?? 0)")
                if let secret = endpoint["secret"] as? String {
                    console.line("secret \(secret)  (shown once: give it to the receiver to verify signatures)")
                }
            }
        }
        if let deliveries = reply["deliveries"] as? [[String: Any]] {
            if deliveries.isEmpty { console.line("no deliveries") }
            for delivery in deliveries {
                let status = delivery["last_status"].map { "  status \($0)" } ?? ""
                let error = delivery["last_error"].map { "  \($0)" } ?? ""
                console.line(
                    escaping: "\(delivery["id"] ?? "?")  \(delivery["state"] ?? "")  event \(delivery["event_id"] ?? "?") "
                        + "\(delivery["event_kind"] ?? "")  attempts \(delivery["attempts"] ?? 0)\(status)\(error)")
            }
        }
    }
}
