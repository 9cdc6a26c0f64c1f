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
/// Each node in turn is stopped the way SIGTERM stops `serve` (`shutdown()`: a drain, SPEC §15.5) and started again on
/// its port and database; the devices, in a child process, report every reconnect and resume. Printed: the pause each
/// device saw (reconnecting → resumed), sessions lost (any session that ended), and sessions still active after it.
///
/// The nodes run in this process (their code path is `serve`'s: it calls the same `shutdown()` on SIGTERM); the
/// devices run in a child process (`rolling-devices`), many `DeviceNode`s sharing one TLS context, each knowing every
/// node and starting on node `i mod n`.
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
        _ = ProcessInfoLite.raiseFileLimit()
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   rolling: cannot make certificates; skipped\n")
            return
        }
        defer { if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() } }
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
            case .success(let store): measure(&row, store: store, directory: directory)
            }
            rows.append(row)
        }
        var sqlite = Row(label: "(c) a lone node on SQLite restarted", nodes: 1, devices: devices, active: active)
        measure(&sqlite, store: nil, directory: directory)
        rows.append(sqlite)
        printTable(rows)
    }

    /// A node on `store` (nil: the SQLite file in `directory`) listening on `port` (0: any), stopped by the caller.
    static func makeNode(store: String?, directory: String, port: UInt16) -> SupporterNode? {
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
        configuration.port = port
        configuration.loopCount = 2
        configuration.keepaliveInterval = ClusterBenchmark.keepalive
        configuration.resumeGrace = .seconds(60)
        var storeConfiguration = StoreConfiguration(path: directory + "/rolling.sqlite")
        if let store { storeConfiguration.backend = .postgres(store) }
        // A node's port may still be held by its previous process's last connections for a moment.
        for _ in 0..<50 {
            if let opened = try? storeConfiguration.openForNode(),
                let node = try? SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            {
                if (try? node.start()) != nil { return node }
                node.shutdown()
            }
            ProcessInfoLite.sleep(.milliseconds(100))
        }
        return nil
    }

    static func measure(_ row: inout Row, store: String?, directory: String) {
        var nodes: [SupporterNode] = []
        defer { for node in nodes { node.shutdown() } }
        for _ in 0..<row.nodes {
            guard let node = makeNode(store: store, directory: directory, port: 0) else {
                row.failure = "cannot start a node"
                return
            }
            nodes.append(node)
        }
        func allHear() -> Bool {
            for listener in nodes { for writer in nodes where writer !== listener {
                guard ClusterBenchmark.waitForListener(listener, hearing: writer) else { return false }
            } }
            return true
        }
        guard allHear(), let token = try? nodes[0].issueAPIToken() else {
            row.failure = "the nodes did not hear each other"
            return
        }
        let ports = nodes.compactMap(\.port)
        let count = row.devices
        let creator = nodes[0]
        guard let codes = blockingAwait({ () async -> [String]? in
            var codes: [String] = []
            for _ in 0..<count {
                guard let info = try? await creator.createCode(type: .remoteSupport) else { return nil }
                codes.append(info.code)
            }
            return codes
        }),
            ClusterBenchmark.waitUntil(timeout: .seconds(30), {
                nodes.allSatisfy { node in node.scope(ofToken: token) == .device && codes.allSatisfy { node.code($0) != nil } }
            })
        else {
            row.failure = "cannot create the codes"
            return
        }
        let codesFile = directory + "/rolling-codes.txt"
        let outFile = directory + "/rolling-out-\(row.nodes).txt"
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
        guard let ready = child.readLine(timeout: .seconds(600)), ready.hasPrefix("ready"),
            NodesBenchmark.parseFields(ready)["failed"] == "0"
        else {
            row.failure = "the devices did not all come online"
            return
        }
        /// The live node holding `code` with its device connected (not a session waiting for a resume), and its
        /// state there.
        func held(_ code: String) -> SessionCodeState? {
            for node in nodes {
                if let info = node.code(code), info.node == nil, info.state != .open, !info.reconnecting { return info.state }
            }
            return nil
        }
        let sessions = Array(codes.prefix(row.active))
        for code in sessions {
            guard let holder = nodes.first(where: { $0.code(code)?.node == nil && $0.code(code)?.state == .online }),
                blockingAwait({ (try? await holder.requestConnection(code: code, supporterName: "Bench", type: .screenShare)) != nil }),
                ClusterBenchmark.waitUntil(timeout: .seconds(10), { held(code) == .active })
            else {
                row.failure = "a session did not start"
                return
            }
        }
        func settled() -> Bool {
            codes.allSatisfy { held($0) != nil } && sessions.allSatisfy { held($0) == .active }
        }
        for index in nodes.indices {
            let port = nodes[index].port ?? 0
            let stopped = ContinuousClock.now
            nodes[index].shutdown()
            row.drains.add(stopped.duration(to: .now))
            guard let again = makeNode(store: store, directory: directory, port: port) else {
                row.failure = "node \(index + 1) did not start again on port \(port)"
                return
            }
            nodes[index] = again
            guard allHear(), ClusterBenchmark.waitUntil(timeout: .seconds(60), interval: .milliseconds(2), settled) else {
                row.failure = "restart of node \(index + 1): not every device was held again within 60 s"
                return
            }
            row.settled.add(stopped.duration(to: .now))
            row.restarts += 1
        }
        row.activeAfter = sessions.count { held($0) == .active }
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
               Method: PostgreSQL (a throwaway server), presence lease 10 s, resume grace 60 s; the nodes run in this
               process, 2 loops each; the devices in a child process (`rolling-devices`), device i starting on node
               i mod n and knowing every node (a lone node: its one address). For each node in turn: `shutdown()` —
               what `serve` runs on SIGTERM: a drain, each session's state and its presence's release committed, then
               GOAWAY going_away with resume_elsewhere — then a new node on the same port and database. pause: per
               device and restart, its `reconnecting` → `resumed` (CLOCK_MONOTONIC in the child); a device of a
               lone node redials its one address (250 ms doubling to 4 s) until the new node listens. lost: sessions
               that ended (the benchmark never ends one). active after: of the sessions started before the first
               restart, still active at the end. settled: `shutdown()` called → every code held by a live node and
               every session active again (polled every 2 ms).

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
            configuration.keepaliveInterval = ClusterBenchmark.keepalive
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
