#if canImport(Glibc)
import Glibc
#endif
import COpenSSL
import Dispatch
import Synchronization
import SupporterNode
import SupporterREST
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupportPostgres

/// The `abuse-rest` group (issue 20, findings 2, 4, 5, 10): a legitimate user of the REST API and web console, quiet
/// and then under each attack, on one node with its REST server in this process; attackers and the legitimate client
/// in a child process (this executable again, hidden subcommand `abuse-rest-load`), attackers from 127.0.x.y source
/// addresses of their own per row, the legitimate client from 127.0.0.1.
///
/// Rows:
/// - sign-in flood, random logins, from 40 and from 100 addresses (4 and 2 keep-alive connections each, no pause):
///   the legitimate user signs in to its own account (right password, with the `rsup_known` proof of an earlier
///   success, from the address it signed in from), and a second user without a proof from a fresh address;
/// - sign-in flood on one target account (wrong passwords for the legitimate user's own login) from 100 addresses;
/// - REST cap holding: 40 addresses × 32 idle TCP connections (1,280 for a cap of 1,024), kept open (reconnected when
///   closed); the legitimate client opens a new connection per `GET /api/v1/sessions` (admin token);
/// - the same with 40 × 32 TLS connections dribbling a request head (slowloris), reconnected when closed;
/// - SSE slot holding: one supporter account from 8 addresses opens as many event streams as it can and holds them;
///   another account's console opens a stream (new connection, until `: connected`), then closes it.
///
/// Each row reports the legitimate p50/p99 quiet (measured first, in the same run) and under attack, their ratio
/// (target ≤ 2), successes, what the attackers got, and this process's RSS and CPU before, during and after.
enum RESTAbuseBenchmark {
    static let group = BenchmarkGroup(
        name: "abuse-rest",
        summary: "REST API and console under abuse: legitimate sign-in, GET and event stream beside floods and cap holders",
        run: run)

    static let subcommand = "abuse-rest-load"
    static let password = "the owner's long password"

    enum Condition: String, CaseIterable {
        case signIn40 = "sign-in-40"
        case signIn100 = "sign-in-100"
        case target100 = "target-100"
        case idleTCP = "idle-tcp-40x32"
        case slowloris = "slowloris-40x32"
        case sse = "sse-8-addresses"

        var label: String {
            switch self {
            case .signIn40: "sign-in flood, random logins, 40 addresses"
            case .signIn100: "sign-in flood, random logins, 100 addresses"
            case .target100: "sign-in flood on the owner's login, 100 addresses"
            case .idleTCP: "40 × 32 idle TCP connections (cap 1,024)"
            case .slowloris: "40 × 32 TLS connections dribbling a head"
            case .sse: "one account's streams from 8 addresses"
            }
        }

        /// What the legitimate client measures.
        var measured: String {
            switch self {
            case .signIn40, .signIn100, .target100: "POST /login (own account, proof)"
            case .idleTCP, .slowloris: "new conn + GET /sessions"
            case .sse: "new conn + GET /events"
            }
        }

        /// The attackers' addresses: row `index`'s own /24 of 127/8.
        func attacker(_ number: Int) -> String {
            let row = Condition.allCases.firstIndex(of: self)! + 1
            return "127.\(row).\(number / 200).\(10 + number % 200)"
        }
    }

    struct Row {
        var condition: Condition
        var quiet: [String: String] = [:]
        var loaded: [String: String] = [:]
        var attack = "-"
        var rssKiB = (before: 0, during: 0, after: 0)
        var cpu = (before: Double.nan, during: Double.nan, after: Double.nan)
        var error: String?
    }

    // MARK: the group (the node's process)

    /// Runs every row and prints the table; `swift run -c release Benchmarks abuse-rest`.
    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        print("== abuse-rest: the REST API and web console under abuse (load in a child process) ==")
        let fileLimit = ProcessInfoLite.raiseFileLimit()
        guard let target = AbuseTarget.start(group: "abuse-rest") else { return }
        defer { target.stop() }
        let (node, rest) = (target.node, target.rest)
        let ready: Bool = blockingAwait {
            for login in ["owner", "newcomer", "viewer", "mallory"] {
                guard (try? await node.addAccount(login: login, displayName: login, password: password)) != nil else {
                    return false
                }
            }
            return true
        }
        guard ready, let token = try? node.issueAPIToken(scope: .admin) else {
            print("   abuse-rest: cannot add the accounts or the admin token\n")
            return
        }
        print(
            "node: REST server defaults (1 loop, 1,024 connections, 32 per address, 256 event streams), file-backed"
                + " SQLite store, scrypt N=2^15; RLIMIT_NOFILE soft = \(fileLimit);"
                + " \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPU(s)")
        print()
        var rows: [Row] = []
        for condition in Condition.allCases {
            var row = Row(condition: condition)
            measure(&row, port: rest.port, token: token)
            rows.append(row)
        }
        printTable(rows)
    }

    /// One row: a fresh child measures quiet, starts the attack, measures again, stops it; this process's RSS and CPU
    /// are sampled before, during (between `attack` and `loaded`) and after (the second after `attack-end`).
    static func measure(_ row: inout Row, port: UInt16, token: String) {
        let arguments = [
            "Benchmarks", subcommand, "--port", "\(port)", "--token", token, "--condition", row.condition.rawValue,
        ]
        guard let child = ChildProcess("/proc/self/exe", arguments, captureOutput: true, pipeInput: true,
                                       inheritStandardError: true)
        else {
            row.error = "cannot start the load child process"
            return
        }
        let clock = ContinuousClock()
        var phaseStart = (clock.now, ProcessInfoLite.cpuSeconds())
        func cpuShare() -> Double {
            let now = (clock.now, ProcessInfoLite.cpuSeconds())
            defer { phaseStart = now }
            return (now.1 - phaseStart.1) / max(1e-9, phaseStart.0.duration(to: now.0).seconds)
        }
        row.rssKiB.before = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        let deadline = clock.now + .seconds(300)
        var done = false
        while !done, clock.now < deadline {
            guard let line = child.readLine(timeout: .milliseconds(100)) else {
                if child.exitStatus != nil { break }
                row.rssKiB.during = max(row.rssKiB.during, ProcessInfoLite.statusKiB("VmRSS") ?? 0)
                continue
            }
            if line.hasPrefix("quiet ") {
                row.quiet = NodesBenchmark.parseFields(line)
                row.cpu.before = cpuShare()
            } else if line.hasPrefix("attack ") {
                row.attack = String(line.dropFirst("attack ".count))
                _ = cpuShare()
            } else if line.hasPrefix("loaded ") {
                row.loaded = NodesBenchmark.parseFields(line)
                row.cpu.during = cpuShare()
            } else if line.hasPrefix("attack-end ") {
                row.attack = String(line.dropFirst("attack-end ".count))
                done = true
            }
        }
        child.closeInput()
        child.wait()
        _ = cpuShare()
        ProcessInfoLite.sleep(.seconds(1))
        row.cpu.after = cpuShare()
        row.rssKiB.after = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        if !done { row.error = "the load child did not finish the row" }
    }

    static func printTable(_ rows: [Row]) {
        func ms(_ fields: [String: String], _ key: String) -> String {
            Double(fields[key] ?? "").map { Format.fixed($0 / 1000, 1) } ?? "-"
        }
        func ratio(_ row: Row) -> String {
            guard let quiet = Double(row.quiet["p99_us"] ?? ""), let loaded = Double(row.loaded["p99_us"] ?? ""),
                quiet > 0
            else { return "-" }
            return Format.fixed(loaded / quiet, 2)
        }
        func mib(_ kib: Int) -> String { Format.fixed(Double(kib) / 1024, 0) }
        func share(_ value: Double) -> String { value.isNaN ? "-" : Format.fixed(value, 2) }
        var table = TablePrinter(
            title: "legitimate p50/p99 quiet and under attack (ms), same run; CPU = cores of this process",
            columns: [
                .init(title: "attack", alignment: .left),
                .init(title: "legitimate request", alignment: .left),
                .init(title: "quiet p50/p99", alignment: .right),
                .init(title: "attack p50/p99", alignment: .right),
                .init(title: "p99 ratio", alignment: .right),
                .init(title: "ok quiet/attack", alignment: .right),
                .init(title: "no-proof ok", alignment: .right),
                .init(title: "RSS MiB b/d/a", alignment: .right),
                .init(title: "CPU b/d/a", alignment: .right),
                .init(title: "attackers got", alignment: .left),
            ])
        for row in rows {
            table.addRow([
                row.condition.label, row.condition.measured,
                ms(row.quiet, "p50_us") + " / " + ms(row.quiet, "p99_us"),
                ms(row.loaded, "p50_us") + " / " + ms(row.loaded, "p99_us"), ratio(row),
                "\(row.quiet["ok"] ?? "-")/\(row.quiet["n"] ?? "-") · \(row.loaded["ok"] ?? "-")/\(row.loaded["n"] ?? "-")",
                row.loaded["other_ok"].map { "\($0)/\(row.loaded["other_n"] ?? "-")" } ?? "-",
                "\(mib(row.rssKiB.before)) / \(mib(row.rssKiB.during)) / \(mib(row.rssKiB.after))",
                "\(share(row.cpu.before)) / \(share(row.cpu.during)) / \(share(row.cpu.after))", row.attack,
            ])
        }
        table.print()
        for row in rows {
            if let error = row.error { print("   \(row.condition.label): \(error)") }
            if let error = row.loaded["error"] { print("   \(row.condition.label): first failure: \(error)") }
        }
        print(
            """
               Method: one node and REST server (this process) serve the rows in turn. Per row a fresh child
               (`/proc/self/exe \(subcommand)`) measures the legitimate request quiet, starts the attack, lets it run
               \(Format.fixed(settle.seconds, 0)) s, measures the same request under it, stops it. Sign-in rows: the
               owner signs in \(signIns) times (new TLS connection each, right password, its `rsup_known` proof from
               an earlier sign-in, from 127.0.0.1 where it signed in before); "no-proof ok" is a second account
               signing in from a fresh address without a proof, once per owner sign-in. Attackers: 4 (40 addresses)
               or 2 (100 addresses) keep-alive connections per address, each sending the next POST /login as soon as
               the last was answered. Cap rows: \(gets) GETs, each on a new connection; idle connections and
               slowloris heads are reopened when the node closes them. SSE: \(streams) stream opens by another
               account. CPU b/d/a: cores this process used while quiet was measured, during the attack, and in the
               second after it.

            """)
    }

    static let settle: Duration = .seconds(3)
    static let signIns = 30
    static let gets = 100
    static let streams = 40

    // MARK: the child (attackers and the legitimate client)

    /// `abuse-rest-load --port P --token T --condition C`: prints `quiet …`, `attack …`, `loaded …`, `attack-end …`
    /// (fields `n ok p50_us p99_us [other_n other_ok] [error]`), then waits for stdin to close.
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0
        var token = ""
        var condition = Condition.signIn40
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--token": token = value
            case "--condition": condition = Condition(rawValue: value) ?? .signIn40
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        _ = signal(SIGPIPE, SIG_IGN)
        let legit = LegitimateClient(condition: condition, port: port, token: token)
        legit.prepare()
        writeStandardOutput("quiet " + legit.measure().line)
        let attack = RESTAttack(condition: condition, port: port)
        writeStandardOutput("attack " + attack.start())
        ProcessInfoLite.sleep(settle)
        writeStandardOutput("loaded " + legit.measure(withOther: condition.isSignIn).line)
        writeStandardOutput("attack-end " + attack.stop())
        var byte: UInt8 = 0
        while true {
            let result = read(0, &byte, 1)
            if result == 0 || (result < 0 && errno != EINTR) { break }
        }
        _exit(0)
    }
}

extension RESTAbuseBenchmark.Condition {
    var isSignIn: Bool { self == .signIn40 || self == .signIn100 || self == .target100 }
}

/// What the legitimate client measured in one phase.
private struct Sample {
    var latencies = NodesBenchmark.Latencies()
    var attempts = 0
    var otherAttempts = 0
    var otherSucceeded = 0
    var firstError: String?

    var line: String {
        var text = "n=\(attempts) ok=\(latencies.microseconds.count)"
        text += " p50_us=\(Int(latencies.percentile(50).isNaN ? -1 : latencies.percentile(50)))"
        text += " p99_us=\(Int(latencies.percentile(99).isNaN ? -1 : latencies.percentile(99)))"
        if otherAttempts > 0 { text += " other_n=\(otherAttempts) other_ok=\(otherSucceeded)" }
        if let firstError { text += " error=" + firstError.map { $0 == " " ? "_" : $0 }.reduce("") { $0 + String($1) } }
        return text
    }
}

/// The legitimate user of one row, from 127.0.0.1 (the second sign-in user from 127.0.0.250).
private final class LegitimateClient {
    let condition: RESTAbuseBenchmark.Condition
    let port: UInt16
    let token: String
    /// The owner's `rsup_known` cookie, from a first sign-in.
    private var proof: String?
    /// The viewer's session cookie (SSE row).
    private var viewer: String?

    init(condition: RESTAbuseBenchmark.Condition, port: UInt16, token: String) {
        self.condition = condition
        self.port = port
        self.token = token
    }

    static func loginBody(_ login: String, _ password: String) -> [UInt8] {
        Array(#"{"login":"\#(login)","password":"\#(password)"}"#.utf8)
    }

    func prepare() {
        if condition.isSignIn, let answer = RESTBenchClient.once(
            port: port, from: "127.0.0.1", "POST", "/api/v1/login",
            body: Self.loginBody("owner", RESTAbuseBenchmark.password))
        {
            proof = answer.cookie("rsup_known").map { "rsup_known=" + $0 }
        }
        if condition == .sse, let answer = RESTBenchClient.once(
            port: port, from: "127.0.0.1", "POST", "/api/v1/login",
            body: Self.loginBody("viewer", RESTAbuseBenchmark.password))
        {
            viewer = answer.cookie("rsup_session").map { "rsup_session=" + $0 }
        }
    }

    func measure(withOther: Bool = false) -> Sample {
        var sample = Sample()
        let count =
            condition.isSignIn ? RESTAbuseBenchmark.signIns : condition == .sse ? RESTAbuseBenchmark.streams : RESTAbuseBenchmark.gets
        for _ in 0..<count {
            sample.attempts += 1
            let started = ContinuousClock.now
            let ok: Bool
            var failure: String?
            switch condition {
            case .signIn40, .signIn100, .target100:
                let answer = RESTBenchClient.once(
                    port: port, from: "127.0.0.1", "POST", "/api/v1/login",
                    headers: proof.map { [("Cookie", $0)] } ?? [],
                    body: Self.loginBody("owner", RESTAbuseBenchmark.password))
                ok = answer?.status == 200
                if !ok { failure = answer.map { "status \($0.status)" } ?? "no answer" }
            case .idleTCP, .slowloris:
                let answer = RESTBenchClient.once(
                    port: port, from: "127.0.0.1", "GET", "/api/v1/sessions?limit=1",
                    headers: [("Authorization", "Bearer \(token)")])
                ok = answer?.status == 200
                if !ok { failure = answer.map { "status \($0.status)" } ?? "refused or no answer" }
            case .sse:
                if let client = RESTBenchClient(port: port, from: "127.0.0.1") {
                    let status = client.openStream(headers: viewer.map { [("Cookie", $0)] } ?? [])
                    ok = status == 200
                    if !ok { failure = "status \(status)" }
                    client.shut()
                } else {
                    ok = false
                    failure = "refused"
                }
            }
            if ok {
                sample.latencies.add(started.duration(to: .now))
            } else if sample.firstError == nil {
                sample.firstError = failure
            }
            if withOther {
                sample.otherAttempts += 1
                let answer = RESTBenchClient.once(
                    port: port, from: "127.0.0.250", "POST", "/api/v1/login",
                    body: Self.loginBody("newcomer", RESTAbuseBenchmark.password))
                if answer?.status == 200 { sample.otherSucceeded += 1 }
            }
        }
        return sample
    }
}

/// The attackers of one row, in the child: threads of their own (blocking sockets), stopped by `stop()`.
private final class RESTAttack: Sendable {
    let condition: RESTAbuseBenchmark.Condition
    let port: UInt16
    private let stopping = Atomic<Bool>(false)
    private let running = DispatchGroup()
    private let requests = Atomic<Int>(0)
    private let limited = Atomic<Int>(0)
    private let busy = Atomic<Int>(0)
    private let wrong = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)
    private let reopened = Atomic<Int>(0)
    private let held = Atomic<Int>(0)

    init(condition: RESTAbuseBenchmark.Condition, port: UInt16) {
        self.condition = condition
        self.port = port
    }

    /// Starts the attack; what it got at once.
    func start() -> String {
        switch condition {
        case .signIn40, .signIn100, .target100:
            let addresses = condition == .signIn40 ? 40 : 100
            let perAddress = condition == .signIn40 ? 4 : 2
            for address in 0..<addresses {
                for _ in 0..<perAddress { spawn { self.signInFlood(from: self.condition.attacker(address)) } }
            }
            return "\(addresses) addresses × \(perAddress) connections"
        case .idleTCP, .slowloris:
            for address in 0..<40 { spawn { self.holdConnections(from: self.condition.attacker(address)) } }
            let deadline = ContinuousClock.now + .seconds(20)
            while opened.load(ordering: .relaxed) < 40 * 32, ContinuousClock.now < deadline {
                ProcessInfoLite.sleep(.milliseconds(50))
            }
            return "opened \(opened.load(ordering: .relaxed))"
        case .sse:
            spawn { self.holdStreams() }
            let deadline = ContinuousClock.now + .seconds(20)
            while opened.load(ordering: .relaxed) < 300, ContinuousClock.now < deadline {
                ProcessInfoLite.sleep(.milliseconds(50))
            }
            return "held \(held.load(ordering: .relaxed)) streams"
        }
    }

    /// Stops the attack; what it got over the run.
    func stop() -> String {
        stopping.store(true, ordering: .relaxed)
        running.wait()
        switch condition {
        case .signIn40, .signIn100, .target100:
            return "\(Format.grouped(requests.load(ordering: .relaxed))) POSTs: "
                + "\(Format.grouped(wrong.load(ordering: .relaxed))) × 401, "
                + "\(Format.grouped(limited.load(ordering: .relaxed))) × 429, "
                + "\(Format.grouped(busy.load(ordering: .relaxed))) × 503"
        case .idleTCP, .slowloris:
            return "\(Format.grouped(opened.load(ordering: .relaxed))) opened, "
                + "\(Format.grouped(reopened.load(ordering: .relaxed))) reopened after the node closed them, "
                + "\(held.load(ordering: .relaxed)) open at end"
        case .sse:
            return "\(held.load(ordering: .relaxed)) streams held of \(opened.load(ordering: .relaxed)) tried"
        }
    }

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        running.enter()
        let group = running
        startThread {
            body()
            group.leave()
        }
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func signInFlood(from source: String) {
        var generator = SystemRandomNumberGenerator()
        var client: RESTBenchClient?
        while !isStopping {
            if client == nil { client = RESTBenchClient(port: port, from: source) }
            guard let connection = client else { continue }
            let login = condition == .target100 ? "owner" : "u\(UInt64.random(in: 0...UInt64.max, using: &generator))"
            let body = LegitimateClient.loginBody(login, "guess \(UInt32.random(in: 0...UInt32.max, using: &generator))")
            requests.add(1, ordering: .relaxed)
            guard let answer = connection.request("POST", "/api/v1/login", body: body) else {
                connection.shut()
                client = nil
                continue
            }
            switch answer.status {
            case 401: wrong.add(1, ordering: .relaxed)
            case 429: limited.add(1, ordering: .relaxed)
            case 503: busy.add(1, ordering: .relaxed)
            default: break
            }
            if answer.closes {
                connection.shut()
                client = nil
            }
        }
        client?.shut()
    }

    /// 32 connections from `source`, idle TCP or TLS with part of a head, reopened when the node closes one.
    private func holdConnections(from source: String) {
        let head = Array("GET /api/v1/sessions HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)
        func open() -> (fd: Int32, tls: RESTBenchClient?)? {
            if condition == .idleTCP {
                return AbuseRawPeer.tcpConnect(port: port, from: source).map { ($0, nil) }
            }
            guard let client = RESTBenchClient(port: port, from: source, timeoutMilliseconds: 2_000) else { return nil }
            guard client.write(head) else {
                client.shut()
                return nil
            }
            return (client.fd, client)
        }
        var connections: [(fd: Int32, tls: RESTBenchClient?)] = []
        for _ in 0..<32 {
            if let connection = open() { connections.append(connection) }
            opened.add(1, ordering: .relaxed)
        }
        held.add(connections.count, ordering: .relaxed)
        while !isStopping {
            ProcessInfoLite.sleep(.milliseconds(100))
            for index in connections.indices.reversed() where Self.closedByPeer(connections[index].fd) {
                connections[index].tls?.shut()
                if connections[index].tls == nil { close(connections[index].fd) }
                connections.remove(at: index)
                held.add(-1, ordering: .relaxed)
            }
            while connections.count < 32, !isStopping {
                guard let connection = open() else { break }
                connections.append(connection)
                held.add(1, ordering: .relaxed)
                reopened.add(1, ordering: .relaxed)
            }
        }
        for connection in connections {
            connection.tls?.shut()
            if connection.tls == nil { close(connection.fd) }
        }
    }

    /// Signs in as `mallory` from 8 addresses and opens streams round-robin until refused 300 times in a row
    /// or 300 were tried; holds what it got until stopped.
    private func holdStreams() {
        var cookies: [String] = []
        for address in 0..<8 {
            if let answer = RESTBenchClient.once(
                port: port, from: condition.attacker(address), "POST", "/api/v1/login",
                body: LegitimateClient.loginBody("mallory", RESTAbuseBenchmark.password)),
                let cookie = answer.cookie("rsup_session")
            {
                cookies.append("rsup_session=" + cookie)
            }
        }
        var streams: [RESTBenchClient] = []
        for index in 0..<300 where !cookies.isEmpty {
            opened.add(1, ordering: .relaxed)
            guard let client = RESTBenchClient(port: port, from: condition.attacker(index % 8)) else { continue }
            if client.openStream(headers: [("Cookie", cookies[index % cookies.count])]) == 200 {
                streams.append(client)
                held.add(1, ordering: .relaxed)
            } else {
                client.shut()
            }
        }
        while !isStopping { ProcessInfoLite.sleep(.milliseconds(100)) }
        for stream in streams { stream.shut() }
    }

    static func closedByPeer(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            || descriptor.revents & Int16(POLLHUP | POLLERR) != 0
    }
}

/// Starts a detached thread (the child needs hundreds of blocking ones: more than Dispatch's pool gives).
private func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstacksize(&attributes, 256 << 10)
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let created = pthread_create(&thread, &attributes, { argument in
        Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, box)
    pthread_attr_destroy(&attributes)
    if created == 0 { pthread_detach(thread) } else { Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body() }
}

/// A blocking HTTPS/1.1 client over OpenSSL from a chosen loopback source address (no certificate check): what a
/// load script is. One thread uses a client at a time.
final class RESTBenchClient {
    nonisolated(unsafe) private static let context: OpaquePointer = {
        let context = SSL_CTX_new(TLS_client_method())!
        SSL_CTX_set_verify(context, rs_SSL_VERIFY_none(), nil)
        return context
    }()

    struct Answer {
        var status: Int
        /// Lower-cased names; `set-cookie` fields joined by "\n".
        var headers: [String: String]
        var body: [UInt8]
        var closes: Bool { headers["connection"]?.lowercased() == "close" }

        /// The value of cookie `name` from `Set-Cookie`.
        func cookie(_ name: String) -> String? {
            for line in (headers["set-cookie"] ?? "").split(separator: "\n") {
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0] == name { return String(pair[1]) }
            }
            return nil
        }
    }

    let fd: Int32
    private let ssl: OpaquePointer
    private var buffered: [UInt8] = []
    private var released = false

    init?(port: UInt16, from source: String, timeoutMilliseconds: Int = 15_000) {
        guard let fd = AbuseRawPeer.tcpConnect(port: port, from: source) else { return nil }
        AbuseRawPeer.setTimeout(fd, milliseconds: timeoutMilliseconds)
        guard let ssl = SSL_new(Self.context) else {
            close(fd)
            return nil
        }
        SSL_set_fd(ssl, fd)
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            ERR_clear_error()
            SSL_free(ssl)
            close(fd)
            return nil
        }
        self.fd = fd
        self.ssl = ssl
    }

    deinit { shut() }

    /// A request on a new connection, which is closed after its answer.
    static func once(
        port: UInt16, from source: String, _ method: String, _ path: String, headers: [(String, String)] = [],
        body: [UInt8] = []
    ) -> Answer? {
        guard let client = RESTBenchClient(port: port, from: source) else { return nil }
        defer { client.shut() }
        return client.request(method, path, headers: headers, body: body)
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + sent, Int32($0.count - sent)) }
            guard count > 0 else { return false }
            sent += Int(count)
        }
        return true
    }

    /// Reads more into `buffered`; false at the end of the stream, on an error or a timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        ERR_clear_error()
        let count = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        guard count > 0 else { return false }
        buffered += chunk[0..<Int(count)]
        return true
    }

    private func head() -> (status: Int, headers: [String: String])? {
        let marker: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = buffered.firstRange(of: marker) {
                let text = String(decoding: buffered[..<end.lowerBound], as: UTF8.self)
                buffered.removeSubrange(..<end.upperBound)
                let lines = text.split(separator: "\r\n")
                guard let first = lines.first, first.split(separator: " ").count >= 2,
                    let status = Int(first.split(separator: " ")[1])
                else { return nil }
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].drop { $0 == " " }
                    headers[name] = headers[name].map { $0 + "\n" + value } ?? String(value)
                }
                return (status, headers)
            }
            guard fill() else { return nil }
        }
    }

    /// Sends a request and reads its answer (Content-Length bodies only); nil when the connection failed.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) -> Answer? {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty { text += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        guard write(Array((text + "\r\n").utf8) + body), let (status, fields) = head() else { return nil }
        let length = Int(fields["content-length"] ?? "0") ?? 0
        while buffered.count < length { guard fill() else { return nil } }
        let answer = Array(buffered.prefix(length))
        buffered.removeFirst(length)
        return Answer(status: status, headers: fields, body: answer)
    }

    /// `GET /api/v1/events`: the status, after the stream's first comment when 200.
    func openStream(headers: [(String, String)]) -> Int {
        var text = "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        guard write(Array((text + "\r\n").utf8)), let (status, _) = head() else { return 0 }
        guard status == 200 else { return status }
        let connected = Array(": connected\n\n".utf8)
        while buffered.firstRange(of: connected) == nil { guard fill() else { return 0 } }
        buffered = []
        return status
    }

    /// close_notify and close.
    func shut() {
        guard !released else { return }
        released = true
        SSL_shutdown(ssl)
        SSL_free(ssl)
        close(fd)
    }
}
