import CLIKit
import Foundation
import SupporterNode
import SupportUtilities
import SupporterCore
import SupporterREST
import SupportSession
import SupportWire
import SupportRuntime
import SupporterModel

/// `rsup-supporter user …`: supporter accounts on the running node, through its control socket (owner-only). Each
/// change is audited by the node (`account_created`, `account_changed`, actor `local`).
enum Users {
    static let usage = """
        usage: rsup-supporter user add LOGIN --display-name NAME [--role supporter|admin]
                                   (--password-file FILE | --password-stdin)
               rsup-supporter user list
               rsup-supporter user disable LOGIN
               rsup-supporter user enable LOGIN
               rsup-supporter user passwd LOGIN (--password-file FILE | --password-stdin)
               rsup-supporter user role LOGIN supporter|admin
               rsup-supporter user rename LOGIN --display-name NAME
        common options: [--data DIR] [--json]

        Supporter accounts sign in to the web console and the REST API; a connection request shows the device's user
        the account's display name. LOGIN: 1 to 64 of a-z 0-9 . _ - ; a password has 10 to 1024 bytes, read from the
        first line of FILE (keep it mode 600) or of standard input. Disabling an account or changing its password ends
        its sign-ins at once. The last active admin cannot be disabled or made a supporter.
        """

    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, valueOptions: ["display-name", "role", "password-file", "data"],
            flagOptions: ["json", "password-stdin"])
        if parsed.has("help") || parsed.positionals.isEmpty {
            print(usage)
            if parsed.positionals.isEmpty, !parsed.has("help") { throw .usage("user needs a subcommand") }
            return
        }
        let subcommand = parsed.positionals[0]
        let rest = Array(parsed.positionals.dropFirst())
        func login() throws(CLIError) -> String {
            guard rest.count >= 1 else { throw .usage("user \(subcommand) needs a LOGIN") }
            return rest[0]
        }
        var request: [String: Any]
        switch subcommand {
        case "add":
            guard rest.count == 1 else { throw .usage("user add takes one LOGIN") }
            let role = parsed.options["role"] ?? "supporter"
            guard SupporterRole(rawValue: role) != nil else { throw .usage("--role is supporter or admin") }
            request = [
                "command": "user-add", "login": try login(), "display-name": try parsed.require("display-name"),
                "role": role, "password": try password(parsed),
            ]
        case "list":
            request = ["command": "user-list"]
        case "disable", "enable":
            request = ["command": "user-change", "login": try login(), "state": subcommand == "disable" ? "disabled" : "active"]
        case "passwd":
            request = ["command": "user-change", "login": try login(), "password": try password(parsed)]
        case "role":
            guard rest.count == 2, SupporterRole(rawValue: rest[1]) != nil else {
                throw .usage("usage: rsup-supporter user role LOGIN supporter|admin")
            }
            request = ["command": "user-change", "login": try login(), "role": rest[1]]
        case "rename":
            request = ["command": "user-change", "login": try login(), "display-name": try parsed.require("display-name")]
        default:
            throw .usage("unknown user subcommand '\(TerminalText.escaped(subcommand))' (add, list, disable, enable, passwd, role, rename)")
        }
        guard let (reply, console) = try sendCommand(request, parsed) else { return }
        let users = reply["users"] as? [[String: Any]] ?? (reply["user"].map { [$0 as? [String: Any] ?? [:]] } ?? [])
        if subcommand == "list", users.isEmpty { console.line("no accounts; add one with 'rsup-supporter user add'") }
        for user in users {
            console.line(
                escaping: "\(user["login"] ?? "?")  \(user["role"] ?? "")  \(user["state"] ?? "")  \(user["display_name"] ?? "")")
        }
    }

    /// The password from `--password-file` (first line) or standard input (`--password-stdin`).
    private static func password(_ parsed: ParsedArguments) throws(CLIError) -> String {
        let text: String
        if let path = parsed.options["password-file"] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .failure("cannot read the password file \(path)")
            }
            text = String(decoding: data, as: UTF8.self)
        } else if parsed.has("password-stdin") {
            text = readLine(strippingNewline: true) ?? ""
        } else {
            throw .usage("give the password with --password-file FILE or --password-stdin")
        }
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return line.hasSuffix("\r") ? String(line.dropLast()) : line
    }
}
