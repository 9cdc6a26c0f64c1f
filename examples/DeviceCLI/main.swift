import CLIKit
import DeviceNode
import Dispatch
import Foundation
import SupportRuntime
import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

let usage = """
    usage: rsup-device connect HOST[:PORT] [HOST[:PORT]]... --code CODE (--token-file FILE | --token TOKEN)
                               (--ca FILE | --pin PIN) [options]
           rsup-device --version [--json]

    Joins a session code on a RemoteSupport supporter node as a device, shows what happens, and asks you to allow or
    reject connection requests. Ctrl-C (or typing 'leave') leaves the code, in any state. During a session, type
    'say TEXT' to chat, 'send FILE' to send a file (at most 16 MiB), 'revoke FEATURE' to withdraw a grant; answer a
    supporter's feature ask with y or n. A lost link is resumed within the node's grace period (protocol 1.1).
    Several HOST[:PORT]s name other supporter nodes of the same service: an unreachable one is skipped, and a lost
    link is redialled through all of them.

      --code CODE              the session code, e.g. 123-456-789
      --token-file FILE        the API token the supporter node issued ('rsup-supporter token'), on FILE's first line
                               (keep the file mode 600)
      --token TOKEN            the same, on the command line: every user of this machine sees a command line in
                               'ps', so prefer --token-file
      --ca FILE                trust the CA that signed the node's certificate (PEM)
      --pin PIN                trust the node's key by its pin (sha256/…, printed by certs/make-dev-certs.sh)
      --server-name NAME       the name to verify in the node's certificate (default: HOST)
      --name NAME              this device's name, as supporters see it (default: the host name)
      --cert FILE --key FILE   a client certificate, if the node asks for one
      --auto-accept            allow every request without asking (scripts)
      --auto-reject            reject every request without asking (scripts)
      --prompt-timeout DUR     how long a request waits for your answer (default 60s)
      --keepalive DURATION     keepalive interval to propose, 100ms to 600s (default 15s; a supporter node
                               accepts at most 120s)
      --rule FEATURE=RULE      this device's access rule for a feature: allow, confirm or deny (repeatable; default
                               confirm: you decide at the prompt). Features: screen_share, assist_ar, voip,
                               remote_control, file_share, chat, ar_pointer, app_messages
      --protocol 1.0|1.1|1.2   the protocol to speak (default 1.2; 1.1 without ask withdrawal; 1.0 offers no
                               extension)
      --log-level LEVEL        error, warning, info, debug or trace (default error: failures are the one 'error:' line)
      --log-format text|json   log lines as text (default) or one JSON object each (time, level, component, message)
      --json                   events as JSON lines

    exit codes: 0 the session ended or you left, 1 failure (bad code or token, TLS, network), 2 usage error
    """

func run() throws(CLIError) -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let command = arguments.first else { throw .usage("no command; the command is 'connect'") }
    arguments.removeFirst()
    if command == "--help" || command == "-h" || command == "help" {
        print(usage)
        return 0
    }
    if command == "--version" || command == "version" {
        if arguments.contains("--json") {
            print(Console.encode(VersionText.object(program: "rsup-device")))
        } else {
            for line in VersionText.lines(program: "rsup-device") { print(line) }
        }
        return 0
    }
    guard command == "connect" else { throw .usage("unknown command '\(command)'; the command is 'connect'") }
    let parsed = try ParsedArguments(
        arguments,
        valueOptions: [
            "code", "token", "token-file", "ca", "pin", "server-name", "name", "cert", "key", "prompt-timeout",
            "keepalive", "log-level", "log-format", "protocol", "rule",
        ],
        flagOptions: ["auto-accept", "auto-reject", "json"], repeatableOptions: ["rule"])
    if parsed.has("help") {
        print(usage)
        return 0
    }
    guard !parsed.positionals.isEmpty else { throw .usage("give the supporter node as HOST[:PORT]") }
    let target = try HostPort(parsed.positionals[0], defaultPort: 7443)
    let alternates = try parsed.positionals.dropFirst().map { (text) throws(CLIError) in
        try HostPort(text, defaultPort: 7443)
    }
    let code = try parsed.require("code")
    guard SessionCodeFormat.isWellFormed(code) else {
        throw .usage("'\(code)' is not a session code: the format is three groups of three digits, like 123-456-789")
    }
    guard let token = try parsed.secret("token", fileOption: "token-file") else {
        throw .usage("--token is required; better, give it in a file with --token-file FILE")
    }
    guard parsed.options["ca"] != nil || parsed.options["pin"] != nil else {
        throw .usage("say how to trust the node: --ca FILE or --pin PIN")
    }
    guard !(parsed.has("auto-accept") && parsed.has("auto-reject")) else {
        throw .usage("--auto-accept and --auto-reject exclude each other")
    }
    var pins: [PublicKeyPin] = []
    if let pin = parsed.options["pin"] {
        do { pins = [try PublicKeyPin(pin)] } catch { throw .usage(Explain.transport(error)) }
    }
    var tls = TLSConfiguration.makeClientConfiguration(
        trustRoots: parsed.options["ca"].map { .file($0) }, pinnedPublicKeys: pins,
        serverName: parsed.options["server-name"])
    if let cert = parsed.options["cert"] {
        tls.certificateChain = .file(cert)
        tls.privateKey = .file(try parsed.require("key"))
    }
    let name = parsed.options["name"] ?? ProcessInfo.processInfo.hostName
    var configuration = DeviceConfiguration(
        host: target.host, port: target.port, tls: tls, apiToken: token, deviceName: String(name.prefix(64)))
    configuration.alternateNodes = alternates.map { NodeAddress(host: $0.host, port: $0.port) }
    configuration.promptTimeout = try parsed.duration("prompt-timeout", default: .seconds(60))
    configuration.keepaliveInterval = try parsed.duration("keepalive", default: .seconds(15))
    guard configuration.keepaliveInterval >= .milliseconds(100), configuration.keepaliveInterval <= .seconds(600) else {
        throw .usage("--keepalive takes 100ms to 600s (what HELLO can carry, SPEC §5.1)")
    }
    configuration.capabilities = [
        Feature(.screenShare), Feature(.assistAR), Feature(.voip), Feature(.fileShare), Feature(.chat),
        Feature(.appMessages),
    ]
    configuration.accessRules = try accessRules(parsed.allOptions["rule"] ?? [])
    switch parsed.options["protocol"] ?? "1.2" {
    case "1.2": configuration.extensions = .all
    case "1.1": configuration.extensions = ProtocolExtensions.all.subtracting(.askWithdraw)
    case "1.0": configuration.extensions = .none
    case let other: throw .usage("--protocol '\(other)': say 1.0, 1.1 or 1.2")
    }
    configuration.logger = Logging.logger(
        level: try Logging.level(parsed.options["log-level"], default: .error), component: "device",
        format: try Logging.format(parsed.options["log-format"]))
    let console = Console(json: parsed.has("json"))
    let node: DeviceNode
    do { node = try DeviceNode(configuration: configuration) } catch {
        throw .failure((error.underlying as? TransportError).map(Explain.transport) ?? error.description)
    }
    let answerMode: DeviceRun.AnswerMode =
        parsed.has("auto-accept") ? .allow : parsed.has("auto-reject") ? .reject : .ask
    return try DeviceRun(node: node, console: console, mode: answerMode, target: target).run(code: code)
}

/// `--rule FEATURE=RULE` options as the device's rules; every other feature needs confirmation.
func accessRules(_ options: [String]) throws(CLIError) -> FeatureRules {
    var rules = FeatureRules.deviceDefault
    for option in options {
        let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw .usage("--rule '\(option)': write FEATURE=RULE, e.g. remote_control=deny") }
        guard let feature = Feature.ID(name: parts[0]) else {
            throw .usage("--rule: unknown feature '\(parts[0])'")
        }
        guard let rule = AccessRule(name: parts[1]) else {
            throw .usage("--rule: unknown rule '\(parts[1])'; say allow, confirm or deny")
        }
        rules.set(rule, for: feature)
    }
    return rules
}

OpenSSLLibrary.initializeWithoutExitCleanup()
StandardStreams.setUp()
do {
    exit(StandardStreams.exitStatus(try run()))
} catch {
    StandardStreams.writeError("error: \(TerminalText.escaped(error.description))\n")
    if error.kind == .usage { StandardStreams.writeError("see 'rsup-device --help'\n") }
    exit(error.exitCode)
}
