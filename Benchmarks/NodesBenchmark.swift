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
import SupportUtilities
import SupportWire
import SupportLink
import SupporterCore
import SupporterREST
import SupportPostgres
import SupportVocabulary
import SupporterModel

/// The `nodes` group: the signalling round trip of a connection request on a supporter node with 1,000 and 10,000
/// devices online: `requestConnection` → CONNECTION_REQUEST → device delegate → `allow()` → CONNECTION_RESPONSE →
/// `.connected` on the node's `events`.
///
/// The supporter node (the code under test) runs in this process. The devices live in a child process (this
/// executable again, hidden subcommand `nodes-devices`): N `DeviceNode`s sharing one `TLSContext` and two event loops,
/// each joined to one code and answering every request with `allow()` from its delegate.
enum NodesBenchmark {
    static let group = BenchmarkGroup(
        name: "nodes",
        summary: "supporter node: request → allow → connected round trip with 1k/10k devices online",
        run: run)

    static let subcommand = "nodes-devices"
    static let counts = [1_000, 10_000]
    /// Requests per sequential mode (each on its own code), and the unmeasured warm-up before them.
    static let sequentialSample = 2_000
    static let warmUp = 100
    /// Sequential modes: the pause between one `.connected` and the next request.
    static let gaps: [Duration] = [.zero, .milliseconds(1)]
    /// Device loops in the child, and devices dialling (not yet online) at once.
    static let childLoops = 2
    static let childConcurrency = 64
    /// Both ends propose it; long, so that keepalive pings do not mix into the measurement.
    static let keepalive: Duration = .seconds(600)

    // MARK: results

    struct Latencies {
        var microseconds: [Double] = []
        mutating func add(_ duration: Duration) { microseconds.append(duration.seconds * 1e6) }
        mutating func add(nanoseconds: Int64) { microseconds.append(Double(nanoseconds) / 1e3) }
        func percentile(_ p: Double) -> Double {
            guard !microseconds.isEmpty else { return .nan }
            let sorted = microseconds.sorted()
            let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(rank, 0), sorted.count - 1)]
        }
        var maximum: Double { microseconds.max() ?? .nan }
        var mean: Double { microseconds.isEmpty ? .nan : microseconds.reduce(0, +) / Double(microseconds.count) }
    }

    struct SequentialResult {
        var gap: Duration
        var roundTrip = Latencies()
        /// requestConnection's own await: the hop to the link's loop, the machine, the send, the resume.
        var callReturn = Latencies()
        /// Request start → the device's delegate got the request (CLOCK_MONOTONIC in both processes).
        var requestLeg = Latencies()
        /// The device's delegate → the node's event consumer saw `.connected`.
        var answerLeg = Latencies()
        var failures = 0
        var firstFailure: String?
        var cpuSecondsPerRequest = Double.nan
        /// Context switches (voluntary + involuntary, every thread) of this process per request.
        var contextSwitchesPerRequest = Double.nan
        /// Each measured request's code and start (CLOCK_MONOTONIC ns), for the legs.
        var starts: [(code: String, monotonic: UInt64)] = []
    }

    struct BurstResult {
        var requests = 0
        var connected = 0
        var seconds = Double.nan
        var callsReturnedSeconds = Double.nan
        var roundTrip = Latencies()
        var failures = 0
        var firstFailure: String?
        var cpuSeconds = Double.nan
        var throughput: Double { seconds > 0 ? Double(connected) / seconds : .nan }
    }

    struct Population {
        var devices = 0
        var online = 0
        var onlineSeconds = Double.nan
        var childReadySeconds = Double.nan
        var error: String?
    }

    // MARK: the group

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        let store = getenv("RSUP_NODES_STORE").map { String(cString: $0) } ?? ""
        let what =
            store == "memory"
            ? " audit store in memory: RSUP_NODES_STORE=memory) =="
            : store.isEmpty ? " audit store in a SQLite file) ==" : " store in PostgreSQL: RSUP_NODES_STORE=<libpq string>) =="
        print("== nodes: supporter node signalling round trip (devices in a child process, loopback TLS 1.3," + what)
        let fileLimit = ProcessInfoLite.raiseFileLimit()
        guard let directory = makeCertificates() else {
            print("   nodes: cannot make certificates; skipped\n")
            return
        }
        defer { if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() } }
        print(
            "certificates: certs/make-dev-certs.sh --out \(directory); RLIMIT_NOFILE soft = \(fileLimit);"
                + " supporter node: 2 loops; child: \(childLoops) device loops, one TLSContext;"
                + " \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPU(s)")
        print()

        var populations: [(mode: String, Population)] = []
        var sequentialRows: [(devices: Int, SequentialResult)] = []
        var burstRows: [(devices: Int, BurstResult)] = []
        for count in counts {
            // Run 1: sequential modes on a sample of the codes (each code used once).
            if let (population, results) = withPopulation(count: count, directory: directory, run: "sequential", { node, recorder, codes in
                sequentialModes(node: node, recorder: recorder, codes: codes)
            }) {
                populations.append(("sequential run", population))
                for result in results ?? [] { sequentialRows.append((count, result)) }
            }
            // Run 2: a fresh node and child; all N requests at once.
            if let (population, result) = withPopulation(count: count, directory: directory, run: "burst", { node, recorder, codes in
                burst(node: node, recorder: recorder, codes: codes)
            }) {
                populations.append(("burst run", population))
                if let result { burstRows.append((count, result)) }
            }
        }
        printTables(populations: populations, sequential: sequentialRows, burst: burstRows)
    }

    /// Starts a supporter node with `count` codes and a child with a device on each; once all are online, runs
    /// `body`, then reads the child's delegate stamps into the recorder results and tears everything down.
    static func withPopulation<R>(
        count: Int, directory: String, run: String,
        _ body: (SupporterNode, EventRecorder, [String]) -> R
    ) -> (Population, R?)? {
        var population = Population(devices: count)
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
        configuration.port = 0
        configuration.loopCount = 2
        configuration.keepaliveInterval = keepalive
        // A real file-backed store (WAL, synchronous=NORMAL), a fresh file per node, in the run's temporary folder.
        // RSUP_NODES_STORE=memory keeps it in memory instead, to tell the store's share from the machine's; a libpq
        // connection string (postgres://… or key=value, e.g. from scripts/pg-cluster.sh) uses PostgreSQL instead.
        let store = getenv("RSUP_NODES_STORE").map { String(cString: $0) } ?? ""
        var storeConfiguration = StoreConfiguration(
            path: store == "memory" ? ":memory:" : directory + "/store-\(count)-\(run).sqlite")
        if !store.isEmpty, store != "memory" { storeConfiguration.backend = .postgres(store) }
        let node: SupporterNode
        do throws(SupporterNodeError) {
            let opened = try storeConfiguration.openForNode()
            node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            try node.start()
        } catch {
            print("   \(count) devices: cannot start the supporter node: \(error)")
            return nil
        }
        defer { node.shutdown() }
        guard let port = node.port else { return nil }
        let recorder = EventRecorder()
        let events = node.events
        let consumer = Task.detached { await recorder.consume(events) }
        defer { consumer.cancel() }
        let watchdog = Task.detached { await recorder.watchdog() }
        defer { watchdog.cancel() }

        guard let token = try? node.issueAPIToken() else { return nil }
        let created: [String]? = blockingAwait {
            var codes: [String] = []
            for _ in 0..<count {
                guard let info = try? await node.createCode(type: .remoteSupport) else { return nil }
                codes.append(info.code)
            }
            return codes
        }
        guard let codes = created else { return nil }
        let codesFile = directory + "/codes-\(count).txt"
        let stampsFile = directory + "/stamps-\(count).txt"
        guard writeLines(codes, to: codesFile) else {
            population.error = "cannot write \(codesFile)"
            return (population, nil)
        }
        let started = ContinuousClock.now
        guard
            let child = ChildProcess(
                "/proc/self/exe",
                ["Benchmarks", subcommand, "--port", "\(port)", "--token", token, "--codes", codesFile, "--stamps",
                 stampsFile, "--ca", directory + "/ca.pem", "--loops", "\(childLoops)", "--concurrency",
                 "\(childConcurrency)"],
                captureOutput: true, pipeInput: true, inheritStandardError: true)
        else {
            population.error = "cannot start the device child process"
            return (population, nil)
        }
        defer {
            child.closeInput()
            child.wait()
        }
        guard let ready = child.readLine(timeout: .seconds(600)), ready.hasPrefix("ready") else {
            population.error = "the device child did not report ready"
            print("   \(count) devices: \(population.error!)")
            return (population, nil)
        }
        population.childReadySeconds = started.duration(to: .now).seconds
        let fields = parseFields(ready)
        if let failed = fields["failed"].flatMap({ Int($0) }), failed > 0 {
            population.error = "\(failed) device(s) failed to come online: \(fields["error"] ?? "?")"
        }
        // The node's own view: every deviceOnline event consumed.
        let deadline = ContinuousClock.now + .seconds(30)
        while recorder.online < count, ContinuousClock.now < deadline { ProcessInfoLite.sleep(.milliseconds(5)) }
        population.online = recorder.online
        population.onlineSeconds = recorder.lastOnline.map { started.duration(to: $0).seconds } ?? .nan
        if let error = population.error { print("   \(count) devices: \(error)") }
        guard population.online == count else {
            print("   \(count) devices: only \(population.online) came online")
            return (population, nil)
        }
        ProcessInfoLite.sleep(.milliseconds(500))  // let the dial storm's leftovers (TLS tickets, logs) settle

        var results = body(node, recorder, codes)

        // The child's stamps (delegate callback times), written when its stdin closes.
        child.closeInput()
        child.wait()
        let stamps = readStamps(stampsFile)
        if var sequential = results as? [SequentialResult] {
            for index in sequential.indices { recorder.splitLegs(into: &sequential[index], deviceStamps: stamps) }
            results = sequential as! R
        }
        return (population, results)
    }

    // MARK: sequential

    static func sequentialModes(node: SupporterNode, recorder: EventRecorder, codes: [String]) -> [SequentialResult] {
        let perMode = min(sequentialSample, (codes.count - warmUp) / gaps.count)
        let needed = warmUp + perMode * gaps.count
        // Spread over all the codes, so over every loop of both sides: a fixed pseudo-random order.
        var order = Array(codes.indices)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in order.indices.reversed() where index > 0 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            order.swapAt(index, Int((seed >> 33) % UInt64(index + 1)))
        }
        let picked = order.prefix(needed).map { codes[$0] }
        var results: [SequentialResult] = []
        _ = sequential(node: node, recorder: recorder, codes: Array(picked[0..<warmUp]), gap: .zero)
        for (index, gap) in gaps.enumerated() {
            let start = warmUp + index * perMode
            results.append(
                sequential(node: node, recorder: recorder, codes: Array(picked[start..<start + perMode]), gap: gap))
        }
        return results
    }

    /// One request at a time: the next starts when the previous one's `.connected` has been consumed (+ `gap`).
    static func sequential(node: SupporterNode, recorder: EventRecorder, codes: [String], gap: Duration)
        -> SequentialResult
    {
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        let switchesBefore = contextSwitches()
        var result = blockingAwait { () async -> SequentialResult in
            var result = SequentialResult(gap: gap)
            for code in codes {
                let startMonotonic = Deadline.now().nanoseconds
                let start = ContinuousClock.now
                do throws(SupporterNodeError) {
                    _ = try await node.requestConnection(code: code, supporterName: "Bench", type: .screenShare)
                } catch {
                    result.failures += 1
                    result.firstFailure = result.firstFailure ?? error.description
                    continue
                }
                let returned = ContinuousClock.now
                switch await recorder.waitConnected(code) {
                case .connected(let at, _):
                    result.roundTrip.add(start.duration(to: at))
                    result.callReturn.add(start.duration(to: returned))
                    result.starts.append((code, startMonotonic))
                case .failed(let why):
                    result.failures += 1
                    result.firstFailure = result.firstFailure ?? why
                }
                if gap > .zero { try? await Task.sleep(for: gap) }
            }
            return result
        }
        result.cpuSecondsPerRequest = (ProcessInfoLite.cpuSeconds() - cpuBefore) / Double(max(codes.count, 1))
        result.contextSwitchesPerRequest = Double(contextSwitches() - switchesBefore) / Double(max(codes.count, 1))
        return result
    }

    // MARK: burst

    /// All requests at once: one task per code, started together; done when every `.connected` is consumed.
    static func burst(node: SupporterNode, recorder: EventRecorder, codes: [String]) -> BurstResult {
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        let target = recorder.connectedCount + codes.count
        var result = blockingAwait { () async -> BurstResult in
            var result = BurstResult(requests: codes.count)
            let start = ContinuousClock.now
            let starts = await withTaskGroup(
                of: (String, ContinuousClock.Instant, String?).self, returning: [(String, ContinuousClock.Instant)].self
            ) { tasks in
                for code in codes {
                    tasks.addTask {
                        let start = ContinuousClock.now
                        do throws(SupporterNodeError) {
                            _ = try await node.requestConnection(code: code, supporterName: "Bench", type: .screenShare)
                            return (code, start, nil)
                        } catch {
                            return (code, start, error.description)
                        }
                    }
                }
                var starts: [(String, ContinuousClock.Instant)] = []
                for await (code, start, failure) in tasks {
                    if let failure {
                        result.failures += 1
                        result.firstFailure = result.firstFailure ?? failure
                    } else {
                        starts.append((code, start))
                    }
                }
                return starts
            }
            result.callsReturnedSeconds = start.duration(to: .now).seconds
            let all = await recorder.waitForConnectedCount(target - result.failures, timeout: .seconds(120))
            let last = recorder.lastConnected
            result.seconds = last.map { start.duration(to: $0).seconds } ?? .nan
            for (code, requestStart) in starts {
                if let at = recorder.connectedAt(code) { result.roundTrip.add(requestStart.duration(to: at)) }
            }
            result.connected = result.roundTrip.microseconds.count
            if !all {
                result.firstFailure = result.firstFailure ?? "timed out: \(result.connected) of \(codes.count) connected"
            }
            return result
        }
        result.failures += recorder.failureCount
        result.firstFailure = result.firstFailure ?? recorder.firstFailure
        result.cpuSeconds = ProcessInfoLite.cpuSeconds() - cpuBefore
        return result
    }

    // MARK: output

    static func printTables(
        populations: [(mode: String, Population)], sequential: [(devices: Int, SequentialResult)],
        burst: [(devices: Int, BurstResult)]
    ) {
        func us(_ value: Double) -> String { Format.fixed(value, 0) }
        var online = TablePrinter(
            title: "(a) bringing N devices online (child dials, \(childConcurrency) dials in flight; TLS + HELLO + REGISTER)",
            columns: [
                .init(title: "devices", alignment: .right), .init(title: "run", alignment: .left),
                .init(title: "online", alignment: .right), .init(title: "all online s", alignment: .right),
                .init(title: "devices/s", alignment: .right),
            ])
        for (mode, population) in populations {
            online.addRow([
                Format.grouped(population.devices), mode, Format.grouped(population.online),
                Format.fixed(population.onlineSeconds, 2),
                Format.rate(Double(population.online) / population.onlineSeconds),
            ])
        }
        online.print()
        print()

        var table = TablePrinter(
            title: "(b) sequential round trip, µs: requestConnection → device delegate → allow() → .connected consumed",
            columns: [
                .init(title: "devices", alignment: .right), .init(title: "gap", alignment: .right),
                .init(title: "requests", alignment: .right), .init(title: "p50", alignment: .right),
                .init(title: "p90", alignment: .right), .init(title: "p99", alignment: .right),
                .init(title: "max", alignment: .right), .init(title: "mean", alignment: .right),
                .init(title: "fail", alignment: .right), .init(title: "node CPU µs/req", alignment: .right),
                .init(title: "node cswitch/req", alignment: .right),
            ])
        for (devices, result) in sequential {
            let r = result.roundTrip
            table.addRow([
                Format.grouped(devices), result.gap == .zero ? "0" : "\(Format.fixed(result.gap.seconds * 1000, 0)) ms",
                Format.grouped(r.microseconds.count), us(r.percentile(50)), us(r.percentile(90)), us(r.percentile(99)),
                us(r.maximum), us(r.mean), Format.grouped(result.failures), us(result.cpuSecondsPerRequest * 1e6),
                Format.fixed(result.contextSwitchesPerRequest, 1),
            ])
        }
        table.print()
        for (devices, result) in sequential where result.firstFailure != nil {
            print("   \(devices) devices: first failure: \(result.firstFailure!)")
        }
        print()

        var legs = TablePrinter(
            title: "(c) where the sequential round trip goes, µs (p50 / p99), CLOCK_MONOTONIC stamps in both processes",
            columns: [
                .init(title: "devices", alignment: .right), .init(title: "gap", alignment: .right),
                .init(title: "requestConnection returns", alignment: .right),
                .init(title: "start → device delegate", alignment: .right),
                .init(title: "device delegate → .connected", alignment: .right),
            ])
        for (devices, result) in sequential {
            func pair(_ l: Latencies) -> String { us(l.percentile(50)) + " / " + us(l.percentile(99)) }
            legs.addRow([
                Format.grouped(devices), result.gap == .zero ? "0" : "\(Format.fixed(result.gap.seconds * 1000, 0)) ms",
                pair(result.callReturn), pair(result.requestLeg), pair(result.answerLeg),
            ])
        }
        legs.print()
        print()

        var bursts = TablePrinter(
            title: "(d) burst: all N requests at once (one task each); per-request times include queueing",
            columns: [
                .init(title: "devices", alignment: .right), .init(title: "requests", alignment: .right),
                .init(title: "connected", alignment: .right), .init(title: "calls returned ms", alignment: .right),
                .init(title: "all connected ms", alignment: .right), .init(title: "requests/s", alignment: .right),
                .init(title: "p50 ms", alignment: .right), .init(title: "p99 ms", alignment: .right),
                .init(title: "max ms", alignment: .right), .init(title: "node CPU µs/req", alignment: .right),
                .init(title: "fail", alignment: .right),
            ])
        for (devices, result) in burst {
            let r = result.roundTrip
            bursts.addRow([
                Format.grouped(devices), Format.grouped(result.requests), Format.grouped(result.connected),
                Format.fixed(result.callsReturnedSeconds * 1000, 1), Format.fixed(result.seconds * 1000, 1),
                Format.rate(result.throughput), Format.fixed(r.percentile(50) / 1000, 1),
                Format.fixed(r.percentile(99) / 1000, 1), Format.fixed(r.maximum / 1000, 1),
                us(result.cpuSeconds * 1e6 / Double(max(result.requests, 1))), Format.grouped(result.failures),
            ])
        }
        bursts.print()
        for (devices, result) in burst where result.firstFailure != nil {
            print("   \(devices) devices: first failure: \(result.firstFailure!)")
        }
        print(
            """
               Method: this process runs the SupporterNode (2 loops, keepalive \(keepalive.components.seconds) s, port 0, a fresh SQLite store file per
               node in a temporary folder: WAL, synchronous=NORMAL, hash-chained audit rows) and one task
               consuming `events`, which stamps every `.connected` with ContinuousClock as it arrives. The devices run in
               `/proc/self/exe \(subcommand)` (\(childLoops) shared EventLoops, one shared TLSContext, one DeviceNode + DeviceSession
               per code, default per-session delegate queue; the delegate calls `request.allow()` at once). The child
               prints a ready line when every session reported sessionCodeOnline; (a) is spawn → the node's last
               `.deviceOnline` event. Sequential: \(warmUp) unmeasured warm-up requests, then up to \(sequentialSample) per gap, each on its
               own code (a fixed pseudo-random order, so spread over all loops); a request is timed from just before
               `requestConnection` to the consumer's stamp; the next starts after `.connected` was consumed plus the gap.
               (c): the child stamps CLOCK_MONOTONIC in the delegate callback; the parent stamps the request start.
               Burst: a fresh node and child; N tasks each call requestConnection at once; "all connected" is
               start → last `.connected` stamp. CPU and context switches: this process only (node + consumer + requests).

            """)
    }

    // MARK: helpers

    static func contextSwitches() -> Int {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_nvcsw + usage.ru_nivcsw
    }

    static func makeCertificates() -> String? {
        var template = Array("/tmp/rsup-bench-nodes-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        let directory = String(cString: made)
        guard let script = TLSFixture.locateScript("certs/make-dev-certs.sh"),
            let child = ChildProcess("bash", ["bash", script, "--out", directory], captureOutput: true)
        else { return nil }
        _ = child.readAll()
        return child.wait() == 0 ? directory : nil
    }

    static func writeLines(_ lines: [String], to path: String) -> Bool {
        guard let file = fopen(path, "w") else { return false }
        defer { fclose(file) }
        for line in lines { fputs(line + "\n", file) }
        return true
    }

    static func readLines(_ path: String) -> [String] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var lines: [String] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            var text = String(cString: line)
            while text.last == "\n" { text.removeLast() }
            if !text.isEmpty { lines.append(text) }
        }
        return lines
    }

    /// `code monotonic-ns` lines from the child.
    static func readStamps(_ path: String) -> [String: UInt64] {
        var stamps: [String: UInt64] = [:]
        for line in readLines(path) {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = UInt64(parts[1]) { stamps[String(parts[0])] = value }
        }
        return stamps
    }

    static func parseFields(_ line: String) -> [String: String] {
        var fields: [String: String] = [:]
        for field in line.split(separator: " ").dropFirst() {
            let parts = field.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    // MARK: the child

    /// `nodes-devices --port P --token T --codes FILE --stamps FILE --ca PATH [--loops L] [--concurrency C]`: joins
    /// each code with its own DeviceNode, prints `ready online=N failed=F seconds=S [error=...]` once all are online,
    /// allows every request from the delegate (stamping CLOCK_MONOTONIC), and when stdin closes writes the stamps and
    /// exits.
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0
        var token = ""
        var codesPath = ""
        var stampsPath = ""
        var caPath = ""
        var loopCount = 2
        var concurrency = 64
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--token": token = value
            case "--codes": codesPath = value
            case "--stamps": stampsPath = value
            case "--ca": caPath = value
            case "--loops": loopCount = max(1, Int(value) ?? 2)
            case "--concurrency": concurrency = max(1, Int(value) ?? 64)
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        let codes = readLines(codesPath)
        let tls = TLSConfiguration.makeClientConfiguration(trustRoots: .file(caPath), serverName: "localhost")
        let context: TLSContext
        var loops: [EventLoop] = []
        do throws(TransportError) {
            context = try TLSContext(tls)
            for index in 0..<loopCount { loops.append(try EventLoop.start(name: "bench-device-\(index)")) }
        } catch {
            writeStandardOutput("ready online=0 failed=\(codes.count) error=\(error.description.underscored)")
            exit(1)
        }
        let delegate = AllowingDelegate(slots: DispatchSemaphore(value: concurrency))
        var nodes: [DeviceNode] = []
        var sessions: [DeviceSession] = []
        nodes.reserveCapacity(codes.count)
        sessions.reserveCapacity(codes.count)
        let started = ContinuousClock.now
        for (index, code) in codes.enumerated() {
            delegate.slots.wait()
            var configuration = DeviceConfiguration(
                host: "127.0.0.1", port: port, tls: tls, apiToken: token, deviceName: "bench-device-\(index)")
            configuration.eventLoop = loops[index % loops.count]
            configuration.capabilities = [Feature(.screenShare), Feature(.voip)]
            configuration.keepaliveInterval = keepalive
            configuration.connectTimeout = .seconds(60)
            do {
                let node = try DeviceNode(configuration: configuration, tlsContext: context)
                nodes.append(node)
                sessions.append(try node.connect(toSessionCode: code, delegate: delegate))
            } catch {
                delegate.fail(String(describing: error))
            }
        }
        // Wait for the last ones.
        for _ in 0..<concurrency { delegate.slots.wait() }
        let online = delegate.online.load(ordering: .relaxed)
        var line = "ready online=\(online) failed=\(delegate.failed.load(ordering: .relaxed))"
        line += " seconds=\(Format.fixed(started.duration(to: .now).seconds, 2))"
        if let error = delegate.firstError.withLock({ $0 }) { line += " error=" + error.underscored }
        writeStandardOutput(line)
        // Serve requests until the parent closes our stdin.
        var byte: UInt8 = 0
        while true {
            let result = read(0, &byte, 1)
            if result == 0 || (result < 0 && errno != EINTR) { break }
        }
        let stamps = delegate.stamps.withLock { $0 }
        _ = writeLines(stamps.map { "\($0.key) \($0.value)" }, to: stampsPath)
        withExtendedLifetime((nodes, sessions)) {}
        _exit(0)
    }
}

/// The child's delegate, shared by every session: counts sessions online (releasing a dial slot), allows every
/// request at once and stamps when it came.
private final class AllowingDelegate: DeviceSessionDelegate {
    let slots: DispatchSemaphore
    let online = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    let firstError = Mutex<String?>(nil)
    let stamps = Mutex<[String: UInt64]>([:])

    init(slots: DispatchSemaphore) { self.slots = slots }

    func fail(_ text: String) {
        failed.wrappingAdd(1, ordering: .relaxed)
        firstError.withLock { $0 = $0 ?? text }
        slots.signal()
    }

    func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {
        online.wrappingAdd(1, ordering: .relaxed)
        slots.signal()
    }

    func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {
        let now = Deadline.now().nanoseconds
        request.allow()
        stamps.withLock { $0[session.code] = now }
    }

    func session(_ session: DeviceSession, didFail failure: DeviceSessionFailure) {
        // Before online: a failed dial or registration. After: counted too (it should not happen here).
        fail("\(session.code): \(failure)")
    }
}

/// Consumes the supporter node's events in one task: stamps every `.connected` as it arrives and wakes whoever waits
/// for it.
final class EventRecorder: Sendable {
    enum Outcome: Sendable {
        case connected(ContinuousClock.Instant, monotonic: UInt64)
        case failed(String)
    }

    private struct Waiter {
        let continuation: CheckedContinuation<Outcome, Never>
        let since: ContinuousClock.Instant
    }

    private struct State {
        var online = 0
        var lastOnline: ContinuousClock.Instant?
        var outcomes: [String: Outcome] = [:]
        var connectedCount = 0
        var lastConnected: ContinuousClock.Instant?
        var failureCount = 0
        var firstFailure: String?
        var waiters: [String: Waiter] = [:]
        var countWaiter: (target: Int, continuation: CheckedContinuation<Bool, Never>)?
    }

    private let state = Mutex(State())

    var online: Int { state.withLock { $0.online } }
    var lastOnline: ContinuousClock.Instant? { state.withLock { $0.lastOnline } }
    var connectedCount: Int { state.withLock { $0.connectedCount } }
    var lastConnected: ContinuousClock.Instant? { state.withLock { $0.lastConnected } }
    var failureCount: Int { state.withLock { $0.failureCount } }
    var firstFailure: String? { state.withLock { $0.firstFailure } }

    func connectedAt(_ code: String) -> ContinuousClock.Instant? {
        state.withLock { if case .connected(let at, _) = $0.outcomes[code] { at } else { nil } }
    }

    func consume(_ events: AsyncStream<SupporterNodeEvent>) async {
        for await event in events {
            let now = ContinuousClock.now
            let outcome: Outcome
            switch event.event {
            case .deviceOnline:
                state.withLock {
                    $0.online += 1
                    $0.lastOnline = now
                }
                continue
            case .connected:
                outcome = .connected(now, monotonic: Deadline.now().nanoseconds)
            case .rejected(_, let reason):
                outcome = .failed("rejected: \(reason)")
            case .requestTimedOut:
                outcome = .failed("request timed out")
            case .ended(let reason, _):
                outcome = .failed("ended: \(reason)")
            default:
                continue
            }
            let (waiter, countWaiter) = state.withLock { state -> (Waiter?, CheckedContinuation<Bool, Never>?) in
                if state.outcomes[event.code] == nil { state.outcomes[event.code] = outcome }
                if case .connected = outcome {
                    state.connectedCount += 1
                    state.lastConnected = now
                } else {
                    state.failureCount += 1
                    if case .failed(let why) = outcome { state.firstFailure = state.firstFailure ?? "\(event.code): \(why)" }
                }
                var countWaiter: CheckedContinuation<Bool, Never>?
                if let waiting = state.countWaiter, state.connectedCount >= waiting.target {
                    countWaiter = waiting.continuation
                    state.countWaiter = nil
                }
                return (state.waiters.removeValue(forKey: event.code), countWaiter)
            }
            waiter?.continuation.resume(returning: outcome)
            countWaiter?.resume(returning: true)
        }
    }

    /// Returns when `.connected` (or a failure) for `code` has been consumed.
    func waitConnected(_ code: String) async -> Outcome {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Outcome? in
                if let outcome = state.outcomes[code] { return outcome }
                state.waiters[code] = Waiter(continuation: continuation, since: .now)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    func waitForConnectedCount(_ target: Int, timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.connectedCount >= target { return true }
                state.countWaiter = (target, continuation)
                return false
            }
            if done { continuation.resume(returning: true) }
        }
    }

    /// Fails waiters older than 10 s (a lost answer would otherwise hang the run), every 500 ms.
    func watchdog() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(500))
            let now = ContinuousClock.now
            let expired = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
                let old = state.waiters.filter { $0.value.since.duration(to: now) > .seconds(10) }
                for key in old.keys { state.waiters[key] = nil }
                return old.values.map(\.continuation)
            }
            for continuation in expired { continuation.resume(returning: .failed("no answer within 10 s")) }
        }
    }

    /// Fills the request and answer legs of `result` from its start stamps and the child's delegate stamps.
    func splitLegs(into result: inout NodesBenchmark.SequentialResult, deviceStamps: [String: UInt64]) {
        let outcomes = state.withLock { $0.outcomes }
        for (code, start) in result.starts {
            guard let device = deviceStamps[code], case .connected(_, let connected) = outcomes[code] else { continue }
            result.requestLeg.add(nanoseconds: Int64(bitPattern: device &- start))
            result.answerLeg.add(nanoseconds: Int64(bitPattern: connected &- device))
        }
    }
}

extension String {
    fileprivate var underscored: String { String(map { $0 == " " ? "_" : $0 }) }
}
