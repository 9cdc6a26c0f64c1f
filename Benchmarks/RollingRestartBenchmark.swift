#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import DeviceNode
import SupporterNode
import SupporterStore
import SupporterStores
import SupportRuntime
import SupportSession
import SupportWire
import SupportUtilities
import SupporterCore
import SupportVocabulary
import SupporterModel

/// The `rolling` group (issue 22, docs/cluster.md "Drain"): a rolling restart with devices online and in sessions.
/// Each node is a `rsup-supporter serve` process; each in turn gets SIGTERM (a drain, SPEC §15.5), exits, and is
/// started again on its data folder, port and database; the devices, in a child process, report every reconnect and
/// resume. Printed: the pause each device saw (reconnecting → resumed), sessions lost (any session that ended), and
/// sessions still active after it.
///
/// The benchmark drives the nodes only as an operator would: their control sockets (codes, a token, an account,
/// `connect`, `list`) and signals. The devices run in a child process (`rolling-devices`), many `DeviceNode`s sharing
/// one TLS context, each knowing every node and starting on node `i mod n`.
enum RollingRestartBenchmark {
    static let group = BenchmarkGroup(
        name: "rolling",
        summary: "rolling restart (drain, start again) of 3 nodes and of a lone node on PostgreSQL and on SQLite: pauses, sessions lost",
        run: run)
    static let subcommand = "rolling-devices"

    struct Row {
        var label: String
        var nodes = 0
        var devices = 0
        var active = 0
        var restarts = 0
        /// Per device and restart: reconnecting → resumed, as the device reports it.
        var pauses = NodesBenchmark.Latencies()
        /// `shutdown()` called → returned (the drain, the store's last writes, the loops stopped).
        var drains = NodesBenchmark.Latencies()
        /// `shutdown()` called → every code held by a live node again and every session still active.
        var settled = NodesBenchmark.Latencies()
        var lost = 0
        var activeAfter = 0
        var failure: String?
    }

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        let devices = ClusterBenchmark.environmentInteger("RSUP_ROLLING_DEVICES", default: 500, minimum: 2)
        let active = min(ClusterBenchmark.environmentInteger("RSUP_ROLLING_ACTIVE", default: 50, minimum: 1), devices)
        print(
            "== rolling: restart each node in turn with \(Format.grouped(devices)) devices online, \(active) in sessions "
                + "(RSUP_ROLLING_DEVICES, RSUP_ROLLING_ACTIVE) ==")
        guard let binary = ServeProcess.binary() else {
            print("   rolling: no rsup-supporter next to this executable; build it first (swift build -c release); skipped\n")
            return
        }
        _ = ProcessInfoLite.raiseFileLimit()
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   rolling: cannot make certificates; skipped\n")
            return
        }
        // RSUP_ROLLING_KEEP=1 keeps the nodes' data folders and logs (`DIR/rolling-S-node-N.out.err`) for a look.
        let keep = getenv("RSUP_ROLLING_KEEP") != nil
        if keep { print("rolling: keeping \(directory)") }
        defer {
            if !keep, let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() }
        }
        let database: BenchmarkDatabase
        switch BenchmarkDatabase.start() {
        case .success(let started): database = started
        case .failure(let reason):
            print("   rolling: PostgreSQL unavailable: \(reason); skipped\n")
            return
        }
        defer { database.stop() }
        print("PostgreSQL: \(database.origin)\n")
        var rows: [Row] = []
        for (index, (label, nodes)) in [("(a) 3 nodes, each restarted in turn", 3), ("(b) a lone node restarted", 1)]
            .enumerated()
        {
            var row = Row(label: label, nodes: nodes, devices: devices, active: active)
            switch database.fresh("rsup_rolling_\(index)") {
            case .failure(let reason): row.failure = "\(reason)"
            case .success(let store): measure(&row, store: store, directory: directory, binary: binary, setup: index)
            }
            rows.append(row)
        }
        var sqlite = Row(label: "(c) a lone node on SQLite restarted", nodes: 1, devices: devices, active: active)
        measure(&sqlite, store: nil, directory: directory, binary: binary, setup: 2)
        rows.append(sqlite)
        printTable(rows)
    }

    /// Node `number` of `setup` as a `serve` process on `store` (nil: SQLite in its data folder) and `port` (0: any).
    /// A restart reuses the data folder and the port; the port may still be held by the previous process's last
    /// connections for a moment, so a start is tried for up to 5 s.
    static func startNode(
        binary: String, store: String?, directory: String, setup: Int, number: Int, port: UInt16
    ) -> ServeProcess? {
        let extra =
            ["--keepalive", "120s", "--resume-grace", "60s"] + (store.map { ["--store", $0] } ?? [])
        for _ in 0..<50 {
            if let node = ServeProcess(
                binary: binary, data: directory + "/rolling-\(setup)-node-\(number)", port: port,
                certificates: directory, extra: extra)
            {
                return node
            }
            ProcessInfoLite.sleep(.milliseconds(100))
        }
        return nil
    }

    /// Every code a node holds with its device connected (not one waiting for a resume, not one another node holds),
    /// with its state and the node's index, from one `list` per node.
    static func holdings(_ nodes: [ServeProcess]) -> [String: (state: String, node: Int)] {
        var held: [String: (state: String, node: Int)] = [:]
        for (index, node) in nodes.enumerated() {
            for entry in node.control(["command": "list"])?["codes"] as? [[String: Any]] ?? [] {
                guard entry["node"] == nil, entry["reconnecting"] as? Bool != true, let code = entry["code"] as? String,
                    let state = entry["state"] as? String, state != "open"
                else { continue }
                held[code] = (state, index)
            }
        }
        return held
    }

    /// The codes `node` lists.
    static func listed(_ node: ServeProcess) -> Set<String> {
        Set((node.control(["command": "list"])?["codes"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String })
    }

    static func create(on node: ServeProcess) -> String? {
        (node.control(["command": "create", "type": "remote"])?["code"] as? [String: Any])?["code"] as? String
    }

    static func measure(_ row: inout Row, store: String?, directory: String, binary: String, setup: Int) {
        var nodes: [ServeProcess] = []
        defer { for node in nodes { node.kill() } }
        for number in 1...row.nodes {
            guard
                let node = startNode(
                    binary: binary, store: store, directory: directory, setup: setup, number: number, port: 0)
            else {
                row.failure = "cannot start node \(number) (its log: \(directory)/rolling-\(setup)-node-\(number).out.err)"
                return
            }
            nodes.append(node)
        }
        // Each node hears what each other commits: a probe code made on one until the other lists it.
        func allHear() -> Bool {
            for listener in nodes {
                for writer in nodes where writer !== listener {
                    guard let probe = create(on: writer),
                        ClusterBenchmark.waitUntil(timeout: .seconds(10), { listed(listener).contains(probe) })
                    else { return false }
                }
            }
            return true
        }
        guard allHear(), let token = nodes[0].control(["command": "token"])?["token"] as? String,
            nodes[0].control([
                "command": "user-add", "login": "bench", "display-name": "Bench", "role": "supporter",
                "password": "rolling-benchmark-password",
            ]) != nil
        else {
            row.failure = "the nodes did not hear each other, or no token or account could be made"
            return
        }
        var codes: [String] = []
        for _ in 0..<row.devices {
            guard let code = create(on: nodes[0]) else {
                row.failure = "cannot create the codes"
                return
            }
            codes.append(code)
        }
        // The token was committed before the codes, so a node that lists every code knows the token too.
        guard ClusterBenchmark.waitUntil(timeout: .seconds(30), { nodes.allSatisfy { listed($0).isSuperset(of: codes) } })
        else {
            row.failure = "not every node learned the codes"
            return
        }
        let ports = nodes.map(\.port)
        let codesFile = directory + "/rolling-codes.txt"
        let outFile = directory + "/rolling-out-\(setup).txt"
        guard NodesBenchmark.writeLines(codes, to: codesFile),
            let child = ChildProcess(
                "/proc/self/exe",
                ["Benchmarks", subcommand, "--ports", ports.map(String.init).joined(separator: ","), "--token", token,
                 "--codes", codesFile, "--out", outFile, "--ca", directory + "/ca.pem"],
                captureOutput: true, pipeInput: true, inheritStandardError: true)
        else {
            row.failure = "cannot start the device child process"
            return
        }
        var childDone = false
        defer {
            if !childDone {
                child.closeInput()
                child.wait()
            }
        }
        let ready = child.readLine(timeout: .seconds(600)) ?? "(nothing)"
        guard ready.hasPrefix("ready"), NodesBenchmark.parseFields(ready)["failed"] == "0" else {
            row.failure = "the devices did not all come online: \(ready)"
            return
        }
        let sessions = Array(codes.prefix(row.active))
        var online = holdings(nodes)
        for code in sessions {
            guard let holder = online[code], holder.state == "online",
                nodes[holder.node].control([
                    "command": "connect", "code": code, "as": "bench", "type": "screen", "features": "voip",
                ]) != nil,
                ClusterBenchmark.waitUntil(timeout: .seconds(10), interval: .milliseconds(2), {
                    nodes[holder.node].control(["command": "list"]).map { reply in
                        (reply["codes"] as? [[String: Any]] ?? []).contains {
                            $0["code"] as? String == code && $0["state"] as? String == "active"
                        }
                    } ?? false
                })
            else {
                row.failure = "a session did not start"
                return
            }
        }
        online = [:]
        func settled() -> Bool {
            let held = holdings(nodes)
            return codes.allSatisfy { held[$0] != nil } && sessions.allSatisfy { held[$0]?.state == "active" }
        }
        for index in nodes.indices {
            let port = nodes[index].port
            let stopped = ContinuousClock.now
            let status = nodes[index].terminate()
            row.drains.add(stopped.duration(to: .now))
            if status != 0, row.failure == nil { row.failure = "node \(index + 1) exited with wait status \(status) on SIGTERM" }
            guard
                let again = startNode(
                    binary: binary, store: store, directory: directory, setup: setup, number: index + 1, port: port)
            else {
                row.failure = "node \(index + 1) did not start again on port \(port)"
                return
            }
            nodes[index] = again
            guard allHear(), ClusterBenchmark.waitUntil(timeout: .seconds(60), interval: .milliseconds(2), settled) else {
                let held = holdings(nodes)
                let missing = codes.filter { held[$0] == nil }
                let idle = sessions.filter { held[$0] != nil && held[$0]?.state != "active" }
                let views = nodes.map { node -> String in
                    guard let reply = node.control(["command": "list"]) else { return "no answer to list" }
                    let entries = reply["codes"] as? [[String: Any]] ?? []
                    let entry = entries.first { $0["code"] as? String == (missing.first ?? idle.first) }
                    return "\(entries.count) codes; " + (entry.map {
                        "\($0["state"] ?? "?") node=\($0["node"] ?? "-") reconnecting=\($0["reconnecting"] ?? false)"
                    } ?? "not listed")
                }
                row.failure =
                    "restart of node \(index + 1): not every device was held again within 60 s (\(missing.count) not held, "
                    + "\(idle.count) sessions not active; the first as each node lists it: \(views))"
                return
            }
            row.settled.add(stopped.duration(to: .now))
            row.restarts += 1
        }
        let held = holdings(nodes)
        row.activeAfter = sessions.count { held[$0]?.state == "active" }
        child.closeInput()
        child.wait()
        childDone = true
        for line in NodesBenchmark.readLines(outFile) {
            let parts = line.split(separator: " ")
            if parts.first == "pause", parts.count == 2, let nanoseconds = Int64(parts[1]) {
                row.pauses.add(nanoseconds: nanoseconds)
            } else if parts.first == "lost" {
                row.lost += 1
            }
        }
    }

    static func printTable(_ rows: [Row]) {
        func ms(_ microseconds: Double) -> String { microseconds.isNaN ? "–" : Format.fixed(microseconds / 1000, 1) }
        let titles = [
            "setup", "devices", "active", "restarts", "pause p50 ms", "p99", "max", "resumes", "lost",
            "active after", "drain p50 ms", "settled p50 ms",
        ]
        var table = TablePrinter(
            title: "rolling: restart each node in turn (drain, start again); pauses as the devices see them",
            columns: titles.enumerated().map { .init(title: $1, alignment: $0 == 0 ? .left : .right) })
        var notes: [String] = []
        for row in rows {
            table.addRow([
                row.label, Format.grouped(row.devices), "\(row.active)", "\(row.restarts)",
                ms(row.pauses.percentile(50)), ms(row.pauses.percentile(99)), ms(row.pauses.maximum),
                Format.grouped(row.pauses.microseconds.count), "\(row.lost)", "\(row.activeAfter)",
                ms(row.drains.percentile(50)), ms(row.settled.percentile(50)),
            ])
            if let failure = row.failure { notes.append("\(row.label): \(failure)") }
        }
        table.print()
        for note in notes { print("   " + note) }
        print(
            """
               Method: PostgreSQL (a throwaway server), presence lease 10 s, resume grace 60 s; each node is a
               `rsup-supporter serve` process (its defaults; --keepalive 120s), driven through its control socket; the
               devices in a child process (`rolling-devices`), device i starting on node i mod n and knowing every
               node (a lone node: its one address). For each node in turn: SIGTERM — a drain: each session's state
               and its presence's release committed, then GOAWAY going_away with resume_elsewhere — wait for the
               exit (drain: SIGTERM → exited), then `serve` again on the same data folder, port and database. pause:
               per device and restart, its `reconnecting` → `resumed` (CLOCK_MONOTONIC in the child); a device of a
               lone node redials its one address (250 ms doubling to 4 s) until the new process listens. lost:
               sessions that ended (the benchmark never ends one). active after: of the sessions started before the
               first restart, still active at the end. settled: SIGTERM → every code held by a live node with its
               device connected and every session active again (`list` on every node, polled).

            """)
    }

    // MARK: the child

    /// `rolling-devices --ports P1,P2,… --token T --codes FILE --out FILE --ca PATH`: joins each code with its own
    /// DeviceNode (device i first on port i mod n, the others as alternates), allows every request, prints `ready
    /// online=N failed=F` once all are online, and when stdin closes writes `pause NS` per reconnect → resume and
    /// `lost CODE REASON` per ended session to the out file, and exits.
    static func childMain(_ arguments: [String]) -> Never {
        var ports: [UInt16] = []
        var token = "", codesPath = "", outPath = "", caPath = ""
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--ports": ports = value.split(separator: ",").compactMap { UInt16($0) }
            case "--token": token = value
            case "--codes": codesPath = value
            case "--out": outPath = value
            case "--ca": caPath = value
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
            for index in 0..<2 { loops.append(try EventLoop.start(name: "rolling-device-\(index)")) }
        } catch {
            writeStandardOutput("ready online=0 failed=\(codes.count)")
            exit(1)
        }
        guard !ports.isEmpty else {
            writeStandardOutput("ready online=0 failed=\(codes.count)")
            exit(1)
        }
        let delegate = RollingDelegate(slots: DispatchSemaphore(value: 64))
        var nodes: [DeviceNode] = []
        var sessions: [DeviceSession] = []
        for (index, code) in codes.enumerated() {
            delegate.slots.wait()
            let first = index % ports.count
            var configuration = DeviceConfiguration(
                host: "127.0.0.1", port: ports[first], tls: tls, apiToken: token, deviceName: "rolling-\(index)")
            configuration.alternateNodes = ports.indices.filter { $0 != first }.map {
                NodeAddress(host: "127.0.0.1", port: ports[$0])
            }
            configuration.eventLoop = loops[index % loops.count]
            configuration.capabilities = [Feature(.screenShare), Feature(.voip)]
            configuration.keepaliveInterval = .seconds(120)  // the most `serve` accepts (SPEC §13.1)
            do {
                let node = try DeviceNode(configuration: configuration, tlsContext: context)
                nodes.append(node)
                sessions.append(try node.connect(toSessionCode: code, delegate: delegate))
            } catch {
                delegate.failedToJoin()
            }
        }
        for _ in 0..<64 { delegate.slots.wait() }
        writeStandardOutput("ready online=\(delegate.online.load(ordering: .relaxed)) failed=\(delegate.failed.load(ordering: .relaxed))")
        var byte: UInt8 = 0
        while true {
            let result = read(0, &byte, 1)
            if result == 0 || (result < 0 && errno != EINTR) { break }
        }
        let report = delegate.report()
        _ = NodesBenchmark.writeLines(report, to: outPath)
        withExtendedLifetime((nodes, sessions)) {}
        _exit(0)
    }
}

/// The child's delegate, shared by every session: counts sessions online (releasing a dial slot), allows every
/// request, and notes each reconnect → resume and each session that ended.
private final class RollingDelegate: DeviceSessionDelegate {
    let slots: DispatchSemaphore
    let online = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    private struct State {
        var reconnectingSince: [String: UInt64] = [:]
        var pauses: [UInt64] = []
        var lost: [String] = []
        var onlineOnce: Set<String> = []
    }
    private let state = Mutex(State())

    init(slots: DispatchSemaphore) { self.slots = slots }

    func failedToJoin() {
        failed.wrappingAdd(1, ordering: .relaxed)
        slots.signal()
    }

    func report() -> [String] {
        state.withLock { state in state.pauses.map { "pause \($0)" } + state.lost.map { "lost \($0)" } }
    }

    func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {
        let first = state.withLock { $0.onlineOnce.insert(session.code).inserted }
        guard first else { return }
        online.wrappingAdd(1, ordering: .relaxed)
        slots.signal()
    }

    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) { request.allow() }

    func sessionIsReconnecting(_ session: DeviceSession) {
        let now = Deadline.now().nanoseconds
        state.withLock { $0.reconnectingSince[session.code] = now }
    }

    func sessionDidResume(_ session: DeviceSession) {
        let now = Deadline.now().nanoseconds
        state.withLock { state in
            if let since = state.reconnectingSince.removeValue(forKey: session.code) { state.pauses.append(now - since) }
        }
    }

    func session(_ session: DeviceSession, didEnd ending: SessionEnding) {
        state.withLock { $0.lost.append("\(session.code) \(ending.kind)".replacingOccurrences(of: "\n", with: " ")) }
    }

    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {
        let joined = state.withLock { $0.onlineOnce.contains(session.code) }
        if !joined { failedToJoin() }
    }
}
