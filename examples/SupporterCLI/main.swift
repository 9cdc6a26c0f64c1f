import CLIKit
import Foundation
import SupporterNode
import SupporterStore
import SupporterStores
import SupportRuntime
import SupportSession
import SupportUtilities
import SupporterREST
import SupporterCore
import SupportWire
import SupporterModel

let usage = """
    usage: rsup-supporter <command> [options]

    Runs a RemoteSupport supporter node and talks to a running one.

    commands:
      serve     listen for devices (interactive console on a terminal, or --non-interactive)
      config    check FILE: check a serve configuration file (and its TLS files) without starting anything;
                show [FILE]: the effective serve options and where each comes from, secrets masked
      create    create a session code             [--type remote|assist] [--description TEXT]
                                                  [--customer NAME] [--email ADDRESS] [--waiting-message TEXT]
                                                  [--feature-rule NAME=RULE]... [--default-rule RULE]
                                                  [--assign LOGIN]  (the supporter account it belongs to)
      list      list codes with their live state
      rules     show or change a code's rules     --code CODE [NAME=RULE|NAME=default]... [--default-rule RULE]
                                                  [--reset]   (rules: allow, confirm, deny; see 'rules --help')
      connect   send a connection request         --code CODE --as LOGIN [--type screen|assist]
                                                  [--features voip,chat,…] (default: voip)
                                                  [--media-file FILE] (1–4096 bytes SESSION_STARTED hands the
                                                  app, e.g. a WebRTC room; never logged)
      cancel    cancel the pending request        --code CODE
      say       chat with the device (1.1)        --code CODE --text TEXT   (needs chat granted)
      send      send the device a file (1.1)      --code CODE --file FILE   (needs file_share; at most 16 MiB)
      ask       ask for a feature mid-session     --code CODE --feature NAME [--text WHY]
      end       end the session on a code         --code CODE
      close     close a code for good             --code CODE
      drain     stop the node serving --data: a node of a cluster hands its sessions over to the others
                (SPEC §15.5 "Drain"); a node alone ends them with going_away. Same as SIGTERM
      user      supporter accounts                add|list|disable|enable|passwd|role|rename
      webhook   webhook endpoints and deliveries  add|list|change|enable|disable|rotate-secret|remove|
                                                  deliveries|redeliver|retry ('rsup-supporter webhook --help')
      token     issue a new API token             [--scope device|admin] [--label TEXT] (admin: for the REST API)
      token list    list tokens (ids, scopes, labels, revoked; never the tokens)
      token revoke  revoke a token at once        --id ID
      audit     show the audit trail              [--code CODE] [--from TIME] [--to TIME] [--limit N]

    common options:
      --data DIR        the node's data folder (default ./supporter-data); its control socket links the commands
      --json            machine-readable output, one JSON object per line
      --help            this text, or a command's own with 'rsup-supporter <command> --help'
      --version         the release, the protocol, and the OpenSSL, SQLite and libpq it runs with ([--json])

    exit codes: 0 ok, 1 failure, 2 usage error
    """

let serveUsage = """
    usage: rsup-supporter serve --cert FILE --key FILE [options]
           rsup-supporter serve --config FILE [options]

      --config FILE            read options from FILE: one 'name = value' per line, name being an option below without
                               its '--' (a flag: 'json = true'); '#' starts a comment. Every option also comes from
                               the environment as RSUP_NAME (RSUP_API_TOKEN, RSUP_STORE: the place for secrets).
                               The command line wins over the environment, the environment over the file

      --listen HOST:PORT       where devices connect (default 127.0.0.1:7443; [::]:7443 for every address)
      --cert FILE              the node's certificate chain (PEM), e.g. from certs/make-dev-certs.sh
      --key FILE               its private key (PEM)
      --data DIR               data folder (default ./supporter-data)
      --store STORE            where the durable state lives: sqlite:DIR (an SQLite file in DIR; default: the data
                               folder) or PostgreSQL, postgres://USER@HOST/DB or libpq key=value pairs (the data
                               folder still holds the control socket). Several nodes may share one PostgreSQL
                               database and act as one service (docs/cluster.md)
      --presence-lease DUR     with PostgreSQL: how long other nodes still see this node's devices after it stopped
                               renewing (it died or lost the database); default 10s, 1s–300s
      --api-token-file FILE    also accept the device token on FILE's first line, for REGISTER (keep the file
                               mode 600; a token for the REST API: 'rsup-supporter token --scope admin')
      --api-token TOKEN        the same, on the command line: at least 24 characters. Every user of this machine
                               sees a command line in 'ps': prefer --api-token-file (or issue tokens with
                               'rsup-supporter token')
      --api-listen HOST:PORT   also serve the REST API (HTTPS, same certificate; default port 7444), see
                               protocol/openapi.yaml; it needs admin tokens ('rsup-supporter token --scope admin')
      --trusted-proxy ADDR     a reverse proxy in front of the REST API whose X-Forwarded-For is believed (an IP
                               address; repeat for several). Without it X-Forwarded-For is ignored
      --metrics-allow NET      who may read GET /metrics on the API address without a token: an address or network
                               (10.0.0.0/8, 2001:db8::/32; repeat or comma-separate; 'none' for nobody); default
                               loopback only
      --metrics-token-file F   also serve /metrics to 'Authorization: Bearer' with the token on F's first line (at
                               least 16 characters; or RSUP_METRICS_TOKEN); admin API tokens work too
      --metrics-token TOKEN    the same on the command line, which every user sees in 'ps': prefer the file or
                               RSUP_METRICS_TOKEN
      --keepalive DURATION     keepalive interval, 1s to 120s (default 15s)
      --request-timeout DUR    how long a request waits for the device (default 90s)
      --resume-grace DUR       how long a session whose link was lost waits for the device to resume (protocol 1.1;
                               default 30s, 1s–600s; 0 or off: a lost link ends the session at once)
      --message-retention P    how long chat lines, application messages and files of sessions are kept for the REST
                               API and the console (7d, 12h, 30m; default 7d; 0: none kept — the audit trail still
                               records each message, never its content)
      --content-limit SIZE     the most bytes of those contents kept in all, oldest dropped first (default 1GiB,
                               16MiB to 1024GiB)
      --webhook-allow-http H   let webhook endpoints on host H use plain http:// (repeat or comma-separate);
                               every other endpoint must be https://
      --webhook-allow-address NET  let deliveries reach NET although it is loopback, link-local, a cloud metadata
                               address, unspecified, multicast or broadcast (refused by default; repeat or
                               comma-separate)
      --webhook-trust FILE     CA certificates (PEM) that sign webhook receivers' certificates, instead of the
                               system's trusted CAs (default: the system's)
      --webhook-timeout DUR    the most one delivery may take, connect to the answer's head (default 10s, 1s–60s;
                               the name lookup before it has the system resolver's own limits)
      --webhook-retry-base DUR the first retry's wait, doubling each time up to 1h, for 24h (default 5s)
      --webhook-concurrency N  endpoints delivered to at once, each on a thread of its own (default 4, 1–32)
      --protocol 1.0|1.1|1.2   the protocol to offer (default 1.2: access control, messages, resume, ask withdrawal;
                               1.1: without ask withdrawal; 1.0: none)
      --non-interactive        no console: run until SIGINT or SIGTERM (both drain); SIGHUP reloads --cert and --key
      --log-level LEVEL        error, warning, info, debug or trace (default warning)
      --log-format text|json   log lines on stderr as text (default) or one JSON object each (time, level, component,
                               message)
      --json                   events as JSON lines
    """

/// The data folder, created owner-only (0700); an existing folder that others may read is tightened to 0700 (said
/// on stderr), or refused when that is not possible.
func dataFolder(_ arguments: ParsedArguments) throws(CLIError) -> String {
    let folder = arguments.options["data"] ?? "supporter-data"
    do throws(StoreError) {
        let preparation = try DataFolder.prepare(path: folder)
        if let note = preparation.note {
            StandardStreams.writeError("note: \(TerminalText.escaped(note))\n")
        }
    } catch {
        throw .failure("the data folder \(folder): \(error.message)")
    }
    return folder
}

/// Sends one command to the node serving `--data` and prints its answer. `repeatable` options may be given more than
/// once and are sent as lists; `check` sees the parsed arguments first and throws a usage error for bad input, so
/// that nothing is sent.
func remote(
    _ command: String, _ arguments: [String], required: [String], optional: [String], repeatable: [String] = [],
    check: (ParsedArguments) throws(CLIError) -> Void = { _ throws(CLIError) in }
) throws(CLIError) {
    let parsed = try ParsedArguments(
        arguments, valueOptions: Set(required + optional + repeatable + ["data"]), flagOptions: ["json"],
        repeatableOptions: Set(repeatable))
    if parsed.has("help") {
        print("usage: rsup-supporter \(command.replacingOccurrences(of: "-", with: " ")) " + required.map { "--\($0) VALUE" }.joined(separator: " ")
            + optional.map { " [--\($0) VALUE]" }.joined() + repeatable.map { " [--\($0) VALUE]..." }.joined()
            + " [--data DIR] [--json]")
        return
    }
    guard parsed.positionals.isEmpty else { throw .usage("unexpected argument '\(parsed.positionals[0])'") }
    try check(parsed)
    var request: [String: Any] = ["command": command]
    for name in required { request[name] = try parsed.require(name) }
    for name in optional { if let value = parsed.options[name] { request[name] = value } }
    for name in repeatable { if let values = parsed.allOptions[name] { request[name] = values } }
    if let code = request["code"] as? String, !SessionCodeFormat.isWellFormed(code) {
        throw .usage("'\(code)' is not a session code (the format is 123-456-789)")
    }
    guard let (reply, console) = try sendCommand(request, parsed) else { return }
    defer { revokeUnseenToken(command, reply, parsed) }
    switch command {
    case "create":
        let code = reply["code"] as? [String: Any] ?? [:]
        console.line(escaping: "\(code["code"] ?? "?")  \(code["type"] ?? "")  \(code["state"] ?? "")")
    case "list":
        let codes = reply["codes"] as? [[String: Any]] ?? []
        if codes.isEmpty { console.line("no codes; create one with 'rsup-supporter create'") }
        for code in codes {
            let extra = [
                code["device"].map { "device: \($0)" }, code["node"].map { "on node \($0)" },
                code["description"].map { "\($0)" },
            ]
                .compactMap { $0 }.joined(separator: "  ")
            console.line(escaping: "\(code["code"] ?? "?")  \(code["type"] ?? "")  \(code["state"] ?? "")  \(extra)")
        }
    case "token":
        console.line(reply["token"] as? String ?? "")
    case "token-list":
        let tokens = reply["tokens"] as? [[String: Any]] ?? []
        if tokens.isEmpty { console.line("no tokens; issue one with 'rsup-supporter token'") }
        for token in tokens {
            let state = (token["revoked_at"] as? String).map { "revoked \($0)" } ?? "active"
            console.line(
                escaping: "\(token["id"] ?? "?")  \(token["scope"] ?? "")  \(state)  created \(token["created_at"] ?? "")"
                    + ((token["label"] as? String).map { "  \($0)" } ?? ""))
        }
    case "token-revoke":
        console.line("revoked")
    case "connect":
        console.line("request \(reply["request_id"] ?? "?") sent")
    default:
        console.line("ok")
    }
}

/// Sends `request` to the node serving `--data`; throws its error. With `--json` prints the reply and returns nil;
/// otherwise returns it with the console to print it on.
func sendCommand(_ request: [String: Any], _ parsed: ParsedArguments) throws(CLIError) -> ([String: Any], Console)? {
    let folder = parsed.options["data"] ?? "supporter-data"
    let reply = try ControlSocket.request(path: folder + "/control.sock", request)
    guard reply["ok"] as? Bool == true else { throw .failure(reply["error"] as? String ?? "the command failed") }
    let console = Console(json: parsed.has("json"))
    if console.json {
        console.line(Console.encode(reply))
        revokeUnseenToken(request["command"] as? String ?? "", reply, parsed)
        return nil
    }
    return (reply, console)
}

/// A token issued for a `token` command whose output could not be written was seen by nobody, yet it works: revoke
/// it again, so that no live credential is left that no one holds (the exit status then reports the lost output).
func revokeUnseenToken(_ command: String, _ reply: [String: Any], _ parsed: ParsedArguments) {
    guard command == "token", StandardStreams.outputFailure != nil, let id = reply["id"] as? String else { return }
    let folder = parsed.options["data"] ?? "supporter-data"
    let revoked = (try? ControlSocket.request(path: folder + "/control.sock", ["command": "token-revoke", "id": id]))?[
        "ok"] as? Bool == true
    StandardStreams.writeError(
        revoked
            ? "note: the token \(id) nobody could see was revoked again\n"
            : "warning: the token \(id) nobody could see could not be revoked: revoke it with 'rsup-supporter token "
                + "revoke --id \(id)'\n")
}

func main() -> Int32 {
    OpenSSLLibrary.initializeWithoutExitCleanup()
    StandardStreams.setUp()
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let command = arguments.first else {
        StandardStreams.writeError(usage + "\n")
        return 2
    }
    arguments.removeFirst()
    do throws(CLIError) {
        switch command {
        case "--help", "-h", "help":
            print(usage)
        case "--version", "version":
            let libraries = StoreConfiguration.libraryVersions
            if arguments.contains("--json") {
                print(Console.encode(VersionText.object(program: "rsup-supporter", libraries: libraries)))
            } else {
                for line in VersionText.lines(program: "rsup-supporter", libraries: libraries) { print(line) }
            }
        case "serve":
            return try Serve.run(arguments, usage: serveUsage)
        case "config":
            // `config check FILE [serve options]`, `config show [FILE] [serve options]`: FILE is --config's.
            var rest = Array(arguments.dropFirst())
            if let file = rest.first, !file.hasPrefix("-") { rest = ["--config", file] + rest.dropFirst() }
            switch arguments.first {
            case "check":
                guard rest.contains("--config") || rest.contains(where: { $0.hasPrefix("--config=") }) else {
                    throw CLIError.usage("config check needs a file: rsup-supporter config check FILE")
                }
                return try Serve.run(rest, usage: serveUsage, mode: .check)
            case "show": return try Serve.run(rest, usage: serveUsage, mode: .show)
            default:
                throw CLIError.usage("say 'config check FILE' or 'config show [FILE]'")
            }
        case "create":
            try remote(
                "create", arguments, required: [],
                optional: ["type", "description", "customer", "email", "waiting-message", "default-rule", "assign"],
                repeatable: ["feature-rule"]
            ) { parsed throws(CLIError) in
                _ = try SupporterCommands.featureRules(
                    parsed.allOptions["feature-rule"] ?? [], default: parsed.options["default-rule"])
            }
        case "list": try remote("list", arguments, required: [], optional: [])
        case "rules": try Rules.run(arguments)
        case "connect":
            try remote("connect", arguments, required: ["code", "as"], optional: ["type", "features", "media-file"])
        case "cancel": try remote("cancel", arguments, required: ["code"], optional: [])
        case "say": try remote("say", arguments, required: ["code", "text"], optional: [])
        case "send": try remote("send", arguments, required: ["code", "file"], optional: [])
        case "ask": try remote("ask", arguments, required: ["code", "feature"], optional: ["text"])
        case "end": try remote("end", arguments, required: ["code"], optional: [])
        case "close": try remote("close", arguments, required: ["code"], optional: [])
        case "drain": try Drain.run(arguments)
        case "token":
            switch arguments.first {
            case "list": try remote("token-list", Array(arguments.dropFirst()), required: [], optional: [])
            case "revoke": try remote("token-revoke", Array(arguments.dropFirst()), required: ["id"], optional: [])
            default:
                try remote("token", arguments, required: [], optional: ["scope", "label"]) { parsed throws(CLIError) in
                    if let scope = parsed.options["scope"], APITokenScope(rawValue: scope) == nil {
                        throw .usage("--scope '\(scope)': say device or admin")
                    }
                }
            }
        case "audit": try Audit.run(arguments)
        case "user": try Users.run(arguments)
        case "webhook": try Webhooks.run(arguments)
        default:
            throw CLIError.usage("unknown command '\(command)'; see 'rsup-supporter --help'")
        }
        return 0
    } catch {
        StandardStreams.writeError("error: \(TerminalText.escaped(error.description))\n")
        if error.kind == .usage { StandardStreams.writeError("see 'rsup-supporter --help'\n") }
        return error.exitCode
    }
}

exit(StandardStreams.exitStatus(main()))
