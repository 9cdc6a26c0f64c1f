#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import DeviceNode
import SupportRuntime
import SupportSession
import SupportUtilities
import SupportVocabulary

/// The `chat` group (issue 24): a chat line from the REST API to the device, with 1,000 sessions active, measured the
/// way a user sees it. The node is a `rsup-supporter serve --api-listen` process of its own; a second process (this
/// executable again, hidden subcommand `chat-devices`) holds the devices (one `DeviceNode` each, on two shared loops)
/// and is also the REST client: it signs in as a supporter, connects every code with `chat`, then sends one line at a
/// time (`POST /sessions/{code}/chat`, over one kept-alive HTTPS connection) to the sessions in turn and stamps when
/// the device's delegate hands the line to the app. Beside it, in the same run: `GET /me` on the same connection (the
/// API's floor) and the 202 of the chat itself.
enum ChatBenchmark {
    static let group = BenchmarkGroup(
        name: "chat",
        summary: "chat from the REST API to the device, 1,000 active sessions, node as its own process: p50/p99",
        run: run)
    static let subcommand = "chat-devices"
    static let password = "chat-benchmark-password"

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        let sessions = ClusterBenchmark.environmentInteger("RSUP_CHAT_SESSIONS", default: 1_000, minimum: 1)
        let messages = ClusterBenchmark.environmentInteger("RSUP_CHAT_MESSAGES", default: 2_000, minimum: 10)
        print(
            "== chat: REST → device with \(Format.grouped(sessions)) sessions active, \(Format.grouped(messages)) lines "
                + "(RSUP_CHAT_SESSIONS, RSUP_CHAT_MESSAGES) ==")
        guard let binary = ServeProcess.binary() else {
            print("   chat: no rsup-supporter next to this executable; build it first (swift build -c release); skipped\n")
            return
        }
        _ = ProcessInfoLite.raiseFileLimit()
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   chat: cannot make certificates; skipped\n")
            return
        }
        defer {
            if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() }
        }
        guard
            let node = ServeProcess(
                binary: binary, data: directory + "/chat-node", port: 0, certificates: directory,
                extra: ["--api-listen", "127.0.0.1:0", "--keepalive", "120s"]),
            let apiPort = node.apiPort
        else {
            print("   chat: the node did not start (its log: \(directory)/chat-node.out.err); skipped\n")
            return
        }
        defer { node.terminate() }
        guard let token = node.control(["command": "token"])?["token"] as? String,
            node.control([
                "command": "user-add", "login": "bench", "display-name": "Bench", "role": "supporter", "password": password,
            ]) != nil
        else {
            print("   chat: no device token or account could be made; skipped\n")
            return
        }
        var codes: [String] = []
        for _ in 0..<sessions {
            guard let code = RollingRestartBenchmark.create(on: node) else {
                print("   chat: cannot create the codes; skipped\n")
                return
            }
            codes.append(code)
        }
        let codesFile = directory + "/chat-codes.txt"
        guard NodesBenchmark.writeLines(codes, to: codesFile),
            let child = ChildProcess(
                CommandLine.arguments[0],
                ["Benchmarks", subcommand, "--port", "\(node.port)", "--api-port", "\(apiPort)", "--token", token,
                 "--codes", codesFile, "--ca", directory + "/ca.pem", "--messages", "\(messages)"],
                captureOutput: true)
        else {
            print("   chat: cannot start the device process; skipped\n")
            return
        }
        let ready = child.readLine(timeout: .seconds(600)) ?? "(nothing)"
        let result = child.readLine(timeout: .seconds(900)) ?? "(nothing)"
        child.signal(SIGKILL)
        _ = child.wait()
        let fields = NodesBenchmark.parseFields(result)
        guard result.hasPrefix("result") else {
            print("   chat: \(ready); \(result)\n")
            return
        }
        let readyFields = NodesBenchmark.parseFields(ready)
        print("sessions active: \(readyFields["active"] ?? "?") of \(sessions) (\(readyFields["seconds"] ?? "?") s to connect them all)")
        let titles = ["measure (same run, one request at a time)", "n", "p50 µs", "p90 µs", "p99 µs", "max µs"]
        var table = TablePrinter(
            title: "chat: REST → device, \(readyFields["active"] ?? "?") sessions active, the node its own process",
            columns: titles.enumerated().map { .init(title: $1, alignment: $0 == 0 ? .left : .right) })
        for (label, key) in [
            ("GET /me (the API's floor)", "me"), ("POST /chat → 202", "answer"),
            ("POST /chat → the app has the line", "chat"),
        ] {
            table.addRow([
                label, fields["\(key)_n"] ?? "-", fields["\(key)_p50"] ?? "-", fields["\(key)_p90"] ?? "-",
                fields["\(key)_p99"] ?? "-", fields["\(key)_max"] ?? "-",
            ])
        }
        table.print()
        print("lines lost: \(fields["lost"] ?? "?"); refused: \(fields["refused"] ?? "?") \(fields["why"] ?? "")\n")
    }

    // MARK: the device process

    /// `chat-devices --port P --api-port A --token T --codes FILE --ca PATH --messages M`: joins every code, answers
    /// `ready active=N seconds=S` once each is in a session with chat granted, then measures and answers
    /// `result me_p50=… chat_p99=… lost=L refused=R`.
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0, apiPort: UInt16 = 0, messages = 0
        var token = "", codesPath = "", caPath = ""
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--api-port": apiPort = UInt16(value) ?? 0
            case "--token": token = value
            case "--codes": codesPath = value
            case "--ca": caPath = value
            case "--messages": messages = Int(value) ?? 0
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        let codes = NodesBenchmark.readLines(codesPath)
        let tls = TLSConfiguration.makeClientConfiguration(trustRoots: .file(caPath), serverName: "localhost")
        let context: TLSContext
        var loops: [EventLoop] = []
        do throws(TransportError) {
            context = try TLSContext(tls)
            for index in 0..<2 { loops.append(try EventLoop.start(name: "chat-device-\(index)")) }
        } catch {
            writeStandardOutput("error " + error.description.replacingOccurrences(of: " ", with: "_"))
            exit(1)
        }
        let delegate = ChatDelegate(slots: DispatchSemaphore(value: 64))
        var nodes: [DeviceNode] = []
        var sessions: [DeviceSession] = []
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .chat)
        for (index, code) in codes.enumerated() {
            delegate.slots.wait()
            var configuration = DeviceConfiguration(
                host: "127.0.0.1", port: port, tls: tls, apiToken: token, deviceName: "chat-\(index)")
            configuration.eventLoop = loops[index % loops.count]
            configuration.capabilities = [Feature(.screenShare), Feature(.chat)]
            configuration.accessRules = rules
            configuration.keepaliveInterval = .seconds(120)
            do {
                let node = try DeviceNode(configuration: configuration, tlsContext: context)
                nodes.append(node)
                sessions.append(try node.connect(toSessionCode: code, delegate: delegate))
            } catch {
                delegate.failedToJoin()
            }
        }
        for _ in 0..<64 { delegate.slots.wait() }
        // Sign in as the supporter; every request below rides this one kept-alive connection.
        guard let client = RESTBenchClient(port: apiPort, from: "127.0.0.1"),
            let login = client.request(
                "POST", "/api/v1/login", body: Array(#"{"login":"bench","password":"\#(password)"}"#.utf8)),
            login.status == 200, let cookie = login.cookie("rsup_session"),
            let csrf = (try? JSONSerialization.jsonObject(with: Data(login.body)) as? [String: Any])?["csrf_token"]
                as? String
        else {
            writeStandardOutput("error the supporter could not sign in")
            exit(1)
        }
        let headers = [
            ("Cookie", "rsup_session=\(cookie)"), ("X-CSRF-Token", csrf),
        ]
        let started = Deadline.now()
        var connectRefusal = ""
        for code in codes {
            let answer = client.request(
                "POST", "/api/v1/sessions/\(code)/connect", headers: headers,
                body: Array(#"{"connection_type":"screen_share","features":["chat"]}"#.utf8))
            if answer?.status != 202, connectRefusal.isEmpty {
                connectRefusal = "\(answer?.status ?? 0) " + String(decoding: answer?.body ?? [], as: UTF8.self)
            }
        }
        let deadline = Deadline.now() + .seconds(120)
        while delegate.active.load(ordering: .relaxed) < codes.count, Deadline.now() < deadline {
            ProcessInfoLite.sleep(.milliseconds(20))
        }
        let active = delegate.active.load(ordering: .relaxed)
        writeStandardOutput(
            "ready active=\(active) seconds=\(Format.fixed(Deadline.now().since(started).seconds, 1))"
                + (connectRefusal.isEmpty ? "" : " refused=" + connectRefusal.replacingOccurrences(of: " ", with: "_")))

        var floor = NodesBenchmark.Latencies()
        var answered = NodesBenchmark.Latencies()
        var delivered = NodesBenchmark.Latencies()
        var lost = 0
        var refused = 0
        var firstRefusal = ""
        for index in 0..<messages {
            if index % 4 == 0 {
                let before = Deadline.now()
                if client.request("GET", "/api/v1/me", headers: headers)?.status == 200 { floor.add(Deadline.now().since(before)) }
            }
            let code = codes[index % codes.count]
            let text = "line \(index)"
            delegate.expect(text)
            let sent = Deadline.now()
            let answer = client.request(
                "POST", "/api/v1/sessions/\(code)/chat", headers: headers, body: Array(#"{"text":"\#(text)"}"#.utf8))
            guard answer?.status == 202 else {
                if refused == 0 {
                    firstRefusal = "\(answer?.status ?? 0) " + String(decoding: answer?.body ?? [], as: UTF8.self)
                }
                refused += 1
                continue
            }
            answered.add(Deadline.now().since(sent))
            guard let arrived = delegate.wait(for: text, timeout: .seconds(5)) else {
                lost += 1
                continue
            }
            delivered.add(nanoseconds: Int64(arrived) - Int64(sent.nanoseconds))
        }
        func summary(_ name: String, _ values: NodesBenchmark.Latencies) -> String {
            "\(name)_n=\(values.microseconds.count) \(name)_p50=\(Format.fixed(values.percentile(50), 0)) "
                + "\(name)_p90=\(Format.fixed(values.percentile(90), 0)) \(name)_p99=\(Format.fixed(values.percentile(99), 0)) "
                + "\(name)_max=\(Format.fixed(values.maximum, 0))"
        }
        writeStandardOutput(
            "result \(summary("me", floor)) \(summary("answer", answered)) \(summary("chat", delivered)) lost=\(lost) refused=\(refused) why=" + firstRefusal.replacingOccurrences(of: " ", with: "_"))
        withExtendedLifetime((nodes, sessions)) {}
        _exit(0)
    }
}

/// The device process's delegate, shared by every session: counts sessions online (releasing a dial slot) and active
/// (chat granted), allows every request, and stamps the awaited chat line when the app gets it.
private final class ChatDelegate: DeviceSessionDelegate {
    let slots: DispatchSemaphore
    let active = Atomic<Int>(0)
    private let arrivals = DispatchSemaphore(value: 0)
    private struct State {
        var onlineOnce: Set<String> = []
        var awaited: String?
        var arrivedAt: UInt64?
    }
    private let state = Mutex(State())

    init(slots: DispatchSemaphore) { self.slots = slots }

    func failedToJoin() { slots.signal() }

    /// The next line to stamp.
    func expect(_ text: String) { state.withLock { $0 = State(onlineOnce: $0.onlineOnce, awaited: text) } }

    /// When `text` reached the app (``Deadline`` nanoseconds), or nil after `timeout`.
    func wait(for text: String, timeout: Duration) -> UInt64? {
        let until = Deadline.now() + timeout
        while Deadline.now() < until {
            if let stamp = state.withLock({ $0.awaited == text ? $0.arrivedAt : nil }) { return stamp }
            _ = arrivals.wait(timeout: .now() + .milliseconds(50))
        }
        return nil
    }

    func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {
        let first = state.withLock { $0.onlineOnce.insert(session.code).inserted }
        if first { slots.signal() }
    }

    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) { request.allow() }

    func session(_ session: DeviceSession, didStartWith details: SessionDetails) {
        if details.grantedFeatures?.contains(.chat) == true { active.wrappingAdd(1, ordering: .relaxed) }
    }

    func session(_ session: DeviceSession, didReceive message: MessageChannel.Delivery) {
        guard case .chat(_, let text) = message else { return }
        let now = Deadline.now().nanoseconds
        let matched = state.withLock { state -> Bool in
            guard state.awaited == text, state.arrivedAt == nil else { return false }
            state.arrivedAt = now
            return true
        }
        if matched { arrivals.signal() }
    }

    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {
        let joined = state.withLock { $0.onlineOnce.contains(session.code) }
        if !joined { failedToJoin() }
    }
}
