#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import SupporterNode
import SupporterREST
import SupportWire
import SupporterCore
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import DeviceNode
import SupportPostgres
import SupportVocabulary

/// The `abuse` group: how long a legitimate device takes to register (TCP + TLS + HELLO + REGISTER → REGISTER_RESULT
/// success) while the node is being abused, in four conditions, on one node:
///
/// - quiet: nothing else;
/// - REGISTER spam: one connection at a time sends 50 REGISTERs with a bad token, and reconnects when closed;
/// - idle after HELLO: 2,000 TLS connections from one address attempted, each sending HELLO and nothing else;
/// - idle REST: 1,000 TCP connections to the REST API's port that never start TLS.
///
/// The node (the code under test) runs in this process with a file-backed store. Attackers and the legitimate
/// device live in a child process (this executable again, hidden subcommand `abuse-load`); attackers connect from
/// 127.0.0.2, the legitimate device from 127.0.0.1.
enum AbuseBenchmark {
    static let group = BenchmarkGroup(
        name: "abuse",
        summary: "supporter node under abuse: legitimate registration p50/p99 beside REGISTER spam and idle connections",
        run: run)

    static let subcommand = "abuse-load"
    static let registrations = 1_000
    static let warmUp = 20
    static let attacker = "127.0.0.2"
    /// The idle-connection attackers use addresses of their own: the spam condition leaves 127.0.0.2 blocked (and
    /// throttled at accept, SPEC §13.1) for minutes, which would hide the per-address cap this condition measures.
    static let idleAttacker = "127.0.0.3"
    static let idleAttempts = 2_000
    static let restIdle = 1_000
    static let spamBurst = 50

    enum Condition: String, CaseIterable {
        case quiet
        case spam = "register-spam"
        case idle = "idle-after-hello"
        case rest = "idle-rest-tcp"
        case pipeline = "pipelined-registers"
        case sessionErrors = "session-error-flood"
        case devicePool = "device-pool-holding"
        case chatFlood = "chat-flood"
        case fileSenders = "file-senders"

        var label: String {
            switch self {
            case .quiet: "quiet"
            case .spam: "1 REGISTER-spam conn (reconnecting)"
            case .idle: "\(Format.grouped(AbuseBenchmark.idleAttempts)) post-HELLO idle, 1 address"
            case .rest: "\(Format.grouped(AbuseBenchmark.restIdle)) idle TCP to REST port"
            case .pipeline: "1 conn pipelining \(Format.grouped(AbuseBenchmark.pipelined)) REGISTERs"
            case .sessionErrors: "SESSION_ERROR + VOIP_STATE flood, in session"
            case .devicePool: "\(AbuseBenchmark.poolSources) addresses × 64 post-HELLO idle"
            case .chatFlood: "1 device in session, 4 KB chats at full speed"
            case .fileSenders: "3 devices in session, 2 × 16 MiB files each"
            }
        }

        /// Conditions whose attackers are devices in an active session (the node is asked to connect to them).
        var needsSessions: Int {
            switch self {
            case .chatFlood: 1
            case .fileSenders: 3
            case .sessionErrors: 1
            default: 0
            }
        }
    }

    /// REGISTERs the pipelining attacker writes on its one connection (13 MB, as in the audit).
    static let pipelined = 228_000
    static let pipelineAttacker = "127.0.0.4"
    /// Sources holding the device port's pool of unregistered connections (4,096): 70 × 64 = 4,480.
    static let poolSources = 70
    static let sessionAttacker = "127.0.0.5"

    struct Row {
        var condition: Condition
        var measured = 0
        var succeeded = 0
        var p50 = Double.nan
        var p99 = Double.nan
        var maximum = Double.nan
        var firstError: String?
        var attack = "-"
        var auditRows = 0
        var rssStartKiB = 0
        var rssPeakKiB = 0
        var rssEndKiB = 0
        var cpuSeconds = Double.nan
        var jobsApplied = 0
        var jobsFailed = 0
        var transactions = 0
        var largestBatch = 0
        var queuedPeak = 0
        var seconds = Double.nan
        var error: String?
    }

    // MARK: the group (the node's process)

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        print("== abuse: legitimate registrations on a supporter node under abuse (load in a child process) ==")
        let fileLimit = ProcessInfoLite.raiseFileLimit()
        guard let target = AbuseTarget.start(group: "abuse", loopCount: 2) else { return }
        defer { target.stop() }
        let (node, directory, configuration) = (target.node, target.directory, target.configuration)
        let restPort = target.rest.port
        guard let port = node.port, let token = try? node.issueAPIToken() else {
            print("   abuse: the node has no port or cannot issue a token\n")
            return
        }
        print(
            "node: 2 loops, file-backed SQLite store (WAL, synchronous=NORMAL), default CodeRegistry.Policy,"
                + " registration deadline \(configuration.registrationDeadline); RLIMIT_NOFILE soft = \(fileLimit);"
                + " \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPU(s)")
        print()

        var lastAuditID = (try? node.auditEvents(limit: 1_000_000).last?.id) ?? 0
        var rows: [Row] = []
        // RSUP_ABUSE_CONDITIONS=quiet,file-senders runs only those (quiet always comes first: the ratios need it).
        let selected = getenv("RSUP_ABUSE_CONDITIONS").map {
            Set(String(cString: $0).split(separator: ",").map(String.init) + ["quiet"])
        }
        for condition in Condition.allCases where selected?.contains(condition.rawValue) ?? true {
            var row = Row(condition: condition)
            let count = warmUp + registrations
            let created: [String]? = blockingAwait {
                var codes: [String] = []
                for _ in 0..<count {
                    guard let info = try? await node.createCode(type: .remoteSupport) else { return nil }
                    codes.append(info.code)
                }
                return codes
            }
            guard let codes = created else {
                row.error = "cannot create codes"
                rows.append(row)
                continue
            }
            lastAuditID = (try? node.auditEvents(limit: 1_000_000, afterID: lastAuditID).last?.id) ?? lastAuditID
            let codesFile = directory + "/codes-\(condition.rawValue).txt"
            guard NodesBenchmark.writeLines(codes, to: codesFile) else {
                row.error = "cannot write \(codesFile)"
                rows.append(row)
                continue
            }
            let attackCodes: [String] = blockingAwait {
                var codes: [String] = []
                for _ in 0..<condition.needsSessions {
                    if let info = try? await node.createCode(type: .remoteSupport) { codes.append(info.code) }
                }
                return codes
            }
            measure(
                &row, node: node, port: port, restPort: restPort, token: token, codesFile: codesFile,
                attackCodes: attackCodes)
            // What the condition left behind: the device_offline rows of the last registrations, refusals.
            let settle = ContinuousClock.now + .seconds(5)
            repeat { ProcessInfoLite.sleep(.milliseconds(200)) } while node.storeStatistics.queued > 0
                && ContinuousClock.now < settle
            let added = (try? node.auditEvents(limit: 1_000_000, afterID: lastAuditID)) ?? []
            row.auditRows = added.count
            lastAuditID = added.last?.id ?? lastAuditID
            rows.append(row)
        }
        printTable(rows)
    }

    /// One condition: starts the child, samples this process's RSS and the writer's queue until the child reports,
    /// and fills `row`.
    static func measure(
        _ row: inout Row, node: SupporterNode, port: UInt16, restPort: UInt16, token: String, codesFile: String,
        attackCodes: [String]
    ) {
        let before = node.storeStatistics
        row.rssStartKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        row.rssPeakKiB = row.rssStartKiB
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        defer {
            row.cpuSeconds = ProcessInfoLite.cpuSeconds() - cpuBefore
            row.rssEndKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        }
        let started = ContinuousClock.now
        guard
            let child = ChildProcess(
                "/proc/self/exe",
                ["Benchmarks", subcommand, "--port", "\(port)", "--rest-port", "\(restPort)", "--token", token,
                 "--codes", codesFile, "--condition", row.condition.rawValue, "--warm-up", "\(warmUp)",
                 "--attack-codes", attackCodes.joined(separator: ",")],
                captureOutput: true, pipeInput: true, inheritStandardError: true)
        else {
            row.error = "cannot start the load child process"
            return
        }
        defer {
            child.closeInput()
            child.wait()
        }
        let deadline = ContinuousClock.now + .seconds(120)
        var result: [String: String]?
        while result == nil, ContinuousClock.now < deadline {
            if let line = child.readLine(timeout: .milliseconds(50)) {
                if line.hasPrefix("result") { result = NodesBenchmark.parseFields(line) }
                if line.hasPrefix("attack ") { row.attack = String(line.dropFirst("attack ".count)) }
                if line.hasPrefix("attack-end ") { row.attack = String(line.dropFirst("attack-end ".count)) }
                if line.hasPrefix("request ") {
                    // The attacker devices are online: a supporter connects to each, with chat and file_share.
                    let codes = line.dropFirst("request ".count).split(separator: ",").map(String.init)
                    blockingAwait {
                        for code in codes {
                            _ = try? await node.requestConnection(
                                code: code, supporterName: "Bench", type: .screenShare,
                                features: [Feature(.chat), Feature(.fileShare)])
                        }
                    }
                }
            } else if child.exitStatus != nil {
                break
            }
            row.rssPeakKiB = max(row.rssPeakKiB, ProcessInfoLite.statusKiB("VmRSS") ?? 0)
            row.queuedPeak = max(row.queuedPeak, node.storeStatistics.queued)
        }
        row.seconds = started.duration(to: .now).seconds
        guard let result else {
            row.error = "the load child did not report a result"
            return
        }
        row.measured = Int(result["n"] ?? "") ?? 0
        row.succeeded = Int(result["ok"] ?? "") ?? 0
        row.p50 = Double(result["p50_us"] ?? "") ?? .nan
        row.p99 = Double(result["p99_us"] ?? "") ?? .nan
        row.maximum = Double(result["max_us"] ?? "") ?? .nan
        row.firstError = result["error"]
        let after = node.storeStatistics
        row.jobsApplied = after.applied - before.applied
        row.jobsFailed = after.failed - before.failed
        row.transactions = after.transactions - before.transactions
        row.largestBatch = after.largestBatch
    }

    static func printTable(_ rows: [Row]) {
        func ms(_ microseconds: Double) -> String { Format.fixed(microseconds / 1000, 2) }
        var table = TablePrinter(
            title: "legitimate registration latency (TCP + TLS 1.3 + HELLO + REGISTER → REGISTER_RESULT success), "
                + "\(registrations) per condition",
            columns: [
                .init(title: "condition", alignment: .left),
                .init(title: "ok", alignment: .right),
                .init(title: "p50 ms", alignment: .right),
                .init(title: "p99 ms", alignment: .right),
                .init(title: "p99 ÷ quiet", alignment: .right),
                .init(title: "max ms", alignment: .right),
                .init(title: "audit rows +", alignment: .right),
                .init(title: "attacker rows", alignment: .right),
                .init(title: "RSS MiB start/peak/end", alignment: .right),
                .init(title: "node CPU s", alignment: .right),
                .init(title: "writer jobs +", alignment: .right),
                .init(title: "txns +", alignment: .right),
                .init(title: "failed +", alignment: .right),
                .init(title: "max batch", alignment: .right),
                .init(title: "max queued", alignment: .right),
                .init(title: "s", alignment: .right),
                .init(title: "attacker saw", alignment: .left),
            ])
        let quiet = rows.first { $0.condition == .quiet }?.p99 ?? .nan
        for row in rows {
            table.addRow([
                row.condition.label, "\(row.succeeded)/\(row.measured)", ms(row.p50), ms(row.p99),
                Format.fixed(row.p99 / quiet, 2), ms(row.maximum),
                Format.grouped(row.auditRows),
                // Each legitimate registration writes two rows (device_online, device_offline); a session three more.
                Format.grouped(row.auditRows - 2 * (warmUp + registrations)),
                Format.fixed(Double(row.rssStartKiB) / 1024, 1) + " / " + Format.fixed(Double(row.rssPeakKiB) / 1024, 1)
                    + " / " + Format.fixed(Double(row.rssEndKiB) / 1024, 1),
                Format.fixed(row.cpuSeconds, 2),
                Format.grouped(row.jobsApplied), Format.grouped(row.transactions), Format.grouped(row.jobsFailed),
                Format.grouped(row.largestBatch), Format.grouped(row.queuedPeak), Format.fixed(row.seconds, 1),
                row.attack,
            ])
        }
        table.print()
        for row in rows {
            if let error = row.error { print("   \(row.condition.label): \(error)") }
            if let error = row.firstError { print("   \(row.condition.label): first failed registration: \(error)") }
        }
        print(
            """
               Method: one node (this process) serves the conditions in turn. Per condition a fresh child
               (`/proc/self/exe \(subcommand)`) starts the attack from \(attacker) and prints what it got, then
               registers \(warmUp) unmeasured + \(registrations) measured devices one after another from 127.0.0.1,
               each on its own code with a valid token: raw OpenSSL client, TCP connect → TLS → HELLO / HELLO_ACK →
               REGISTER → REGISTER_RESULT success (timed), then close_notify and close.
               REGISTER spam: one thread, one connection at a time, \(spamBurst) REGISTERs with a bad token in one
               write, read until the node closes it, reconnect at once.
               Idle after HELLO: \(Format.grouped(idleAttempts)) TLS + HELLO attempts before the measurement; the
               admitted ones are held open and silent (keepalive 120 s, the cap; deadline not reached during the run);
               the idle attackers connect from 127.0.0.3.
               Idle REST: \(Format.grouped(restIdle)) plain TCP connections to the REST port, never a TLS byte.
               Pipelining: one connection from \(pipelineAttacker) writes \(Format.grouped(pipelined)) REGISTERs
               (bad token) without reading. Pool holding: \(poolSources) addresses (127.0.1.x) × 64 TLS + HELLO,
               held silent. In-session floods (from \(sessionAttacker), valid token, the node connects to them
               with chat and file_share): SESSION_ERROR alternating with VOIP_STATE without reading; 4,000-byte
               chats 16 at a time, each batch after its acks; three devices sending two 16 MiB files each.
               attacker rows: audit rows + less the 2 of each legitimate registration.
               audit rows +: rows the condition added (2 per legitimate registration, device_online and
               device_offline, plus refusals). RSS: this process's VmRSS before the child started / highest seen
               while it ran. writer: node.storeStatistics deltas (jobs applied, transactions, failed jobs), the
               largest batch so far, the longest queue seen (sampled every 50 ms).

            """)
    }

    // MARK: the child (attackers and the legitimate device)

    /// `abuse-load --port P --rest-port R --token T --codes FILE --condition C [--warm-up W]`: starts the attack,
    /// prints `attack <what it got>`, registers the devices, stops the attack, prints `attack-end <what it got>` and
    /// `result n=… ok=… p50_us=… p99_us=… max_us=… [error=…]`, and waits for stdin to close.
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0
        var restPort: UInt16 = 0
        var token = ""
        var codesPath = ""
        var condition = Condition.quiet
        var warmUpCount = warmUp
        var attackCodes: [String] = []
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--rest-port": restPort = UInt16(value) ?? 0
            case "--token": token = value
            case "--codes": codesPath = value
            case "--condition": condition = Condition(rawValue: value) ?? .quiet
            case "--warm-up": warmUpCount = max(0, Int(value) ?? warmUp)
            case "--attack-codes": attackCodes = value.split(separator: ",").map(String.init)
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        let codes = NodesBenchmark.readLines(codesPath)
        let attack = Attack(condition: condition, port: port, restPort: restPort, token: token, codes: attackCodes)
        writeStandardOutput("attack " + attack.start())

        var latencies = NodesBenchmark.Latencies()
        var failed = 0
        var firstError: String?
        for (index, code) in codes.enumerated() {
            let outcome = register(port: port, code: code, token: token)
            guard index >= warmUpCount else { continue }
            switch outcome {
            case .success(let nanoseconds): latencies.add(nanoseconds: nanoseconds)
            case .failure(let error):
                failed += 1
                if firstError == nil { firstError = error.text }
            }
        }
        writeStandardOutput("attack-end " + attack.stop())
        var line = "result n=\(latencies.microseconds.count + failed) ok=\(latencies.microseconds.count)"
        line += " p50_us=\(Format.fixed(latencies.percentile(50), 0).withoutCommas)"
        line += " p99_us=\(Format.fixed(latencies.percentile(99), 0).withoutCommas)"
        line += " max_us=\(Format.fixed(latencies.maximum, 0).withoutCommas)"
        if let firstError { line += " error=" + firstError.spacesAsUnderscores }
        writeStandardOutput(line)
        var byte: UInt8 = 0
        while true {
            let result = read(0, &byte, 1)
            if result == 0 || (result < 0 && errno != EINTR) { break }
        }
        _exit(0)
    }

    struct RegistrationFailure: Error {
        let text: String
    }

    /// One legitimate registration from 127.0.0.1; nanoseconds from connect to REGISTER_RESULT success.
    static func register(port: UInt16, code: String, token: String) -> Result<Int64, RegistrationFailure> {
        let started = ContinuousClock.now
        guard let peer = AbuseRawPeer(port: port, from: "127.0.0.1") else {
            return .failure(RegistrationFailure(text: "connection refused or TLS failed"))
        }
        defer { peer.shut() }
        guard peer.hello(name: "legitimate") else { return .failure(RegistrationFailure(text: "no HELLO_ACK")) }
        peer.send([.register(Register(sessionCode: code, apiToken: token))])
        guard case .registerResult(let result) = peer.next(timeoutMilliseconds: 10_000) else {
            return .failure(RegistrationFailure(text: "no REGISTER_RESULT (closed or timed out)"))
        }
        guard result.reason == .success else { return .failure(RegistrationFailure(text: "refused: \(result.reason)")) }
        let elapsed = started.duration(to: .now).components
        return .success(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

/// The attacker of one condition, in the child.
private final class Attack: @unchecked Sendable {
    // @unchecked: `held` and `restSockets` are set by `start()` and read by `stop()` on the child's main thread; the
    // spam thread touches only the atomics.
    let condition: AbuseBenchmark.Condition
    let port: UInt16
    let restPort: UInt16
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let connections = Atomic<Int>(0)
    private let registers = Atomic<Int>(0)
    private let refusals = Atomic<Int>(0)
    private let rateLimitedGoAways = Atomic<Int>(0)
    private var held: [AbuseRawPeer] = []
    private var refused = 0
    private var restSockets: [Int32] = []

    let token: String
    let codes: [String]
    private let sent = Atomic<Int>(0)
    private let acknowledged = Atomic<Int>(0)
    private let running = Atomic<Int>(0)

    init(condition: AbuseBenchmark.Condition, port: UInt16, restPort: UInt16, token: String, codes: [String]) {
        self.condition = condition
        self.port = port
        self.restPort = restPort
        self.token = token
        self.codes = codes
    }

    /// Runs `body` on a thread of its own until it returns; `stop()` waits for every one.
    private func background(_ name: String, _ body: @escaping @Sendable () -> Void) {
        running.add(1, ordering: .relaxed)
        DispatchQueue(label: name).async { [self] in
            body()
            finished.signal()
        }
    }

    private func waitForBackground() {
        for _ in 0..<running.exchange(0, ordering: .relaxed) { finished.wait() }
    }

    /// Attacker devices registered on `codes` (valid token, protocol 1.1, chat and file_share), each in an active
    /// session once the parent has connected to it (it asks with `request CODE,…` on standard output).
    private func sessions() -> [AbuseRawPeer] {
        var peers: [AbuseRawPeer] = []
        for code in codes {
            guard let peer = AbuseRawPeer(port: port, from: AbuseBenchmark.sessionAttacker),
                peer.hello(name: "attacker", extensions: .all)
            else { continue }
            peer.send([
                .register(
                    Register(sessionCode: code, apiToken: token, capabilities: [Feature(.chat), Feature(.fileShare)]))
            ])
            guard case .registerResult(let result) = peer.next(timeoutMilliseconds: 10_000), result.reason == .success
            else { continue }
            peers.append(peer)
        }
        writeStandardOutput("request " + codes.joined(separator: ","))
        var active: [AbuseRawPeer] = []
        for peer in peers {
            while let message = peer.next(timeoutMilliseconds: 10_000) {
                if case .connectionRequest(let request) = message {
                    peer.send([
                        .connectionResponse(
                            ConnectionResponse(
                                requestID: request.requestID, decision: .allow,
                                grantedFeatures: [Feature(.chat), Feature(.fileShare)]))
                    ])
                }
                if case .sessionStarted = message {
                    active.append(peer)
                    break
                }
            }
        }
        return active
    }

    /// Sends what `make` builds, 16 messages at a time (the most a peer may leave unacknowledged, SPEC §15.4),
    /// reading the acknowledgements before the next 16, until stopped, closed, or `limit` messages.
    private func flood(_ peer: AbuseRawPeer, limit: Int = .max, _ make: (UInt32) -> SessionMessage) {
        var next: UInt32 = 1
        while !stopping.load(ordering: .relaxed), Int(next) <= limit {
            let batch = (0..<min(16, limit - Int(next) + 1)).map { offset in
                Message.sessionMessage(make(next + UInt32(offset)))
            }
            guard peer.send(batch) else { return }
            sent.add(batch.count, ordering: .relaxed)
            next += UInt32(batch.count)
            var acks = 0
            while acks < batch.count, let message = peer.next(timeoutMilliseconds: 10_000) {
                if case .messageAck = message { acks += 1 }
            }
            acknowledged.add(acks, ordering: .relaxed)
            if acks < batch.count { return }
        }
    }

    /// Sets the attack up; what it got.
    func start() -> String {
        switch condition {
        case .quiet:
            return "-"
        case .spam:
            DispatchQueue(label: "abuse-spam").async { [self] in
                spam()
                finished.signal()
            }
            return "spamming"
        case .idle:
            for index in 0..<AbuseBenchmark.idleAttempts {
                if let peer = AbuseRawPeer(port: port, from: AbuseBenchmark.idleAttacker), peer.hello(name: "idle-\(index)") {
                    held.append(peer)
                } else {
                    refused += 1
                }
            }
            return "admitted=\(held.count) refused=\(refused)"
        case .rest:
            for _ in 0..<AbuseBenchmark.restIdle {
                if let fd = AbuseRawPeer.tcpConnect(port: restPort, from: AbuseBenchmark.idleAttacker) {
                    restSockets.append(fd)
                }
            }
            return "open=\(restSockets.count)"
        case .pipeline:
            guard let peer = AbuseRawPeer(port: port, from: AbuseBenchmark.pipelineAttacker), peer.hello(name: "pipeliner")
            else { return "no connection" }
            background("abuse-pipeline") { [self] in
                // Never reads: writes until the node stops reading (the kernel's buffers fill) or closes.
                let chunk = Array(
                    repeating: Message.register(Register(sessionCode: "999-999-999", apiToken: "rsk_bogus_token")),
                    count: 1_000)
                while sent.load(ordering: .relaxed) < AbuseBenchmark.pipelined, !stopping.load(ordering: .relaxed) {
                    guard peer.send(chunk) else { break }
                    sent.add(chunk.count, ordering: .relaxed)
                }
                connections.add(peer.pollClosed() ? 0 : 1, ordering: .relaxed)
                peer.shut()
            }
            return "pipelining"
        case .devicePool:
            for source in 1...AbuseBenchmark.poolSources {
                for index in 0..<64 {
                    if let peer = AbuseRawPeer(port: port, from: "127.0.1.\(source)"), peer.hello(name: "hold-\(index)") {
                        held.append(peer)
                    } else {
                        refused += 1
                    }
                }
            }
            return "admitted=\(held.count) refused=\(refused)"
        case .sessionErrors:
            let peers = sessions()
            guard let peer = peers.first else { return "the attacker could not register" }
            background("abuse-session-errors") { [self] in
                let burst = (0..<200).map { index in
                    index % 2 == 0
                        ? Message.sessionError(SessionError(reason: .featureDenied, text: "flood"))
                        : Message.voipState(VoIPState(state: index % 4 == 1 ? .started : .ended, text: "flood"))
                }
                while !stopping.load(ordering: .relaxed) {
                    guard peer.send(burst) else { break }
                    sent.add(burst.count, ordering: .relaxed)
                }
                peer.shut()
            }
            return "flooding"
        case .chatFlood:
            let peers = sessions()
            guard let peer = peers.first else { return "no active session" }
            let text = String(repeating: "x", count: 4_000)
            background("abuse-chat") { [self] in
                flood(peer) { SessionMessage.chat(id: $0, text: text) }
                peer.shut()
            }
            return "chatting"
        case .fileSenders:
            let peers = sessions()
            guard !peers.isEmpty else { return "no active session" }
            // The most a part may hold in the node's default 16 KiB frames (MessageChannel.partSize).
            let part = [UInt8](repeating: 0x42, count: WireLimits.defaultMaxFrameSize - 512)
            let size = 16 * 1024 * 1024
            let parts = (size + part.count - 1) / part.count
            for (index, peer) in peers.enumerated() {
                background("abuse-file-\(index)") { [self] in
                    // Two files, one after the other, each in parts of 15.5 KiB (the last one shorter).
                    flood(peer, limit: 2 * parts) { id in
                        let file = (Int(id) - 1) / parts
                        let offset = (Int(id) - 1) % parts
                        let body = offset == parts - 1 ? Array(part[0..<(size - offset * part.count)]) : part
                        return SessionMessage(
                            messageID: id, kind: .filePart, body: body, transferID: UInt32(file + 1),
                            fileName: offset == 0 ? "big-\(file).bin" : nil, fileSize: offset == 0 ? UInt64(size) : nil,
                            offset: UInt64(offset * part.count))
                    }
                    peer.shut()
                }
            }
            return "sending from \(peers.count) devices"
        }
    }

    /// Stops the attack; what it got over the run.
    func stop() -> String {
        switch condition {
        case .quiet:
            return "-"
        case .spam:
            stopping.store(true, ordering: .relaxed)
            finished.wait()
            return "\(Format.grouped(connections.load(ordering: .relaxed))) conns, "
                + "\(Format.grouped(registers.load(ordering: .relaxed))) REGISTERs sent, "
                + "\(Format.grouped(refusals.load(ordering: .relaxed))) refusals, "
                + "\(Format.grouped(rateLimitedGoAways.load(ordering: .relaxed))) GOAWAY rate_limited"
        case .idle:
            let open = held.filter { !$0.pollClosed() }.count
            for peer in held { peer.shut() }
            return "\(held.count) admitted, \(Format.grouped(refused)) refused at once, \(open) still open at end"
        case .rest:
            var open = 0
            for fd in restSockets {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                var byte: UInt8 = 0
                let closed = poll(&descriptor, 1, 0) > 0 && recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
                if !closed { open += 1 }
                close(fd)
            }
            return "\(Format.grouped(restSockets.count)) opened, \(Format.grouped(open)) still open at end"
        case .pipeline:
            stopping.store(true, ordering: .relaxed)
            waitForBackground()
            return "\(Format.grouped(sent.load(ordering: .relaxed))) REGISTERs written before the node closed it"
                + (connections.load(ordering: .relaxed) > 0 ? " (still open)" : "")
        case .devicePool:
            let open = held.filter { !$0.pollClosed() }.count
            for peer in held { peer.shut() }
            return "\(held.count) admitted, \(Format.grouped(refused)) refused, \(open) still open at end"
        case .sessionErrors:
            stopping.store(true, ordering: .relaxed)
            waitForBackground()
            return "\(Format.grouped(sent.load(ordering: .relaxed))) SESSION_ERROR/VOIP_STATE written before the close"
        case .chatFlood, .fileSenders:
            stopping.store(true, ordering: .relaxed)
            waitForBackground()
            return "\(Format.grouped(sent.load(ordering: .relaxed))) messages sent, "
                + "\(Format.grouped(acknowledged.load(ordering: .relaxed))) acknowledged"
        }
    }

    private func spam() {
        let burst = Array(
            repeating: Message.register(Register(sessionCode: "999-999-999", apiToken: "rsk_bogus_token")),
            count: AbuseBenchmark.spamBurst)
        while !stopping.load(ordering: .relaxed) {
            guard let peer = AbuseRawPeer(port: port, from: AbuseBenchmark.attacker), peer.hello(name: "spammer") else {
                continue
            }
            connections.add(1, ordering: .relaxed)
            peer.send(burst)
            registers.add(burst.count, ordering: .relaxed)
            while let message = peer.next(timeoutMilliseconds: 5_000) {
                if case .registerResult = message { refusals.add(1, ordering: .relaxed) }
                if case .goAway(let goAway) = message, goAway.reason == .rateLimited {
                    rateLimitedGoAways.add(1, ordering: .relaxed)
                }
            }
            peer.shut()
        }
    }
}

extension String {
    /// Spaces as underscores, for one field of a `key=value` line.
    fileprivate var spacesAsUnderscores: String { String(map { $0 == " " ? "_" : $0 }) }
    fileprivate var withoutCommas: String { filter { $0 != "," } }
}
