import CLIKit
import Dispatch
import Foundation
import SupporterNode
import SupporterStore
import SupporterStores
import SupporterREST
import SupportRuntime
import SupporterCore
import SupportSession
import SupportWire
import SupportUtilities
import SupporterModel
import SupporterWebhooks
import SupportVocabulary

extension Explain {
    /// One line for a supporter node that cannot start.
    static func supporterNode(_ error: SupporterNodeError) -> String {
        if let underlying = error.transportError { return transport(underlying) }
        return error.description
    }
}

/// `rsup-supporter serve`: the node, its control socket, its event output and, on a terminal, its console.
enum Serve {
    /// Where `--store` puts the node's durable state.
    enum StoreChoice: Equatable {
        case sqlite(path: String)
        case postgres(String)
    }

    /// `--store`: absent → SQLite in the data folder; `sqlite:DIR` → SQLite in DIR; `postgres://…`,
    /// `postgresql://…` or libpq `key=value` pairs → PostgreSQL. Anything else is a usage error.
    static func storeBackend(_ option: String?, dataFolder: String) throws(CLIError) -> StoreChoice {
        guard let option else { return .sqlite(path: dataFolder + "/supporter.sqlite") }
        if option.hasPrefix("sqlite:") {
            let folder = String(option.dropFirst("sqlite:".count))
            guard !folder.isEmpty else { throw .usage("--store sqlite:DIR needs a folder after 'sqlite:'") }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw .usage("--store sqlite:\(folder): no such folder; create it first")
            }
            return .sqlite(path: folder + "/supporter.sqlite")
        }
        if option.hasPrefix("postgres://") || option.hasPrefix("postgresql://") {
            guard option.count > option.prefix(while: { $0 != "/" }).count + 2 else {
                throw .usage("--store \(option): name a server, e.g. postgres://user@host/dbname")
            }
            return .postgres(option)
        }
        let pairs = option.split(separator: " ")
        if !pairs.isEmpty, pairs.allSatisfy({ $0.contains("=") && !$0.hasPrefix("=") }) { return .postgres(option) }
        throw .usage(
            "--store '\(StoreBackend.redacted(option))': say sqlite:DIR, postgres://USER@HOST/DB or libpq key=value "
                + "pairs such as 'host=db.example dbname=rsup'")
    }

    /// `serve`'s options that take a value (each also a key of `--config` files and an `RSUP_*` variable).
    static let valueOptions: Set<String> = [
        "listen", "api-listen", "trusted-proxy", "cert", "key", "data", "api-token", "api-token-file", "keepalive",
        "request-timeout", "log-level", "log-format", "resume-grace", "protocol", "store", "presence-lease",
        "metrics-allow", "metrics-token", "metrics-token-file", "message-retention", "content-limit",
        "webhook-allow-http", "webhook-allow-address", "webhook-trust", "webhook-timeout", "webhook-retry-base",
        "webhook-concurrency",
    ]
    static let flagOptions: Set<String> = ["non-interactive", "json"]
    static let repeatableOptions: Set<String> = [
        "trusted-proxy", "metrics-allow", "webhook-allow-http", "webhook-allow-address",
    ]
    /// Options whose values are secrets: `config show` masks them.
    static let secretOptions: Set<String> = ["api-token", "store", "metrics-token"]
    /// What each option is when nobody sets it, for `config show`.
    static let defaults: [String: String] = [
        "listen": "127.0.0.1:7443", "data": "supporter-data", "keepalive": "15s", "request-timeout": "90s",
        "resume-grace": "30s", "protocol": "1.2", "presence-lease": "10s (with --store postgres)",
        "log-level": "warning", "log-format": "text", "non-interactive": "false", "json": "false",
        "store": "sqlite in the data folder", "metrics-allow": "127.0.0.0/8, ::1/128 (with --api-listen)",
        "message-retention": "7d", "content-limit": "1GiB", "webhook-allow-http": "(none: https:// only)",
        "webhook-allow-address": "(none)", "webhook-trust": "the system's trusted CAs", "webhook-timeout": "10s",
        "webhook-retry-base": "5s", "webhook-concurrency": "4",
    ]

    /// The webhook settings (`--webhook-…`): plain-HTTP hosts, allowed address prefixes, trusted CAs, time, retry
    /// base and senders.
    static func webhookSettings(_ parsed: ParsedArguments) throws(CLIError) -> WebhookSettings {
        var settings = WebhookSettings()
        for text in (parsed.allOptions["webhook-allow-http"] ?? []).flatMap({ $0.split(separator: ",") }) {
            let host = text.trimmingCharacters(in: .whitespaces).lowercased()
            guard !host.isEmpty, !host.contains("/"), !host.contains(":") || IPAddressText.canonical(host) != nil else {
                throw .usage("--webhook-allow-http takes a host name such as helpdesk.internal, not '\(text)'")
            }
            settings.plainHTTPHosts.insert(host)
        }
        for text in (parsed.allOptions["webhook-allow-address"] ?? []).flatMap({ $0.split(separator: ",") }) {
            guard let prefix = IPPrefix(text.trimmingCharacters(in: .whitespaces)) else {
                throw .usage("--webhook-allow-address takes an address or a network such as 10.1.2.3 or fd00::/8, not '\(text)'")
            }
            settings.addressPolicy.allowed.append(prefix)
        }
        if let trust = parsed.options["webhook-trust"] { settings.trustRoots = .file(trust) }
        settings.timeout = try parsed.duration("webhook-timeout", default: .seconds(10))
        guard settings.timeout >= .seconds(1), settings.timeout <= .seconds(60) else {
            throw .usage("--webhook-timeout takes 1s to 60s")
        }
        settings.retry.base = try parsed.duration("webhook-retry-base", default: .seconds(5))
        guard settings.retry.base >= .milliseconds(100), settings.retry.base <= .seconds(3600) else {
            throw .usage("--webhook-retry-base takes 100ms to 1h")
        }
        if let text = parsed.options["webhook-concurrency"] {
            guard let count = Int(text), (1...32).contains(count) else {
                throw .usage("--webhook-concurrency takes 1 to 32 (endpoints delivered to at once)")
            }
            settings.concurrency = count
        }
        return settings
    }

    /// Who may read `GET /metrics`: `--metrics-allow` networks (loopback when none is given; `none` for no address at
    /// all) and the metrics token (`--metrics-token-file`, or `RSUP_METRICS_TOKEN`; at least 16 characters).
    static func metricsAccess(_ parsed: ParsedArguments) throws(CLIError) -> MetricsAccess {
        var allowed: [IPPrefix] = []
        let given = parsed.allOptions["metrics-allow"] ?? []
        for text in given.flatMap({ $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } })
        where text != "none" {
            guard let prefix = IPPrefix(text) else {
                throw .usage("--metrics-allow takes an address or a network such as 10.0.0.0/8 or 2001:db8::/32, not '\(text)'")
            }
            allowed.append(prefix)
        }
        let token = try parsed.secret("metrics-token", fileOption: "metrics-token-file")
        if let token, token.count < 16 || token.contains(where: { $0.isWhitespace || $0.isNewline }) {
            let option = parsed.options["metrics-token"] != nil ? "--metrics-token" : "--metrics-token-file"
            throw .usage("\(option): a metrics token has at least 16 characters and no spaces")
        }
        return MetricsAccess(allowed: given.isEmpty ? IPPrefix.loopback : allowed, token: token)
    }

    /// What `run` does once the options are read.
    enum Mode {
        /// Serve.
        case serve
        /// Check every option (and the TLS files) as `serve` would, start nothing (`config check`).
        case check
        /// Print the effective options and where each came from, secrets masked (`config show`).
        case show
    }

    /// The command line, filled from `--config FILE` and the `RSUP_*` environment (``ConfigurationFile``).
    static func options(_ arguments: [String]) throws(CLIError) -> ParsedArguments {
        var parsed = try ParsedArguments(
            arguments, valueOptions: valueOptions.union(["config"]), flagOptions: flagOptions,
            repeatableOptions: repeatableOptions)
        let file = try parsed.options["config"].map { (path) throws(CLIError) -> ConfigurationFile in
            try ConfigurationFile(
                path: path, valueOptions: valueOptions, flagOptions: flagOptions, repeatableOptions: repeatableOptions)
        }
        try parsed.fill(
            from: file, environment: ProcessInfo.processInfo.environment, valueOptions: valueOptions,
            flagOptions: flagOptions)
        return parsed
    }

    static func run(_ arguments: [String], usage: String, mode: Mode = .serve) throws(CLIError) -> Int32 {
        let parsed = try options(arguments)
        if parsed.has("help") {
            print(usage)
            return 0
        }
        if mode == .show {
            show(parsed)
            return 0
        }
        do throws(CLIError) { return try run(parsed, mode: mode) } catch { throw parsed.locating(error) }
    }

    /// `config show`: one `name = value  # where from` line per option (one JSON object with `--json` on the command
    /// line; `json` in the file or the environment is the node's own output option), secrets masked.
    static func show(_ parsed: ParsedArguments) {
        let asJSON = parsed.has("json") && parsed.origins["json"] == nil
        var object: [String: Any] = [:]
        for name in valueOptions.union(flagOptions).sorted() {
            let given = flagOptions.contains(name) ? (parsed.has(name) ? "true" : nil) : parsed.options[name]
            let origin = parsed.origins[name] ?? (given != nil ? "the command line" : "default")
            var value = given ?? (flagOptions.contains(name) && parsed.origins[name] != nil ? "false" : defaults[name])
            if let shown = value, secretOptions.contains(name), given != nil {
                value = name == "store" ? StoreBackend.redacted(shown) : "(secret, \(shown.count) characters)"
            }
            if repeatableOptions.contains(name), let all = parsed.allOptions[name] { value = all.joined(separator: ", ") }
            object[name] = ["value": value ?? "(none)", "from": origin]
            if !asJSON { print("\(name) = \(value ?? "(none)")  # \(origin)") }
        }
        if asJSON { print(Console.encode(object)) }
    }

    private static func run(_ parsed: ParsedArguments, mode: Mode) throws(CLIError) -> Int32 {
        guard parsed.positionals.isEmpty else { throw .usage("unexpected argument '\(parsed.positionals[0])'") }
        let listen = try HostPort(parsed.options["listen"] ?? "127.0.0.1:7443", defaultPort: 7443)
        let certificate = try parsed.require("cert")
        let key = try parsed.require("key")
        let apiToken = try parsed.secret("api-token", fileOption: "api-token-file")
        if let apiToken {
            // Checked before anything starts listening, as every usage error is.
            let option = parsed.options["api-token"] != nil ? "--api-token" : "--api-token-file"
            do throws(APITokenError) { try APITokenStore.validate(apiToken) } catch { throw .usage("\(option): \(error.message)") }
        }
        let console = Console(json: parsed.has("json"))
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(certificateChain: .file(certificate), privateKey: .file(key)))
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.keepaliveInterval = try parsed.duration("keepalive", default: .seconds(15))
        guard configuration.keepaliveInterval >= .seconds(1), configuration.keepaliveInterval <= .seconds(120) else {
            throw .usage("--keepalive takes 1s to 120s (the most a supporter node accepts from a device, SPEC §13.1)")
        }
        configuration.requestTimeout = try parsed.duration("request-timeout", default: .seconds(90))
        switch parsed.options["protocol"] ?? "1.2" {
        case "1.2": configuration.extensions = .all
        case "1.1": configuration.extensions = ProtocolExtensions.all.subtracting(.askWithdraw)
        case "1.0": configuration.extensions = .none
        case let other: throw .usage("--protocol '\(other)': say 1.0, 1.1 or 1.2")
        }
        if parsed.options["resume-grace"] == "0" || parsed.options["resume-grace"] == "off" {
            configuration.extensions.remove(.sessionResume)
        } else {
            let grace = try parsed.duration("resume-grace", default: .seconds(30))
            guard grace >= .seconds(1), grace <= .seconds(600) else {
                throw .usage("--resume-grace takes 1s to 600s, or 0 (off)")
            }
            configuration.resumeGrace = grace
        }
        configuration.registryPolicy.contentRetention = try parsed.period(
            "message-retention", default: .seconds(7 * 86_400), maximum: .seconds(3_650 * 86_400))
        configuration.registryPolicy.contentLimitBytes = try parsed.byteCount(
            "content-limit", default: 1 << 30, minimum: 16 << 20, maximum: 1 << 40)
        let webhooks = try webhookSettings(parsed)
        configuration.webhookPlainHTTPHosts = webhooks.plainHTTPHosts
        let logLevel = try Logging.level(parsed.options["log-level"])
        let logFormat = try Logging.format(parsed.options["log-format"])
        configuration.logger = Logging.logger(level: logLevel, component: "supporter", format: logFormat)
        let logger = configuration.logger
        StandardStreams.whenOutputFails { reason in
            logger.log(.warning, "standard output cannot be written (\(reason)): events are no longer printed; the node goes on")
        }
        let folder = parsed.options["data"] ?? "supporter-data"
        try ControlSocket.checkPath(folder + "/control.sock")
        let storeText: String
        var store = StoreConfiguration()
        store.logger = configuration.logger
        switch try storeBackend(parsed.options["store"], dataFolder: folder) {
        case .sqlite(let path):
            store.path = path
            storeText = folder
        case .postgres(let connectionString):
            store.backend = .postgres(connectionString)
            storeText = StoreBackend.redacted(connectionString)
            let lease = try parsed.duration("presence-lease", default: .seconds(10))
            guard lease >= .seconds(1), lease <= .seconds(300) else { throw .usage("--presence-lease takes 1s to 300s") }
            store.presenceLease = lease
        }
        if parsed.options["presence-lease"] != nil, store.backend == .sqlite {
            throw .usage("--presence-lease needs --store postgres://… (it concerns several nodes on one database)")
        }
        var restConfiguration: RESTServerConfiguration?
        if let api = parsed.options["api-listen"] {
            let address = try HostPort(api, defaultPort: 7444)
            var rest = RESTServerConfiguration(host: address.host, port: address.port)
            rest.logger = Logging.logger(level: logLevel, component: "rest", format: logFormat)
            for proxy in parsed.allOptions["trusted-proxy"] ?? [] {
                guard ClientAddressResolver(trustedProxies: [proxy]) != nil else {
                    throw .usage("--trusted-proxy takes an IP address such as 10.0.0.5 or ::1, not '\(proxy)'")
                }
                rest.trustedProxies.append(proxy)
            }
            rest.metricsAccess = try metricsAccess(parsed)
            restConfiguration = rest
        } else {
            for option in ["trusted-proxy", "metrics-allow", "metrics-token", "metrics-token-file"]
            where parsed.options[option] != nil {
                throw .usage("--\(option) needs --api-listen (it concerns the REST API)")
            }
        }

        // Before anything starts: a --webhook-trust file that does not load stops `serve` and fails `config check`.
        do throws(TransportError) { try WebhookDispatcher.check(webhooks) } catch {
            throw .failure("--webhook-trust: \(Explain.transport(error))")
        }
        if mode == .check {
            // The TLS files as the node will load them: readable, a server certificate in its validity, a matching key.
            do throws(TransportError) { _ = try TLSContext(configuration.tls) } catch {
                throw .failure(Explain.transport(error))
            }
            print(parsed.options["config"].map { "\($0): ok" } ?? "ok")
            return 0
        }
        _ = try dataFolder(parsed)
        let folderLock: DataFolderLock
        do throws(StoreError) { folderLock = try DataFolderLock(folder: folder) } catch {
            throw .failure("the data folder \(folder): \(error.message)")
        }
        defer { withExtendedLifetime(folderLock) {} }
        // A login shell's soft limit (often 1,024) would cap the node at a few hundred devices; the hard limit is ours.
        DescriptorBudget.raiseSoftLimit()
        let node: SupporterNode
        do {
            let opened = try store.openForNode()
            node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            try node.start()
        } catch {
            throw .failure(Explain.supporterNode(error))
        }
        if let token = apiToken {
            do { try node.addAPIToken(token) } catch { throw .failure(error.description) }
        }
        let dispatcher: WebhookDispatcher
        do throws(TransportError) {
            dispatcher = try WebhookDispatcher(
                settings: webhooks, outbox: node,
                // A lone node is the only one on its store: one name across restarts, so a restart takes its leases back.
                owner: node.clusterNodeID ?? "local", clock: node.clock,
                loop: node.loops.next(), userAgent: "RemoteSupport-Webhooks/\(ProductVersion.release)",
                payload: { event, content in WebhookPayload.body(event, content: content) },
                log: { line in logger.log(.warning, line) })
        } catch {
            node.shutdown()
            throw .failure("webhooks cannot start: \(Explain.transport(error)) (--webhook-trust)")
        }
        dispatcher.register(in: node.metrics)
        dispatcher.start()
        var restServer: RESTServer?
        if let restConfiguration {
            do {
                restServer = try RESTServer(
                    node: node, configuration: restConfiguration.withIdentity(of: configuration.tls))
            } catch {
                node.shutdown()
                throw .failure("the REST API cannot start: \(Explain.transport(error))")
            }
        }
        // Ctrl-C, SIGTERM and `drain` stop the node cleanly from here on: set before `listening` tells anyone to connect.
        let stop = DispatchSemaphore(value: 0)
        let commands = SupporterCommands(node: node, stop: { stop.signal() })
        try ControlSocket.serve(path: folder + "/control.sock") { request in commands.runBlocking(request) }
        let signals = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        let serviceManager = ServiceManagerNotifier()
        let reload = reloadOnHangUp(
            node: node, rest: restServer, tls: configuration.tls,
            restIdentity: restConfiguration?.withIdentity(of: configuration.tls), console: console, logger: logger,
            serviceManager: serviceManager)
        var bound = listen
        bound.port = node.port ?? listen.port
        var fields: [String: any Sendable] = ["address": bound.description, "port": Int(bound.port)]
        var restText = ""
        if let restServer {
            fields["api_port"] = Int(restServer.port)
            restText = "; REST API on https://\(HostPort(host: restServer.configuration.host, port: restServer.port))/api/v1"
        }
        if let nodeID = node.clusterNodeID {
            fields["node_id"] = nodeID
            restText += "; node id \(nodeID)"
        }
        console.event("listening", "supporter node listening on \(bound) (data: \(storeText))\(restText)", fields)
        // systemd (Type=notify): started once the listeners are up; the watchdog is fed while every loop answers.
        serviceManager.notify("READY=1\nSTATUS=listening on \(bound)\nMAINPID=\(getpid())")
        let watchdog = feedWatchdog(serviceManager, node: node)

        let events = Task {
            var dropped = 0
            for await event in node.events {
                let now = node.droppedEvents
                if now > dropped {
                    console.event(
                        "events_dropped",
                        "\(now - dropped) events were not shown: this output fell behind (the audit trail has them all)",
                        ["count": now - dropped])
                    dropped = now
                }
                report(event, console)
            }
        }
        if !parsed.has("non-interactive"), isatty(STDIN_FILENO) == 1 {
            Thread { InteractiveConsole(commands: commands, console: console).run(onQuit: { stop.signal() }) }.start()
        }
        stop.wait()
        serviceManager.notify("STOPPING=1\nSTATUS=draining")
        watchdog?.cancel()
        console.event(
            "stopping",
            node.clusterNodeID != nil
                ? "stopping: sessions that can resume are handed over to the other nodes, the others end"
                : "stopping: sessions that can resume wait for this node to start again (their resume grace), the others end",
            ["hands_over": true])
        let stopped = armStopDeadline(console)
        defer { stopped.signal() }
        // Devices first: the drain hands their sessions over while the REST API still answers (`/readyz`: 503).
        dispatcher.stop()
        node.drain()
        if let restServer {
            // The REST API first: its last audit rows go through the node.
            let stopped = DispatchSemaphore(value: 0)
            Task {
                await restServer.shutdown()
                stopped.signal()
            }
            stopped.wait()
        }
        node.shutdown()
        events.cancel()
        unlink(folder + "/control.sock")
        withExtendedLifetime((signals, reload)) {}
        return 0
    }

    /// SIGHUP reads the TLS files again — the device port's certificate chain, key and trusted client CAs, and the
    /// REST API's certificate and key — for new connections; established links, sessions and HTTPS connections keep
    /// theirs. Nothing else is reloaded (every other setting needs a restart, which a drain makes invisible to
    /// devices). A file that cannot be loaded is logged and the previous identity kept.
    /// Says what happened as a `reloaded` or `reload_failed` event.
    static func reloadOnHangUp(
        node: SupporterNode, rest: RESTServer?, tls: TLSConfiguration, restIdentity: RESTServerConfiguration?,
        console: Console, logger: NodeLogger, serviceManager: ServiceManagerNotifier
    ) -> DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP)
        source.setEventHandler {
            serviceManager.notify("RELOADING=1")
            defer { serviceManager.notify("READY=1") }
            // The device port first; the REST API (the same files) only once the device port has taken them, so a
            // bad file changes nothing anywhere.
            var failure: String?
            do throws(SupporterNodeError) { try node.reloadTLS(tls) } catch { failure = "device port: \(error.description)" }
            if failure == nil, let rest, let chain = restIdentity?.certificateChain, let key = restIdentity?.privateKey {
                do throws(TransportError) { try rest.reloadIdentity(certificateChain: chain, privateKey: key) } catch {
                    failure = "REST API: \(Explain.transport(error))"
                }
            }
            if let failure {
                logger.log(.error, "SIGHUP: the TLS files could not be loaded, so the previous ones stay in use: \(failure)")
                console.event(
                    "reload_failed", "SIGHUP: kept the previous certificate and key: \(failure)", ["error": failure])
            } else {
                logger.log(.info, "SIGHUP: certificate and key reloaded; new connections use them")
                console.event("reloaded", "SIGHUP: certificate and key reloaded; new connections use them", [:])
            }
        }
        source.resume()
        return source
    }

    /// Sends `WATCHDOG=1` every ``ServiceManagerNotifier/watchdogInterval`` once every loop of the node has answered
    /// (a stuck loop starves it, and systemd restarts the node after `WatchdogSec=`); nil without a watchdog.
    static func feedWatchdog(_ serviceManager: ServiceManagerNotifier, node: SupporterNode) -> DispatchSourceTimer? {
        guard serviceManager.isActive, let interval = serviceManager.watchdogInterval else { return nil }
        let timer = DispatchSource.makeTimerSource()
        let (seconds, attoseconds) = interval.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now(), repeating: .nanoseconds(max(nanoseconds, 1_000_000)))
        timer.setEventHandler { node.whenLoopsRespond { serviceManager.notify("WATCHDOG=1", waiting: false) } }
        timer.resume()
        return timer
    }

    /// How long a stop (SIGTERM, SIGINT, `quit`) may take: past it the process exits with status 1 whatever its
    /// loops, its store or its REST API still hold. Every acknowledged event is durable before it was acknowledged, so
    /// what such an exit loses is only what nobody was told of yet (SPEC §13.1).
    static let stopLimit: Duration = .seconds(4)

    /// Starts the clock on a stop: signal the returned semaphore when the stop is done; if it is not by
    /// ``stopLimit``, the process says so on standard error and exits with status 1.
    static func armStopDeadline(_ console: Console) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let seconds = Double(stopLimit.components.seconds)
            if done.wait(timeout: .now() + seconds) == .timedOut {
                console.error("the node did not stop within \(stopLimit); exiting without waiting for it")
                _exit(1)  // not exit(): no atexit work while the stuck threads still run
            }
        }
        thread.name = "rsup-stop-deadline"
        thread.start()
        return done
    }

    /// Characters of a chat text printed in its event line (SPEC §13.1: output stays bounded per message).
    static let chatPreviewLength = 80

    static func report(_ event: SupporterNodeEvent, _ console: Console) {
        let code = event.code
        let device = event.deviceName.map { " (\($0))" } ?? ""
        switch event.event {
        case .deviceOnline:
            console.event("device_online", "\(code): device online\(device)", ["code": code, "device": event.deviceName ?? ""])
        case .registrationRefused(_, let reason):
            console.event("registration_refused", "\(code): registration refused: \(reason)", ["code": code, "reason": "\(reason)"])
        case .connected(let id):
            console.event("connected", "\(code): supporter connected (request \(id))", ["code": code, "request_id": Int(id)])
        case .rejected(let id, let reason):
            console.event("rejected", "\(code): request \(id) rejected (\(reason))", ["code": code, "request_id": Int(id), "reason": "\(reason)"])
        case .requestTimedOut(let id):
            console.event("request_timed_out", "\(code): request \(id) timed out", ["code": code, "request_id": Int(id)])
        case .ended(let reason, let text):
            console.event("ended", "\(code): session ended (\(reason))" + (text.map { ": \($0)" } ?? ""), ["code": code, "reason": "\(reason)"])
        case .voipState(let state, let text):
            console.event("voip", "\(code): VoIP \(state)" + (text.map { ": \($0)" } ?? ""), ["code": code, "state": "\(state)"])
        case .sessionError(let reason, let feature, let text):
            console.event(
                "session_error", "\(code): session error \(reason)" + (text.map { ": \($0)" } ?? ""),
                ["code": code, "reason": "\(reason)", "feature": feature.map { "\($0)" } ?? ""])
        case .featuresDenied(let features):
            let names = features.map { "\($0.id)" }.joined(separator: ",")
            console.event("features_denied", "\(code): denied by the code's rules: \(names)", ["code": code, "features": names])
        case .grantInEffect(let features):
            let names = features.isEmpty ? "none" : features.map { "\($0.id)" }.joined(separator: ",")
            console.event("granted", "\(code): granted: \(names)", ["code": code, "features": names])
        case .featureGranted(let feature):
            console.event("feature_granted", "\(code): \(feature) granted", ["code": code, "feature": "\(feature)"])
        case .featureRefused(let feature, let reason):
            console.event(
                "feature_refused", "\(code): \(feature) refused (\(reason))",
                ["code": code, "feature": "\(feature)", "reason": "\(reason)"])
        case .featureRevoked(let feature):
            console.event("feature_revoked", "\(code): \(feature) revoked by the device", ["code": code, "feature": "\(feature)"])
        case .messageReceived(let delivery):
            switch delivery {
            case .chat(let id, let text):
                // A bounded line per message, whatever the device sends (a chat text may hold 4,096 bytes): its first
                // characters, its size and its id.
                let preview = String(text.prefix(Self.chatPreviewLength))
                let truncated = preview.count < text.count
                console.event(
                    "chat", "\(code): device: \(preview)\(truncated ? "…" : "") (\(text.utf8.count) bytes, message \(id))",
                    ["code": code, "message_id": Int(id), "text": preview, "truncated": truncated, "bytes": text.utf8.count])
            case .application(let id, let type, let body):
                console.event(
                    "app_message", "\(code): application message (\(type), \(body.count) bytes)",
                    ["code": code, "message_id": Int(id), "content_type": type, "bytes": body.count])
            case .fileProgress(let transfer, let name, let received, let total):
                console.event(
                    "file_progress", "\(code): receiving '\(name)': \(received) of \(total) bytes",
                    ["code": code, "transfer_id": Int(transfer), "received": Int(received), "total": Int(total)])
            case .file(let transfer, let name, _, let bytes):
                console.event(
                    "file", "\(code): received file '\(name)' (\(bytes.count) bytes)",
                    ["code": code, "transfer_id": Int(transfer), "name": name, "bytes": bytes.count])
            }
        case .messageDelivered(let id):
            console.event("delivered", "\(code): message \(id) delivered", ["code": code, "message_id": Int(id)])
        case .messageRefused(let id, let reason, _):
            console.event(
                "message_refused", "\(code): message \(id) refused (\(reason))",
                ["code": code, "message_id": Int(id), "reason": "\(reason)"])
        case .fileDelivered(let transfer):
            console.event(
                "file_delivered", "\(code): file \(transfer) delivered", ["code": code, "transfer_id": Int(transfer)])
        case .fileRefused(let transfer, let reason):
            console.event(
                "file_refused", "\(code): file \(transfer) refused (\(reason))",
                ["code": code, "transfer_id": Int(transfer), "reason": "\(reason)"])
        case .messagesUndelivered(let lost):
            let ids = lost.sent + Array(repeating: 0, count: lost.unsent)
            console.event("undelivered", "\(code): \(ids.count) message(s) not delivered", ["code": code, "count": ids.count])
        case .reconnecting:
            console.event("reconnecting", "\(code): the device's link was lost; waiting for it to resume", ["code": code])
        case .resumed:
            console.event("resumed", "\(code): the device resumed", ["code": code])
        }
    }
}

extension SupporterCommands {
    /// Runs a command from a plain thread (the control socket's, the console's) and waits for its reply.
    func runBlocking(_ request: [String: Any]) -> [String: Any] {
        let reply = Reply()
        let done = DispatchSemaphore(value: 0)
        let box = SendableRequest(request)
        Task {
            reply.set(await run(box.value))
            done.signal()
        }
        done.wait()
        return reply.get()
    }
}

/// Carries a JSON request into a task. Safe: the dictionary is only read there, after the handing thread let go.
struct SendableRequest: @unchecked Sendable {
    let value: [String: Any]
    init(_ value: [String: Any]) { self.value = value }
}

/// A reply handed from a task back to the waiting control thread.
final class Reply: @unchecked Sendable {
    // @unchecked: written once by the task before `done.signal()`, read once after `done.wait()`.
    private var value: [String: Any] = [:]
    func set(_ value: [String: Any]) { self.value = value }
    func get() -> [String: Any] { value }
}

/// The console on a terminal: one command per line.
struct InteractiveConsole {
    let commands: SupporterCommands
    let console: Console

    static let help = """
        commands: create [remote|assist] [description…] · list · connect CODE LOGIN [screen|assist] ·
                  cancel CODE · end CODE · close CODE · say CODE TEXT · send CODE FILE · ask CODE FEATURE ·
                  token · help · quit
        """

    func run(onQuit: @escaping () -> Void) {
        console.line(Self.help)
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            guard let first = words.first else { continue }
            var request: [String: Any] = ["command": first]
            switch first {
            case "quit", "exit":
                onQuit()
                return
            case "help":
                console.line(Self.help)
                continue
            case "create":
                if words.count > 1 { request["type"] = words[1] }
                if words.count > 2 { request["description"] = words[2...].joined(separator: " ") }
            case "connect":
                guard words.count >= 3 else {
                    console.error("connect CODE LOGIN [screen|assist]   (LOGIN: a supporter account, see rsup-supporter user add)")
                    continue
                }
                request["code"] = words[1]
                request["as"] = words[2]
                if words.count > 3 { request["type"] = words[3] }
            case "say", "send", "ask":
                guard words.count >= 3 else {
                    console.error("\(first) CODE \(first == "say" ? "TEXT" : first == "send" ? "FILE" : "FEATURE")")
                    continue
                }
                request["code"] = words[1]
                let rest = words[2...].joined(separator: " ")
                request[first == "say" ? "text" : first == "send" ? "file" : "feature"] = rest
            case "cancel", "end", "close":
                guard words.count == 2 else {
                    console.error("\(first) CODE")
                    continue
                }
                request["code"] = words[1]
            default:
                break
            }
            let answer = commands.runBlocking(request)
            if answer["ok"] as? Bool == true {
                var shown = answer
                shown["ok"] = nil
                console.line(escaping: shown.isEmpty ? "ok" : Console.encode(shown))
            } else {
                console.error(answer["error"] as? String ?? "failed")
            }
        }
        onQuit()
    }
}
