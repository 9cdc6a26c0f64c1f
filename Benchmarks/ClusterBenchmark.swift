#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import DeviceNode
import SupporterNode
import SupporterStore
import SupporterStores
import SupportPostgres
import SupportRuntime
import SupportSession
import SupportWire
import SupportUtilities
import SupportLink
import SupporterCore
import SupporterREST
import SupportVocabulary
import SupporterModel

/// The `cluster` group (docs/cluster.md): what sharing one PostgreSQL database costs. One table compares
/// (a) one node on SQLite, (b) one node on PostgreSQL, (e) three nodes on PostgreSQL with the devices spread over all
/// three and the supporter on node 1, and (c) two nodes on PostgreSQL with the devices on node 1 and
/// the supporter on node 2 (every request routed through the database), plus (d) a clean stop of the node holding a
/// device until that device is registered on the other node.
///
/// The nodes run in this process; the N devices of (a)–(c) run in a child process ((e): one per node; the `nodes` group's
/// `nodes-devices` subcommand, which allows every request from its delegate). The PostgreSQL server is a throwaway one
/// started with `scripts/pg-cluster.sh` (one database per setup), or `RSUP_NODES_STORE=<libpq string>` if given.
enum ClusterBenchmark {
    static let group = BenchmarkGroup(
        name: "cluster",
        summary: "SQLite vs PostgreSQL vs two and three nodes on PostgreSQL: registrations/s, request → active, drain → resumed",
        run: run)

    /// Unmeasured requests before the measured ones, each on its own code.
    static let warmUp = 20
    /// How often the supporter's node is asked for the code's state while a request is under way.
    static let pollInterval: Duration = .microseconds(50)
    static let keepalive: Duration = .seconds(600)

    enum Setup: CaseIterable {
        case sqlite, postgres, twoNodes, threeNodes

        var label: String {
            switch self {
            case .sqlite: "(a) 1 node, SQLite"
            case .postgres: "(b) 1 node, PostgreSQL"
            case .twoNodes: "(c) 2 nodes, PostgreSQL: device on 1, supporter on 2"
            case .threeNodes: "(e) 3 nodes, PostgreSQL: devices on all 3, supporter on 1"
            }
        }

        /// Nodes started for the setup.
        var nodeCount: Int {
            switch self {
            case .sqlite, .postgres: 1
            case .twoNodes: 2
            case .threeNodes: 3
            }
        }

        /// The database of the setup (a fresh one each).
        var databaseName: String {
            switch self {
            case .sqlite, .postgres: "rsup_one"
            case .twoNodes: "rsup_two"
            case .threeNodes: "rsup_three"
            }
        }
    }

    struct Row {
        var label: String
        var skipped: String?
        var devices = 0
        /// The child's first dial → every device told it is online (REGISTER_RESULT success, after the commit).
        var registrationSeconds = Double.nan
        /// The child's ready line → the supporter's node lists every code `online` (its view of the other node).
        var visibleLagSeconds = Double.nan
        /// `requestConnection` called on the supporter's node → that node's `code(_:)` says `active`.
        var active = NodesBenchmark.Latencies()
        /// `requestConnection` called → the `.connected` event on the node holding the device.
        var holderConnected = NodesBenchmark.Latencies()
        var failures = 0
        var firstFailure: String?

        var registrationRate: Double { Double(devices) / registrationSeconds }
    }

    struct Failover {
        var rounds = 0
        /// `shutdown()` of node 1 called → the device reports reconnecting (it heard GOAWAY `resume_elsewhere`).
        var heard = NodesBenchmark.Latencies()
        /// `shutdown()` called → the device reports resumed, through node 2.
        var deviceOnline = NodesBenchmark.Latencies()
        /// `shutdown()` called → node 2 lists the code `online`, held by itself.
        var nodeView = NodesBenchmark.Latencies()
        /// Joins refused (e.g. `session_code_in_use` while node 1's presence row was still there) and tried again.
        var retries = 0
        var failures = 0
        var firstFailure: String?
    }

    static func environmentInteger(_ name: String, default value: Int, minimum: Int = 1) -> Int {
        guard let text = getenv(name).map({ String(cString: $0) }), let parsed = Int(text) else { return value }
        return max(parsed, minimum)
    }

    // MARK: the group

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        let devices = environmentInteger("RSUP_CLUSTER_DEVICES", default: 1_000, minimum: warmUp + 1)
        let sessions = min(environmentInteger("RSUP_CLUSTER_SESSIONS", default: 200), devices - warmUp)
        let failoverRounds = environmentInteger("RSUP_CLUSTER_FAILOVERS", default: 5, minimum: 0)
        print(
            "== cluster: one node on SQLite, one on PostgreSQL, two and three on one PostgreSQL (N = \(Format.grouped(devices)) devices,"
                + " M = \(sessions) sessions; RSUP_CLUSTER_DEVICES, RSUP_CLUSTER_SESSIONS, RSUP_CLUSTER_FAILOVERS) ==")
        _ = ProcessInfoLite.raiseFileLimit()
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   cluster: cannot make certificates; skipped\n")
            return
        }
        defer { if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() } }

        let database = BenchmarkDatabase.start()
        switch database {
        case .success(let database): print("PostgreSQL: \(database.origin)")
        case .failure(let reason): print("PostgreSQL: unavailable: \(reason)")
        }
        defer { if case .success(let database) = database { database.stop() } }
        print()

        var rows: [Row] = []
        for setup in Setup.allCases {
            var store: String?
            if setup != .sqlite {
                switch database {
                case .failure(let reason):
                    rows.append(Row(label: setup.label, skipped: "skipped: PostgreSQL could not be started (\(reason))"))
                    continue
                case .success(let database):
                    switch database.fresh(setup.databaseName) {
                    case .failure(let reason):
                        rows.append(Row(label: setup.label, skipped: "skipped: \(reason)"))
                        continue
                    case .success(let connectionString): store = connectionString
                    }
                }
            }
            rows.append(measure(setup, store: store, devices: devices, sessions: sessions, directory: directory))
        }
        var failover: Failover?
        var failoverSkipped: String?
        if failoverRounds > 0 {
            switch database {
            case .failure(let reason): failoverSkipped = "skipped: PostgreSQL could not be started (\(reason))"
            case .success(let database):
                switch database.fresh("rsup_failover") {
                case .failure(let reason): failoverSkipped = "skipped: \(reason)"
                case .success(let store): failover = measureFailover(store: store, rounds: failoverRounds, directory: directory)
                }
            }
        }
        printTable(rows, failover: failover, failoverSkipped: failoverSkipped, devices: devices, sessions: sessions)
    }

    // MARK: (a)–(c)

    static func makeNode(store: String?, directory: String, name: String) -> Result<SupporterNode, SupporterNodeError> {
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
        configuration.port = 0
        configuration.loopCount = 2
        configuration.keepaliveInterval = keepalive
        var storeConfiguration = StoreConfiguration(path: directory + "/store-\(name).sqlite")
        if let store { storeConfiguration.backend = .postgres(store) }
        do throws(SupporterNodeError) {
            let opened = try storeConfiguration.openForNode()
            let node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            try node.start()
            return .success(node)
        } catch {
            return .failure(error)
        }
    }

    /// Waits until `listener` hears what `writer` commits: creates a probe code on `writer` until `listener` knows it
    /// (at most 20 tries of 250 ms). Needed because a node loads the database at start but LISTENs a little later, on
    /// its own thread, and reads nothing again at that first LISTEN: a change committed in between never reaches it.
    static func waitForListener(_ listener: SupporterNode, hearing writer: SupporterNode) -> Bool {
        for _ in 0..<20 {
            guard let probe = blockingAwait({ try? await writer.createCode(type: .remoteSupport, description: "probe").code })
            else { return false }
            if waitUntil(timeout: .milliseconds(250), { listener.code(probe) != nil }) { return true }
        }
        return false
    }

    /// Polls `condition` every `interval` until it holds (true) or `timeout` passes (false).
    static func waitUntil(
        timeout: Duration, interval: Duration = .milliseconds(5), _ condition: () -> Bool
    ) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            ProcessInfoLite.sleep(interval)
        }
        return true
    }

    static func measure(_ setup: Setup, store: String?, devices count: Int, sessions: Int, directory: String) -> Row {
        var row = Row(label: setup.label, devices: count)
        func skip(_ reason: String) -> Row {
            row.skipped = "failed: " + reason
            return row
        }
        var nodes: [SupporterNode] = []
        defer { for node in nodes { node.shutdown() } }
        for index in 1...setup.nodeCount {
            switch makeNode(store: store, directory: directory, name: "\(setup)-\(index)") {
            case .success(let node): nodes.append(node)
            case .failure(let error): return skip("cannot start node \(index): \(error)")
            }
        }
        for listener in nodes {
            for writer in nodes where writer !== listener {
                guard waitForListener(listener, hearing: writer) else {
                    return skip("the nodes did not hear each other's changes within 5 s")
                }
            }
        }
        // (c): every device on node 1, the supporter on node 2. (e): device i on node i mod 3, the supporter on node 1
        // (two requests in three routed). Otherwise one node does both.
        let holders = setup == .threeNodes ? nodes : [nodes[0]]
        let supporter = setup == .twoNodes ? nodes[1] : nodes[0]
        let routed = setup == .twoNodes || setup == .threeNodes

        let recorder = EventRecorder()
        let consumers = holders.map { holder in
            let events = holder.events
            return Task.detached { await recorder.consume(events) }
        }
        defer { for consumer in consumers { consumer.cancel() } }

        var tokens: [String] = []
        for holder in holders {
            guard let token = try? holder.issueAPIToken() else { return skip("cannot issue an API token") }
            tokens.append(token)
        }
        let creator = nodes[0]
        let created: [String]? = blockingAwait {
            var codes: [String] = []
            for _ in 0..<count {
                guard let info = try? await creator.createCode(type: .remoteSupport) else { return nil }
                codes.append(info.code)
            }
            return codes
        }
        guard let codes = created else { return skip("cannot create \(count) codes") }
        // Every node must know every code before a device or supporter uses one (the others learn them by NOTIFY).
        guard waitUntil(timeout: .seconds(30), { codes.allSatisfy { code in nodes.allSatisfy { $0.code(code) != nil } } }) else {
            return skip("the nodes did not learn the \(count) codes within 30 s")
        }
        // One device child per holding node, all started before any is waited for: they register at the same time.
        var children: [ChildProcess] = []
        defer {
            for child in children {
                child.closeInput()
                child.wait()
            }
        }
        for (index, holder) in holders.enumerated() {
            let share = codes.enumerated().filter { $0.offset % holders.count == index }.map(\.element)
            let codesFile = directory + "/cluster-codes-\(index).txt"
            guard NodesBenchmark.writeLines(share, to: codesFile) else { return skip("cannot write \(codesFile)") }
            guard let port = holder.port else { return skip("node \(index + 1) has no port") }
            guard
                let child = ChildProcess(
                    "/proc/self/exe",
                    ["Benchmarks", NodesBenchmark.subcommand, "--port", "\(port)", "--token", tokens[index], "--codes", codesFile,
                     "--stamps", directory + "/cluster-stamps-\(index).txt", "--ca", directory + "/ca.pem", "--loops",
                     "\(NodesBenchmark.childLoops)", "--concurrency", "\(NodesBenchmark.childConcurrency)"],
                    captureOutput: true, pipeInput: true, inheritStandardError: true)
            else { return skip("cannot start the device child process") }
            children.append(child)
        }
        var slowest = 0.0
        for child in children {
            guard let ready = child.readLine(timeout: .seconds(600)), ready.hasPrefix("ready") else {
                return skip("a device child did not report ready")
            }
            let fields = NodesBenchmark.parseFields(ready)
            if let failed = fields["failed"].flatMap({ Int($0) }), failed > 0 {
                return skip("\(failed) device(s) failed to come online: \(fields["error"] ?? "?")")
            }
            // The children ran side by side: the registrations took as long as the slowest.
            slowest = max(slowest, fields["seconds"].flatMap { Double($0) } ?? .nan)
        }
        let readyAt = ContinuousClock.now
        row.registrationSeconds = slowest
        guard waitUntil(timeout: .seconds(30), { recorder.online >= count }) else {
            return skip("the holding nodes reported only \(recorder.online) of \(count) devices online")
        }
        guard waitUntil(timeout: .seconds(30), interval: .milliseconds(1), { codes.allSatisfy { supporter.code($0)?.state == .online } })
        else { return skip("the supporter's node did not list all \(count) codes online within 30 s") }
        if routed { row.visibleLagSeconds = readyAt.duration(to: .now).seconds }
        ProcessInfoLite.sleep(.milliseconds(500))  // let the registration storm's leftovers settle

        // A fixed pseudo-random order of the codes, so the requests spread over every loop of both sides.
        var order = Array(codes.indices)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in order.indices.reversed() where index > 0 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            order.swapAt(index, Int((seed >> 33) % UInt64(index + 1)))
        }
        for (index, codeIndex) in order.prefix(warmUp + sessions).enumerated() {
            let code = codes[codeIndex]
            let start = ContinuousClock.now
            let failure: String? = blockingAwait {
                do throws(SupporterNodeError) {
                    _ = try await supporter.requestConnection(code: code, supporterName: "Bench", type: .screenShare)
                    return nil
                } catch {
                    return error.description
                }
            }
            var active: ContinuousClock.Instant?
            if failure == nil,
                waitUntil(timeout: .seconds(10), interval: pollInterval, { supporter.code(code)?.state == .active })
            {
                active = .now
            }
            guard index >= warmUp else { continue }
            guard failure == nil, let active else {
                row.failures += 1
                row.firstFailure = row.firstFailure ?? (failure ?? "\(code): not active on the supporter's node within 10 s")
                continue
            }
            row.active.add(start.duration(to: active))
            if waitUntil(timeout: .seconds(2), interval: .microseconds(200), { recorder.connectedAt(code) != nil }),
                let connected = recorder.connectedAt(code)
            {
                row.holderConnected.add(start.duration(to: connected))
            }
        }
        return row
    }

    // MARK: (d) clean stop

    static func measureFailover(store: String, rounds: Int, directory: String) -> Failover {
        var result = Failover()
        let tls = TLSConfiguration.makeClientConfiguration(trustRoots: .file(directory + "/ca.pem"), serverName: "localhost")
        for round in 0..<rounds {
            func failed(_ text: String) {
                result.failures += 1
                result.firstFailure = result.firstFailure ?? "round \(round + 1): " + text
            }
            guard case .success(let first) = makeNode(store: store, directory: directory, name: "failover-\(round)-1"),
                case .success(let second) = makeNode(store: store, directory: directory, name: "failover-\(round)-2")
            else {
                failed("cannot start the two nodes")
                continue
            }
            let firstStopped = Atomic<Bool>(false)
            defer {
                if !firstStopped.load(ordering: .acquiring) { first.shutdown() }
                second.shutdown()
            }
            guard waitForListener(second, hearing: first), waitForListener(first, hearing: second) else {
                failed("the two nodes did not hear each other's changes within 5 s")
                continue
            }
            guard let firstPort = first.port, let secondPort = second.port, let firstID = first.clusterNodeID,
                let token = try? first.issueAPIToken(),
                let code = blockingAwait({ try? await first.createCode(type: .remoteSupport).code })
            else {
                failed("cannot set the nodes up")
                continue
            }
            guard waitUntil(timeout: .seconds(10), { second.code(code) != nil && second.scope(ofToken: token) == .device })
            else {
                failed("node 2 did not learn the code and token")
                continue
            }
            var configuration = DeviceConfiguration(
                host: "127.0.0.1", port: firstPort, tls: tls, apiToken: token, deviceName: "failover-device")
            configuration.alternateNodes = [NodeAddress(host: "127.0.0.1", port: secondPort)]
            configuration.connectTimeout = .seconds(3)
            guard let device = try? DeviceNode(configuration: configuration) else {
                failed("cannot make the device node")
                continue
            }
            let delegate = RejoiningDelegate(node: device, code: code)
            delegate.join()
            guard waitUntil(timeout: .seconds(10), { delegate.onlineCount >= 1 && second.code(code)?.node == firstID })
            else {
                failed("the device did not come online on node 1 (\(delegate.lastFailure ?? "no failure reported"))")
                delegate.leave()
                continue
            }
            let stopped = ContinuousClock.now
            let shutdownDone = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                first.shutdown()
                firstStopped.store(true, ordering: .releasing)
                shutdownDone.signal()
            }
            let onSecond = waitUntil(timeout: .seconds(30), interval: .microseconds(100)) {
                guard let info = second.code(code) else { return false }
                return info.state == .online && info.node == nil
            }
            let nodeView = ContinuousClock.now
            shutdownDone.wait()
            if onSecond, waitUntil(timeout: .seconds(5), { delegate.resumed != nil }), delegate.heardGoingAway == nil,
                let heard = delegate.reconnecting, let online = delegate.resumed
            {
                result.rounds += 1
                result.heard.add(stopped.duration(to: heard))
                result.deviceOnline.add(stopped.duration(to: online))
                result.nodeView.add(stopped.duration(to: nodeView))
                result.retries += delegate.retries
            } else {
                failed(
                    (delegate.heardGoingAway != nil
                        ? "the session ended with going_away instead of resuming ("
                        : "the device did not resume on node 2 within 30 s of the stop (")
                        + "\(delegate.lastFailure ?? "no failure reported"))")
            }
            delegate.leave()
            withExtendedLifetime(device) {}
        }
        return result
    }

    // MARK: output

    static func printTable(_ rows: [Row], failover: Failover?, failoverSkipped: String?, devices: Int, sessions: Int) {
        func ms(_ microseconds: Double) -> String { microseconds.isNaN ? "–" : Format.fixed(microseconds / 1000, 2) }
        var table = TablePrinter(
            title: "cluster: registrations and request → active, one table (ms unless noted)",
            columns: [
                .init(title: "setup", alignment: .left),
                .init(title: "registered/s", alignment: .right),
                .init(title: "seen on supp. node +ms", alignment: .right),
                .init(title: "req → active p50", alignment: .right), .init(title: "p99", alignment: .right),
                .init(title: "holder .connected p50", alignment: .right), .init(title: "p99", alignment: .right),
                .init(title: "n", alignment: .right), .init(title: "fail", alignment: .right),
            ])
        var notes: [String] = []
        for row in rows {
            if let skipped = row.skipped {
                table.addRow([row.label, "–", "–", "–", "–", "–", "–", "–", "–"])
                notes.append("\(row.label): \(skipped)")
                continue
            }
            table.addRow([
                row.label, Format.rate(row.registrationRate),
                row.visibleLagSeconds.isNaN ? "–" : Format.fixed(row.visibleLagSeconds * 1000, 0),
                ms(row.active.percentile(50)), ms(row.active.percentile(99)),
                ms(row.holderConnected.percentile(50)), ms(row.holderConnected.percentile(99)),
                Format.grouped(row.active.microseconds.count), Format.grouped(row.failures),
            ])
            if let first = row.firstFailure { notes.append("\(row.label): first failure: \(first)") }
        }
        let failoverLabel = "(d) drain of node 1 → session resumed on node 2"
        if let failover, failover.rounds > 0 {
            table.addRow([
                failoverLabel + " (p50 / max of \(failover.rounds))", "–", "–",
                ms(failover.nodeView.percentile(50)), ms(failover.nodeView.maximum), "–", "–",
                Format.grouped(failover.rounds), Format.grouped(failover.failures),
            ])
            func pair(_ latencies: NodesBenchmark.Latencies) -> String {
                ms(latencies.percentile(50)) + " / " + ms(latencies.maximum) + " ms"
            }
            notes.append(
                "(d) per round, p50 / max: stop → device reconnecting \(pair(failover.heard)); → device resumed "
                    + "\(pair(failover.deviceOnline)); → node 2 lists it online, held by itself \(pair(failover.nodeView)) "
                    + "(the row's figure); sessions ended instead (lost): \(failover.failures)")
            if let first = failover.firstFailure { notes.append("(d) first failure: \(first)") }
        } else {
            table.addRow([failoverLabel, "–", "–", "–", "–", "–", "–", "–", "–"])
            notes.append(
                "(d): " + (failoverSkipped ?? failover?.firstFailure.map { "failed: \($0)" } ?? "skipped (RSUP_CLUSTER_FAILOVERS=0)"))
        }
        table.print()
        for note in notes { print("   " + note) }
        print(
            """
               Method: every node runs in this process (2 loops each, TLS 1.3 on loopback, keepalive \(keepalive.components.seconds) s); the \(Format.grouped(devices))
               devices of (a)–(c) run in a child process (`\(NodesBenchmark.subcommand)`: \(NodesBenchmark.childLoops) loops, one TLSContext, at most
               \(NodesBenchmark.childConcurrency) dials at once), all registered on node 1 ((e): one child per node, device i on node i mod 3;
               registered/s is N over the slowest child's time), each allowing every request at once from its delegate.
               registered/s: N / (the child's first dial → every device told it is online; the node answers a
               REGISTER only after the device_online audit row and, on PostgreSQL, the presence row are committed).
               seen on supp. node: after that, until the supporter's node lists all N codes `online` (node 2 learns
               presence by LISTEN/NOTIFY; – for one node). req → active: \(warmUp) unmeasured requests, then \(sessions) one at a
               time, each on its own code: from just before `requestConnection` on the supporter's node (node 2 in
               (c), which routes it to node 1 through the database) until that node's `code(_:)` says `active`,
               polled every \(pollInterval.components.attoseconds / 1_000_000_000_000) µs; it is the supporter's own view in every row (node 2 gets no `.connected` event
               for a device on node 1, only the state). holder .connected: the same start until the `.connected`
               event of node 1, the node holding the device. (d): two fresh nodes on PostgreSQL per round, one
               in-process device joined on node 1 with node 2 in `alternateNodes`; node 1's `shutdown()` (a drain,
               SPEC §15.5: the session's state and the release of its presence committed, then GOAWAY going_away
               with resume_elsewhere) is called on another thread, and the figure is call → node 2 lists the code
               `online` with the device held by itself. The device treats the GOAWAY as a link loss and resumes at
               once: node 1 (refused, it no longer listens), then node 2, which takes the session over. A round whose
               session ends with going_away instead counts as a failure (a lost session).
               A node that dies without a clean stop is not measured: its devices wait for the presence lease.
               (c), (d): before anything else, each node is shown to hear the other's commits (a probe code made on
               one until the other lists it).

            """)
    }
}

/// The device of the failover measurement: joins its code, notes when it reconnects and resumes, and joins again
/// should the node end the registration with `going_away` instead (as an app would; the round then fails). Every
/// callback runs on one serial queue.
private final class RejoiningDelegate: DeviceSessionDelegate {
    private struct State {
        var session: DeviceSession?
        var onlineCount = 0
        var lastOnline: ContinuousClock.Instant?
        var heardGoingAway: ContinuousClock.Instant?
        var reconnecting: ContinuousClock.Instant?
        var resumed: ContinuousClock.Instant?
        var retries = 0
        var lastFailure: String?
        var leaving = false
    }

    let node: DeviceNode
    let code: String
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "bench-failover-device")

    init(node: DeviceNode, code: String) {
        self.node = node
        self.code = code
    }

    var onlineCount: Int { state.withLock { $0.onlineCount } }
    var lastOnline: ContinuousClock.Instant? { state.withLock { $0.lastOnline } }
    var heardGoingAway: ContinuousClock.Instant? { state.withLock { $0.heardGoingAway } }
    var reconnecting: ContinuousClock.Instant? { state.withLock { $0.reconnecting } }
    var resumed: ContinuousClock.Instant? { state.withLock { $0.resumed } }

    func sessionIsReconnecting(_ session: DeviceSession) {
        let now = ContinuousClock.now
        state.withLock { $0.reconnecting = $0.reconnecting ?? now }
    }

    func sessionDidResume(_ session: DeviceSession) {
        let now = ContinuousClock.now
        state.withLock { $0.resumed = $0.resumed ?? now }
    }
    var retries: Int { state.withLock { $0.retries } }
    var lastFailure: String? { state.withLock { $0.lastFailure } }

    func join() {
        guard !state.withLock({ $0.leaving }) else { return }
        do {
            let session = try node.connect(toSessionCode: code, delegate: self)
            state.withLock { $0.session = session }
        } catch {
            // The previous registration is still winding down: try again in a moment.
            state.withLock { $0.lastFailure = "\(error)" }
            queue.asyncAfter(deadline: .now() + .milliseconds(1)) { self.join() }
        }
    }

    func leave() {
        let session = state.withLock { state -> DeviceSession? in
            state.leaving = true
            defer { state.session = nil }
            return state.session
        }
        session?.leave()
    }

    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) { request.reject() }

    func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {
        let now = ContinuousClock.now
        state.withLock {
            $0.onlineCount += 1
            $0.lastOnline = now
        }
    }

    func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?) {
        let now = ContinuousClock.now
        guard reason == .goingAway else { return }
        state.withLock { $0.heardGoingAway = $0.heardGoingAway ?? now }
        join()
    }

    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {
        let retry = state.withLock { state -> Bool in
            state.lastFailure = "\(failure.reason): \(failure.message)"
            guard state.heardGoingAway != nil, state.retries < 100, !state.leaving else { return false }
            state.retries += 1
            return true
        }
        if retry { queue.asyncAfter(deadline: .now() + .milliseconds(20)) { self.join() } }
    }
}

/// The PostgreSQL server the group uses: a throwaway one (`scripts/pg-cluster.sh start`, stopped at the end) or the
/// one `RSUP_NODES_STORE` names.
struct BenchmarkDatabase {
    let connectionString: String
    /// The folder of a server this run started; nil for `RSUP_NODES_STORE`.
    let folder: String?
    let script: String?

    var origin: String {
        folder.map { "a throwaway cluster (scripts/pg-cluster.sh start \($0)), one database per setup" }
            ?? "RSUP_NODES_STORE (\(StoreBackend.redacted(connectionString))), shared by every setup"
    }

    static func start() -> Result<BenchmarkDatabase, Failure> {
        if let given = getenv("RSUP_NODES_STORE").map({ String(cString: $0) }), !given.isEmpty, given != "memory" {
            return .success(BenchmarkDatabase(connectionString: given, folder: nil, script: nil))
        }
        guard let script = TLSFixture.locateScript("scripts/pg-cluster.sh") else {
            return .failure(Failure("scripts/pg-cluster.sh not found"))
        }
        // Not under the run's own temporary folder: that one is root's alone (0700), and as root the script runs the
        // server as the `postgres` user, which must reach its folder.
        let folder = "/tmp/rsup-bench-pg-\(getpid())"
        // Its error message (on stderr) is the reason shown for the skipped rows.
        let command = "bash \"$0\" start \"$1\" 2>&1"
        guard let child = ChildProcess("bash", ["bash", "-c", command, script, folder], captureOutput: true) else {
            return .failure(Failure("cannot run scripts/pg-cluster.sh"))
        }
        let output = child.readAll()
        let status = child.wait()
        let lines = output.split(separator: "\n").map(String.init)
        guard status == 0, let line = lines.last(where: { $0.hasPrefix("host=") }) else {
            let said = lines.last ?? "no output"
            return .failure(Failure("scripts/pg-cluster.sh start exited with \(status): \(said)"))
        }
        return .success(BenchmarkDatabase(connectionString: line, folder: folder, script: script))
    }

    /// A connection string for a new, empty database `name` on a server this run started; the given one otherwise.
    func fresh(_ name: String) -> Result<String, Failure> {
        guard folder != nil else { return .success(connectionString) }
        do throws(PostgresError) {
            let connection = try PostgresConnection(connectionString)
            defer { connection.close() }
            _ = try connection.query("CREATE DATABASE \(name)")
        } catch {
            return .failure(Failure("CREATE DATABASE \(name): \(error)"))
        }
        // libpq keeps the last value of a keyword given twice.
        return .success(connectionString + " dbname=\(name)")
    }

    func stop() {
        guard let folder, let script else { return }
        if let child = ChildProcess("bash", ["bash", script, "stop", folder], captureOutput: true) {
            _ = child.readAll()
            child.wait()
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
