#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import SupporterNode
import SupporterStore
import SupporterStores
import SupporterStoreSQLite
import SupportWire
import SupportLink
import SupportRuntime
import SupportUtilities
import SupportSession
import SupporterCore
import DeviceNode
import SupporterREST
import SupportPostgres
import SupportVocabulary
import SupporterModel

/// The `nodecost` group: what the supporter node's audited signalling costs it, against four targets, in one table
/// from one run:
///
/// 1. node CPU per full registration (TLS + HELLO + REGISTER + REGISTER_RESULT + GOAWAY/close, `device_online` and
///    `device_offline` committed to a real SQLite file) ÷ node CPU per HELLO-only connection (TLS + HELLO + GOAWAY);
/// 2. node CPU per PING/PONG exchange with 10,000 idle registered devices on a 1 s keepalive;
/// 3. answer → SESSION_STARTED as the device sees it, 10,000 devices online, file store;
/// 4. audit-file bytes per connect/register/close cycle (WAL checkpointed);
/// 5. node CPU per registration while a scraper reads `/metrics` once a second (`curl` in a shell loop, a process of
///    its own: only the node's side of each scrape counts) ÷ without, in alternating rounds (issue 23: within 2 %).
///
/// The node runs in this process (a file-backed store in a temporary folder). The load generator is a child process
/// (this executable again, hidden subcommand `nodecost-devices`) of raw device links: ``TLSDialer`` + ``FramedLink``
/// and a few lines of its own for REGISTER and the answer, no DeviceNode session machine or delegate queue, so that
/// it stamps frames on its own loop the moment they arrive. It takes commands on stdin, one line each.
enum NodeCostBenchmark {
    static let group = BenchmarkGroup(
        name: "nodecost",
        summary: "supporter node cost: CPU per registration vs HELLO, keepalive CPU, answer latency, audit bytes",
        run: run)

    static let subcommand = "nodecost-devices"
    /// Measured connections per kind, split in `rounds` alternating rounds (machine load drifts; both kinds see it).
    static let cycles = 3_000
    static let rounds = 6
    static let warmUpCycles = 200
    /// Connections in flight in the load generator during the cost rounds: 4, or `RSUP_NODECOST_INFLIGHT` (how the
    /// ratio moves with load: more in flight, larger store batches and fewer thread wake-ups per registration).
    static let inFlight = getenv("RSUP_NODECOST_INFLIGHT").flatMap { Int(String(cString: $0)) }.map { max(1, $0) } ?? 4
    static let population = 10_000
    /// Dials (not yet registered) in flight while a population comes online.
    static let dialConcurrency = 64
    static let keepalive: Duration = .seconds(1)
    static let keepaliveSettle: Duration = .seconds(3)
    static let keepaliveWindow: Duration = .seconds(10)
    /// What devices propose outside the keepalive measurement: the most the node accepts from a peer (its own minimum
    /// is 1 s, so it caps proposals at `LinkSettings.maxPeerKeepaliveInterval`, 120 s): no PING in those phases.
    static let quietKeepalive: Duration = .seconds(120)
    static let latencySample = 2_000
    static let latencyWarmUp = 100

    static let targetRatio = 1.15
    static let targetKeepaliveMicroseconds = 35.0
    static let targetP99Microseconds = 1_000.0

    // MARK: results

    struct CostRound {
        var connections = 0
        var failures = 0
        var cpuSeconds = 0.0
        var wallSeconds = 0.0
        /// CPU seconds by kind of thread (see ``ProcessInfoLite/threadCPUSeconds()``).
        var threadSeconds: [String: Double] = [:]
    }

    struct Results {
        var hello = CostRound()
        var register = CostRound()
        /// Registration ÷ HELLO-only CPU of each pair of rounds: the spread the machine's load gives.
        var roundRatios: [Double] = []
        var firstFailure: String?
        /// Audit-file growth (main file after a TRUNCATE checkpoint) over the register rounds, and rows written.
        var auditFileBytes = 0
        var auditRows = 0
        var auditRowBytes = 0
        var storeTransactions = 0
        var storeJobs = 0
        // keepalive
        var keepaliveDevices = 0
        var keepaliveSeconds = Double.nan
        var keepaliveCPUSeconds = Double.nan
        var nodeWrites = 0
        var nodeReads = 0
        var keepaliveError: String?
        var onlineSeconds: [Double] = []
        // latency
        var latencyDevices = 0
        var answerToStarted = NodesBenchmark.Latencies()
        var requestRoundTrip = NodesBenchmark.Latencies()
        var latencyFailures = 0
        var latencyError: String?
        var latencyCPUPerRequest = Double.nan
        // metrics scrape
        var unscraped = CostRound()
        var scraped = CostRound()
        var scrapeRatios: [Double] = []
        var scrapes = 0
        var scrapeError: String?
        /// CPU of one `exposition()` call in this process (the node's side of a scrape, before HTTP and TLS), and its
        /// size.
        var expositionMicroseconds = Double.nan
        var expositionBytes = 0
    }

    // MARK: the group

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }
        print("== nodecost: supporter node cost with an audited SQLite file store (load generator in a child process) ==")
        let fileLimit = ProcessInfoLite.raiseFileLimit()
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   nodecost: cannot make certificates; skipped\n")
            return
        }
        defer { if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() } }
        let storePath = directory + "/store.sqlite"
        print(
            "store: \(storePath) (WAL, synchronous=NORMAL); RLIMIT_NOFILE soft = \(fileLimit); supporter node: 2 loops;"
                + " \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPU(s)")
        print()

        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
        configuration.port = 0
        configuration.loopCount = 2
        configuration.keepaliveInterval = keepalive
        // Every simulated device comes from 127.0.0.1.
        configuration.registryPolicy.unauthenticatedPerAddress = 100_000
        configuration.registryPolicy.unauthenticatedTotal = 100_000
        let node: SupporterNode
        do throws(SupporterNodeError) {
            let opened = try StoreConfiguration(path: storePath).openForNode()
            node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            try node.start()
        } catch {
            print("   nodecost: cannot start the supporter node: \(error)\n")
            return
        }
        defer { node.shutdown() }
        guard let port = node.port, let token = try? node.issueAPIToken() else { return }
        let recorder = CostRecorder()
        let events = node.events
        let consumer = Task.detached { await recorder.consume(events) }
        defer { consumer.cancel() }

        // Codes: the cost rounds use each once; the populations use the first `population`.
        // Profiling aid: RSUP_NODECOST_PROFILE=hello|register runs only that kind's cycles and prints their CPU.
        let profileKind = getenv("RSUP_NODECOST_PROFILE").map { String(cString: $0) }
        let codeCount = profileKind != nil ? warmUpCycles + cycles : max(population, warmUpCycles + cycles)
        guard let codes = createCodes(node, count: codeCount) else {
            print("   nodecost: cannot create \(codeCount) codes\n")
            return
        }
        let codesFile = directory + "/codes.txt"
        guard NodesBenchmark.writeLines(codes, to: codesFile),
            let child = ChildProcess(
                "/proc/self/exe",
                ["Benchmarks", subcommand, "--port", "\(port)", "--token", token, "--codes", codesFile, "--ca",
                 directory + "/ca.pem"],
                captureOutput: true, pipeInput: true, inheritStandardError: true)
        else {
            print("   nodecost: cannot start the load generator\n")
            return
        }
        defer {
            child.closeInput()
            child.wait()
        }
        let generator = Generator(child: child)
        guard generator.command("hello") != nil else {
            print("   nodecost: the load generator did not start\n")
            return
        }
        let audit = AuditFile(path: storePath)
        var results = Results()
        if let profileKind {
            _ = generator.command("cycles \(profileKind) \(warmUpCycles) \(inFlight) 0")
            waitForStore(node)
            mark("\(profileKind) start")
            let round = measureRound(
                node: node, generator: generator, command: "cycles \(profileKind) \(cycles) \(inFlight) \(warmUpCycles)")
            mark("\(profileKind) end")
            print(
                "\(profileKind): \(round.connections) connections, \(round.failures) failed, node CPU "
                    + "\(Format.fixed(round.cpuSeconds / Double(max(round.connections, 1)) * 1e6, 1)) µs each")
            _ = generator.command("quit")
            return
        }
        // For profiling one phase: RSUP_NODECOST_PHASES=cost,keepalive,latency (default: all three).
        let phases = getenv("RSUP_NODECOST_PHASES").map { String(cString: $0).split(separator: ",").map(String.init) }
            ?? ["cost", "keepalive", "latency", "scrape"]
        // 1 and 4: cost per connection, audit bytes per cycle.
        if phases.contains("cost") { costPhase(node: node, generator: generator, audit: audit, results: &results) }
        results.firstFailure = generator.firstFailure

        // 2: keepalive with `population` idle registered devices.
        if phases.contains("keepalive") {
            keepalivePhase(node: node, generator: generator, recorder: recorder, results: &results)
        }
        // 3: answer → SESSION_STARTED with `population` devices online (no keepalive traffic).
        if phases.contains("latency") {
            latencyPhase(node: node, generator: generator, recorder: recorder, codes: codes, results: &results)
        }
        // 5: registrations with and without a 1 s scrape of /metrics.
        if phases.contains("scrape") {
            scrapePhase(node: node, generator: generator, directory: directory, codes: codes.count, results: &results)
        }

        _ = generator.command("quit")
        printTables(results)
    }

    /// Profiling aid: with RSUP_NODECOST_MARKS set, prints CLOCK_MONOTONIC seconds at the edges of measurement
    /// windows, for `perf record -k CLOCK_MONOTONIC` then `perf report --time start,end`.
    static func mark(_ what: String) {
        guard getenv("RSUP_NODECOST_MARKS") != nil else { return }
        let microseconds = Deadline.now().nanoseconds / 1_000
        let fraction = String(microseconds % 1_000_000)
        print("mark \(what): \(microseconds / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count) + fraction)")
    }

    /// Codes [0, warmUp) warm up, then each register cycle takes the next code.
    static func costPhase(node: SupporterNode, generator: Generator, audit: AuditFile, results: inout Results) {
        var nextCode = 0
        _ = generator.command("cycles hello \(warmUpCycles) \(inFlight) 0")
        _ = generator.command("cycles register \(warmUpCycles) \(inFlight) \(nextCode)")
        nextCode += warmUpCycles
        waitForStore(node)
        let perRound = cycles / rounds
        for _ in 0..<rounds {
            let hello = measureRound(node: node, generator: generator, command: "cycles hello \(perRound) \(inFlight) 0")
            results.hello.add(hello)
            let before = audit.snapshot()
            let statisticsBefore = node.storeStatistics
            let register = measureRound(
                node: node, generator: generator, command: "cycles register \(perRound) \(inFlight) \(nextCode)")
            results.register.add(register)
            results.roundRatios.append(
                (register.cpuSeconds / Double(max(register.connections, 1)))
                    / (hello.cpuSeconds / Double(max(hello.connections, 1))))
            nextCode += perRound
            let statisticsAfter = node.storeStatistics
            let after = audit.snapshot()
            results.auditFileBytes += after.fileBytes - before.fileBytes
            results.auditRows += after.rows - before.rows
            results.auditRowBytes += after.rowBytes - before.rowBytes
            results.storeTransactions += statisticsAfter.transactions - statisticsBefore.transactions
            results.storeJobs += statisticsAfter.applied - statisticsBefore.applied
        }
    }

    /// Registrations per scrape round: long enough (several seconds) for a 1 s scrape loop to fire a few times.
    static let scrapeRoundCycles = 6_000
    static let scrapeRounds = 6
    /// Expositions timed before the rounds (RSUP_NODECOST_EXPOSITIONS: more, for a profile of one).
    static let expositionLoops = getenv("RSUP_NODECOST_EXPOSITIONS").flatMap { Int(String(cString: $0)) } ?? 50

    /// Alternating rounds of registrations without and with a 1 s scrape loop of `GET /metrics` over HTTPS (a REST
    /// server beside the node in both, so only the scraping differs). Codes are reused, round by round.
    static func scrapePhase(
        node: SupporterNode, generator: Generator, directory: String, codes: Int, results: inout Results
    ) {
        var configuration = RESTServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.certificateChain = .file(directory + "/supporter.pem")
        configuration.privateKey = .file(directory + "/supporter.key")
        guard let server = try? RESTServer(node: node, configuration: configuration) else {
            results.scrapeError = "cannot start the REST server"
            return
        }
        defer { blockingAwait { await server.shutdown() } }
        let url = "https://127.0.0.1:\(server.port)/metrics"
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        for _ in 0..<expositionLoops { results.expositionBytes = node.metrics.exposition().utf8.count }
        results.expositionMicroseconds = (ProcessInfoLite.cpuSeconds() - cpuBefore) / Double(expositionLoops) * 1e6
        let count = min(scrapeRoundCycles, codes)
        _ = generator.command("cycles register \(warmUpCycles) \(inFlight) 0")
        waitForStore(node)
        for _ in 0..<scrapeRounds {
            let quiet = measureRound(node: node, generator: generator, command: "cycles register \(count) \(inFlight) 0")
            results.unscraped.add(quiet)
            let before = scrapeCount(node)
            guard let scraper = ChildProcess(
                "sh", ["sh", "-c", "while :; do curl -sk -o /dev/null \(url); sleep 1; done"], captureOutput: false)
            else {
                results.scrapeError = "cannot start the scrape loop"
                return
            }
            let loud = measureRound(node: node, generator: generator, command: "cycles register \(count) \(inFlight) 0")
            scraper.signal(SIGKILL)
            _ = scraper.wait()
            results.scrapes += scrapeCount(node) - before
            results.scraped.add(loud)
            results.scrapeRatios.append(
                (loud.cpuSeconds / Double(max(loud.connections, 1))) / (quiet.cpuSeconds / Double(max(quiet.connections, 1))))
        }
    }

    /// `GET /metrics` answered so far, from the node's own metrics.
    static func scrapeCount(_ node: SupporterNode) -> Int {
        let line = node.metrics.exposition().split(separator: "\n").first {
            $0.hasPrefix(#"rsup_http_requests_total{route="/metrics",method="GET",status="200"} "#)
        }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
    }

    static func measureRound(node: SupporterNode, generator: Generator, command: String) -> CostRound {
        var round = CostRound()
        let threadsBefore = ProcessInfoLite.threadCPUSeconds()
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        let start = ContinuousClock.now
        let fields = generator.command(command) ?? [:]
        // The last closes' `device_offline` rows are the node's work too: wait until the writer is idle.
        waitForStore(node)
        round.cpuSeconds = ProcessInfoLite.cpuSeconds() - cpuBefore
        for (kind, seconds) in ProcessInfoLite.threadCPUSeconds() {
            round.threadSeconds[kind] = seconds - (threadsBefore[kind] ?? 0)
        }
        round.wallSeconds = start.duration(to: .now).seconds
        round.connections = fields["ok"].flatMap { Int($0) } ?? 0
        round.failures = fields["failed"].flatMap { Int($0) } ?? 0
        return round
    }

    /// Waits until the store writer has nothing queued and a short while has passed without new jobs.
    static func waitForStore(_ node: SupporterNode) {
        let deadline = ContinuousClock.now + .seconds(30)
        var last = node.storeStatistics.applied
        while ContinuousClock.now < deadline {
            ProcessInfoLite.sleep(.milliseconds(20))
            let statistics = node.storeStatistics
            if statistics.queued == 0, statistics.applied == last { return }
            last = statistics.applied
        }
    }

    static func createCodes(_ node: SupporterNode, count: Int) -> [String]? {
        blockingAwait { () async -> [String]? in
            await withTaskGroup(of: [String]?.self, returning: [String]?.self) { tasks in
                let workers = 32
                for worker in 0..<workers {
                    let share = count / workers + (worker < count % workers ? 1 : 0)
                    tasks.addTask {
                        var codes: [String] = []
                        for _ in 0..<share {
                            guard let info = try? await node.createCode(type: .remoteSupport) else { return nil }
                            codes.append(info.code)
                        }
                        return codes
                    }
                }
                var all: [String] = []
                for await codes in tasks {
                    guard let codes else { return nil }
                    all += codes
                }
                return all
            }
        }
    }

    // MARK: keepalive

    static func keepalivePhase(
        node: SupporterNode, generator: Generator, recorder: CostRecorder, results: inout Results
    ) {
        let onlineBefore = recorder.online
        let start = ContinuousClock.now
        // Fewer dials in flight than for the quiet population: the 1 s keepalive runs during the dial storm.
        let fields = generator.command(
            "online \(population) \(keepalive.components.seconds * 1000) \(dialConcurrency / 4)", timeout: .seconds(300))
        let online = fields?["online"].flatMap { Int($0) } ?? 0
        if online < population {
            results.keepaliveError = "\(population - online) device(s) did not come online: \(generator.firstFailure ?? "?")"
        }
        guard online * 100 >= population * 99 else {
            _ = generator.command("drop", timeout: .seconds(120))
            return
        }
        _ = recorder.waitOnline(onlineBefore + online, timeout: .seconds(30))
        results.onlineSeconds.append(start.duration(to: .now).seconds)
        waitForStore(node)
        // Let the dial storm's keepalive phases spread over the interval, then measure.
        ProcessInfoLite.sleep(keepaliveSettle)
        let liveBefore = recorder.online - recorder.ended
        let writesBefore = ProcessInfoLite.ioCounter("syscw")
        let readsBefore = ProcessInfoLite.ioCounter("syscr")
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        let windowStart = ContinuousClock.now
        mark("keepalive window start")
        ProcessInfoLite.sleep(keepaliveWindow)
        mark("keepalive window end")
        results.keepaliveCPUSeconds = ProcessInfoLite.cpuSeconds() - cpuBefore
        results.keepaliveSeconds = windowStart.duration(to: .now).seconds
        results.nodeWrites = ProcessInfoLite.ioCounter("syscw") - writesBefore
        results.nodeReads = ProcessInfoLite.ioCounter("syscr") - readsBefore
        // Devices registered on the node over the window (a device the keepalive dropped counts half).
        results.keepaliveDevices = (liveBefore + recorder.online - recorder.ended) / 2
        if let dropped = generator.command("drop", timeout: .seconds(120)), (Int(dropped["early"] ?? "0") ?? 0) > 0 {
            let reasons = dropped.filter { $0.key != "early" }.map { "\($0.value) \($0.key)" }.sorted()
            results.keepaliveError =
                (results.keepaliveError.map { $0 + "; " } ?? "")
                + "\(dropped["early"]!) device(s) closed during the phase: " + reasons.joined(separator: ", ")
        }
        _ = recorder.waitAllEnded(timeout: .seconds(30))
        waitForStore(node)
    }

    // MARK: latency

    static func latencyPhase(
        node: SupporterNode, generator: Generator, recorder: CostRecorder, codes: [String], results: inout Results
    ) {
        let onlineBefore = recorder.online
        let start = ContinuousClock.now
        let fields = generator.command(
            "online \(population) \(quietKeepalive.components.seconds * 1000) \(dialConcurrency)", timeout: .seconds(300))
        guard let fields, fields["online"].flatMap({ Int($0) }) == population else {
            results.latencyError = "population not online: \(fields?["online"] ?? "?") (\(generator.firstFailure ?? "?"))"
            _ = generator.command("drop")
            return
        }
        _ = recorder.waitOnline(onlineBefore + population, timeout: .seconds(30))
        results.onlineSeconds.append(start.duration(to: .now).seconds)
        waitForStore(node)
        ProcessInfoLite.sleep(.milliseconds(500))
        results.latencyDevices = population

        // A fixed pseudo-random order over all codes, each used once: spread over both loops of both processes.
        var order = Array(0..<population)
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        for index in order.indices.reversed() where index > 0 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            order.swapAt(index, Int((seed >> 33) % UInt64(index + 1)))
        }
        let picked = order.prefix(latencyWarmUp + latencySample).map { codes[$0] }
        _ = sequentialRequests(node: node, recorder: recorder, codes: Array(picked.prefix(latencyWarmUp)))
        _ = generator.command("reset")
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        mark("latency start")
        let (roundTrips, failures) = sequentialRequests(
            node: node, recorder: recorder, codes: Array(picked.dropFirst(latencyWarmUp)))
        mark("latency end")
        results.latencyCPUPerRequest = (ProcessInfoLite.cpuSeconds() - cpuBefore) / Double(latencySample)
        results.requestRoundTrip = roundTrips
        results.latencyFailures = failures
        if let stamps = generator.command("stamps") {
            // Plain integers: a grouped "1,234" would split into two values at the commas.
            results.answerToStarted.microseconds =
                (stamps["ns"] ?? "").split(separator: ",").compactMap { UInt64($0) }.map { Double($0) / 1e3 }
            // Analysis aid: RSUP_NODECOST_STAMPS=FILE writes each answer → SESSION_STARTED time (µs, in request order).
            if let path = getenv("RSUP_NODECOST_STAMPS").map({ String(cString: $0) }) {
                _ = NodesBenchmark.writeLines(results.answerToStarted.microseconds.map { "\($0)" }, to: path)
            }
            if let count = stamps["n"].flatMap({ Int($0) }), count != results.answerToStarted.microseconds.count {
                results.latencyError = "the load generator sent \(count) stamps, \(results.answerToStarted.microseconds.count) read"
            }
        }
        _ = generator.command("drop", timeout: .seconds(120))
        _ = recorder.waitAllEnded(timeout: .seconds(30))
    }

    /// One request at a time: the next starts when the previous one's `.connected` has been consumed.
    static func sequentialRequests(node: SupporterNode, recorder: CostRecorder, codes: [String])
        -> (NodesBenchmark.Latencies, Int)
    {
        blockingAwait { () async -> (NodesBenchmark.Latencies, Int) in
            var latencies = NodesBenchmark.Latencies()
            var failures = 0
            for code in codes {
                let start = ContinuousClock.now
                do throws(SupporterNodeError) {
                    _ = try await node.requestConnection(code: code, supporterName: "Bench", type: .screenShare)
                } catch {
                    failures += 1
                    continue
                }
                if let at = await recorder.waitConnected(code) {
                    latencies.add(start.duration(to: at))
                } else {
                    failures += 1
                }
            }
            return (latencies, failures)
        }
    }

    // MARK: output

    static func printTables(_ results: Results) {
        func us(_ value: Double) -> String { Format.fixed(value, 1) }
        let helloCPU = results.hello.cpuSeconds / Double(max(results.hello.connections, 1)) * 1e6
        let registerCPU = results.register.cpuSeconds / Double(max(results.register.connections, 1)) * 1e6
        let ratio = registerCPU / helloCPU
        let exchanges = Double(results.keepaliveDevices) * results.keepaliveSeconds / keepalive.seconds
        let perExchange = results.keepaliveCPUSeconds * 1e6 / exchanges
        let perWrite = results.keepaliveCPUSeconds * 1e6 / Double(max(results.nodeWrites, 1))
        let p50 = results.answerToStarted.percentile(50)
        let p99 = results.answerToStarted.percentile(99)
        let auditPerCycle = Double(results.auditFileBytes) / Double(max(results.register.connections, 1))

        func verdict(_ pass: Bool, valid: Bool) -> String { valid ? (pass ? "pass" : "FAIL") : "n/a" }
        var table = TablePrinter(
            title: "node cost against the targets (node = this process, load generator = child process, SQLite file store)",
            columns: [
                .init(title: "#", alignment: .right), .init(title: "measure", alignment: .left),
                .init(title: "measured", alignment: .right), .init(title: "target", alignment: .right),
                .init(title: "result", alignment: .left),
            ])
        table.addRow([
            "1",
            "node CPU per full registration ÷ per HELLO-only connection (\(Format.grouped(results.register.connections)) / \(Format.grouped(results.hello.connections)), \(inFlight) in flight)",
            "\(Format.fixed(ratio, 3)) (\(us(registerCPU)) / \(us(helloCPU)) µs)", "≤ \(Format.fixed(targetRatio, 2))",
            verdict(ratio <= targetRatio, valid: ratio.isFinite && results.hello.connections > 0),
        ])
        table.addRow([
            "2",
            "node CPU per PING/PONG exchange counted as devices × intervals, \(Format.grouped(results.keepaliveDevices)) idle devices, keepalive 1 s",
            "\(us(perExchange)) µs (\(us(perWrite)) µs per exchange, \(Format.fixed(Double(results.nodeWrites) / exchanges, 2)) exchanges per interval)",
            "≤ \(Format.fixed(targetKeepaliveMicroseconds, 0)) µs",
            verdict(perExchange <= targetKeepaliveMicroseconds, valid: perExchange.isFinite && results.keepaliveDevices > 0),
        ])
        table.addRow([
            "3",
            "answer → SESSION_STARTED at the device, \(Format.grouped(results.latencyDevices)) online, p50 / p99 (\(Format.grouped(results.answerToStarted.microseconds.count)) requests)",
            "\(Format.fixed(p50, 0)) / \(Format.fixed(p99, 0)) µs", "p99 < \(Format.fixed(targetP99Microseconds, 0)) µs",
            verdict(p99 < targetP99Microseconds, valid: p99.isFinite),
        ])
        table.addRow([
            "4", "audit-file bytes per connect/register/close cycle (WAL checkpointed)",
            "\(Format.fixed(auditPerCycle, 0)) B", "(stated)", "—",
        ])
        let quietCPU = results.unscraped.cpuSeconds / Double(max(results.unscraped.connections, 1)) * 1e6
        let scrapedCPU = results.scraped.cpuSeconds / Double(max(results.scraped.connections, 1)) * 1e6
        let scrapeRatio = scrapedCPU / quietCPU
        table.addRow([
            "5",
            "node CPU per registration with a 1 s /metrics scrape ÷ without (\(Format.grouped(results.scraped.connections)) / \(Format.grouped(results.unscraped.connections)), \(results.scrapes) scrapes)",
            "\(Format.fixed(scrapeRatio, 3)) (\(us(scrapedCPU)) / \(us(quietCPU)) µs)", "≤ 1.02",
            verdict(scrapeRatio <= 1.02, valid: scrapeRatio.isFinite && results.scrapes > 0),
        ])
        table.print()
        print()

        var details = TablePrinter(
            title: "details",
            columns: [.init(title: "what", alignment: .left), .init(title: "value", alignment: .left)])
        for (name, round) in [("HELLO-only", results.hello), ("registration", results.register)] {
            details.addRow([
                "\(name): connections / failed / wall s / connections/s",
                "\(Format.grouped(round.connections)) / \(Format.grouped(round.failures)) / \(Format.fixed(round.wallSeconds, 2)) / \(Format.rate(Double(round.connections) / round.wallSeconds))",
            ])
        }
        details.addRow([
            "registration − HELLO-only: node CPU per cycle", "\(us(registerCPU - helloCPU)) µs",
        ])
        for (name, round) in [("HELLO-only", results.hello), ("registration", results.register)] {
            func per(_ kind: String) -> String {
                us((round.threadSeconds[kind] ?? 0) * 1e6 / Double(max(round.connections, 1)))
            }
            details.addRow([
                "\(name): node CPU µs per cycle in Dispatch / cooperative-pool threads (the events consumer)",
                per("pool"),
            ])
        }
        details.addRow([
            "ratio of each pair of rounds (registration ÷ HELLO-only)",
            results.roundRatios.map { Format.fixed($0, 2) }.joined(separator: " "),
        ])
        details.addRow([
            "store: jobs / transactions over the registration rounds",
            "\(Format.grouped(results.storeJobs)) / \(Format.grouped(results.storeTransactions))",
        ])
        details.addRow([
            "audit rows per cycle; stored bytes per row (time, code, kind, details, 2 digests)",
            "\(Format.fixed(Double(results.auditRows) / Double(max(results.register.connections, 1)), 2)); \(Format.fixed(Double(results.auditRowBytes) / Double(max(results.auditRows, 1)), 0)) B",
        ])
        details.addRow([
            "keepalive window: seconds / node CPU s / exchanges (devices × intervals)",
            "\(Format.fixed(results.keepaliveSeconds, 2)) / \(Format.fixed(results.keepaliveCPUSeconds, 3)) / \(Format.fixed(exchanges, 0))",
        ])
        details.addRow([
            "keepalive: node write(2) calls in the window (one per PING or PONG sent) / CPU per write",
            "\(Format.grouped(results.nodeWrites)) / \(us(perWrite)) µs",
        ])
        details.addRow([
            "keepalive: node read(2) calls in the window, per write",
            "\(Format.grouped(results.nodeReads)) / \(Format.fixed(Double(results.nodeReads) / Double(max(results.nodeWrites, 1)), 2))",
        ])
        details.addRow([
            "population online (TLS + HELLO + REGISTER, \(dialConcurrency) dials in flight), s",
            results.onlineSeconds.map { Format.fixed($0, 1) }.joined(separator: ", "),
        ])
        let r = results.requestRoundTrip
        details.addRow([
            "requestConnection → .connected consumed (node process), p50 / p99 / max µs",
            "\(Format.fixed(r.percentile(50), 0)) / \(Format.fixed(r.percentile(99), 0)) / \(Format.fixed(r.maximum, 0))",
        ])
        details.addRow([
            "answer → SESSION_STARTED: p90 / max µs; request failures",
            "\(Format.fixed(results.answerToStarted.percentile(90), 0)) / \(Format.fixed(results.answerToStarted.maximum, 0)); \(results.latencyFailures)",
        ])
        details.addRow(["node CPU per request (latency phase)", "\(us(results.latencyCPUPerRequest * 1e6)) µs"])
        details.addRow([
            "metrics: ratio of each pair of rounds (scraped ÷ not); wall s per round without / with",
            results.scrapeRatios.map { Format.fixed($0, 3) }.joined(separator: " ") + "; "
                + Format.fixed(results.unscraped.wallSeconds / Double(scrapeRounds), 1) + " / "
                + Format.fixed(results.scraped.wallSeconds / Double(scrapeRounds), 1),
        ])
        details.addRow([
            "metrics: CPU of one exposition (\(Format.grouped(results.expositionBytes)) bytes) in this process",
            "\(us(results.expositionMicroseconds)) µs",
        ])
        details.print()
        for error in [results.firstFailure, results.keepaliveError, results.latencyError, results.scrapeError]
            .compactMap({ $0 })
        {
            print("   note: \(error)")
        }
        print(
            """
               Method: this process runs the SupporterNode (2 loops, minimum keepalive 1 s, store in a temporary SQLite
               file: WAL, synchronous=NORMAL, hash-chained audit rows) and one task consuming `events`. The load
               generator is `/proc/self/exe \(subcommand)`: 2 loops, one client TLSContext, raw device links (TLSDialer +
               FramedLink, its own REGISTER and answer handling). (1) after \(warmUpCycles) unmeasured cycles of each kind,
               \(rounds) alternating rounds of \(cycles / rounds) HELLO-only connections (TLS 1.3 + HELLO/HELLO_ACK, then GOAWAY) and
               \(cycles / rounds) registrations (the same + REGISTER on a fresh code, REGISTER_RESULT, GOAWAY; the node commits
               device_online before it answers and device_offline after the close), \(inFlight) in flight; CPU = getrusage
               (RUSAGE_SELF) of this process over the round, until the store writer is idle, ÷ connections. (4) main
               database file size after `PRAGMA wal_checkpoint(TRUNCATE)` around each registration round, ÷ cycles.
               (2) \(Format.grouped(population)) devices register proposing 1 s; after \(Format.fixed(keepaliveSettle.seconds, 0)) s this process's CPU over \(Format.fixed(keepaliveWindow.seconds, 0)) s ÷
               (devices × seconds ÷ 1 s), as the target counts. The device PINGs after 1 s of silence, the node only after
               1.5 s (SPEC §7), so an interval has one exchange; every exchange has exactly one node write(2) (its PONG,
               or its PING; /proc/self/io syscw), so "µs per exchange" is CPU ÷ writes.
               (3) a fresh population of \(Format.grouped(population)) (keepalive 120 s: no PING); \(latencyWarmUp) unmeasured then \(latencySample) sequential
               requestConnection calls on distinct codes; the device stamps CLOCK_MONOTONIC just before it sends
               CONNECTION_RESPONSE(allow) and when SESSION_STARTED arrives, on its loop (the node commits
               session_started before it sends SESSION_STARTED).

            """)
    }

    // MARK: the load generator (child process)

    /// `nodecost-devices --port P --token T --codes FILE --ca PATH`, then commands on stdin, one per line, each
    /// answered by one line on stdout:
    /// - `hello` → `ok`
    /// - `cycles hello|register N K FIRST` → N connect/close cycles, K at a time; `register` registers on codes
    ///   FIRST, FIRST+1, … → `done ok=.. failed=.. seconds=..`
    /// - `online N KEEPALIVE_MS C` → N devices registered on codes 0..<N, C dials in flight → `ready online=.. failed=..`
    /// - `reset` → forget answer stamps; `stamps` → `stamps n=.. ns=a,b,c` (answer → SESSION_STARTED, nanoseconds)
    /// - `drop` → close every online device → `dropped`
    /// - `quit` → exits
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0
        var token = ""
        var codesPath = ""
        var caPath = ""
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--token": token = value
            case "--codes": codesPath = value
            case "--ca": caPath = value
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        let codes = NodesBenchmark.readLines(codesPath)
        let tls = TLSConfiguration.makeClientConfiguration(trustRoots: .file(caPath), serverName: "localhost")
        let generator: DeviceGenerator
        do throws(TransportError) {
            generator = DeviceGenerator(
                port: port, token: token, codes: codes, context: try TLSContext(tls),
                loops: [try EventLoop.start(name: "cost-device-0"), try EventLoop.start(name: "cost-device-1")])
        } catch {
            writeStandardOutput("error \(error.description.replacingSpaces)")
            exit(1)
        }
        while let line = readStandardInputLine() {
            let words = line.split(separator: " ").map(String.init)
            guard let verb = words.first else { continue }
            let numbers = words.dropFirst().compactMap { Int($0) }
            switch verb {
            case "hello":
                writeStandardOutput("ok")
            case "cycles" where words.count == 5 && numbers.count == 3:
                let register = words[1] == "register"
                let result = generator.cycles(register: register, count: numbers[0], inFlight: numbers[1], firstCode: numbers[2])
                writeStandardOutput(
                    "done ok=\(result.ok) failed=\(result.failed) seconds=\(Format.fixed(result.seconds, 3))"
                        + (result.error.map { " error=" + $0.replacingSpaces } ?? ""))
            case "online" where numbers.count == 3:
                let result = generator.bringOnline(
                    count: numbers[0], keepalive: .milliseconds(numbers[1]), concurrency: numbers[2])
                writeStandardOutput(
                    "ready online=\(result.ok) failed=\(result.failed) seconds=\(Format.fixed(result.seconds, 2))"
                        + (result.error.map { " error=" + $0.replacingSpaces } ?? ""))
            case "reset":
                generator.answers.withLock { $0.removeAll() }
                writeStandardOutput("ok")
            case "stamps":
                let values = generator.answers.withLock { $0 }
                writeStandardOutput(
                    "stamps n=\(values.count) ns=" + values.map { String($0) }.joined(separator: ","))
            case "drop":
                let early = generator.drop()
                writeStandardOutput(
                    "dropped early=\(early.values.reduce(0, +))"
                        + early.map { " " + $0.key.replacingSpaces + "=\($0.value)" }.joined())
            case "quit":
                _exit(0)
            default:
                writeStandardOutput("error unknown_command")
            }
        }
        _exit(0)
    }

    /// One line from stdin (unbuffered reads, byte by byte: commands are short), nil at EOF.
    static func readStandardInputLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

// MARK: parent-side helpers

extension NodeCostBenchmark {
    /// The parent's end of the load generator: one command line out, one answer line back.
    final class Generator {
        let child: ChildProcess
        private(set) var firstFailure: String?

        /// Call on the thread that sends the commands: a write to a child that died must fail with EPIPE, not
        /// end this process with SIGPIPE.
        init(child: ChildProcess) {
            self.child = child
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
        }

        /// Sends `line`; returns the answer's `key=value` fields (empty for a bare word), nil on EOF or timeout.
        func command(_ line: String, timeout: Duration = .seconds(180)) -> [String: String]? {
            var text = line + "\n"
            let written = text.withUTF8 { write(child.stdinFD, $0.baseAddress, $0.count) }
            guard written > 0, let answer = child.readLine(timeout: timeout) else { return nil }
            let fields = NodesBenchmark.parseFields(answer)
            if let error = fields["error"], firstFailure == nil { firstFailure = error }
            return fields
        }
    }

    /// The store file's size after a TRUNCATE checkpoint, and its audit rows, read over a second connection.
    struct AuditFile {
        let path: String

        struct Snapshot {
            var fileBytes = 0
            var rows = 0
            var rowBytes = 0
        }

        func snapshot() -> Snapshot {
            var snapshot = Snapshot()
            do throws(StoreError) {
                let database = try SQLiteDatabase(path: path)
                try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                    let statement = try connection.prepare(
                        """
                        SELECT count(*), total(8 + 8 + length(code) + length(kind) + length(details)
                            + length(prev_digest) + length(digest)) FROM audit_events
                        """)
                    if try statement.step() {
                        snapshot.rows = Int(statement.int64(at: 0) ?? 0)
                        snapshot.rowBytes = Int(statement.double(at: 1) ?? 0)
                    }
                }
            } catch {
                print("   nodecost: reading the store: \(error)")
            }
            var info = stat()
            if stat(path, &info) == 0 { snapshot.fileBytes = Int(info.st_size) }
            return snapshot
        }
    }
}

extension NodeCostBenchmark.CostRound {
    mutating func add(_ other: Self) {
        connections += other.connections
        failures += other.failures
        cpuSeconds += other.cpuSeconds
        wallSeconds += other.wallSeconds
        threadSeconds.merge(other.threadSeconds, uniquingKeysWith: +)
    }
}

extension ProcessInfoLite {
    /// CPU seconds each of this process's threads has used so far (/proc/self/task/*/schedstat), summed by kind:
    /// `pool` (Dispatch's and the cooperative pool's workers, named *qos*), `other` (the loops, the store writer, the
    /// main thread; Foundation does not always give a Thread its name on Linux, so they are not told apart). Threads
    /// that ended are not counted.
    static func threadCPUSeconds() -> [String: Double] {
        var totals: [String: Double] = [:]
        guard let directory = opendir("/proc/self/task") else { return totals }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int(name) else { continue }
            let comm = firstLine("/proc/self/task/\(tid)/comm") ?? ""
            guard let runtime = firstLine("/proc/self/task/\(tid)/schedstat")?.split(separator: " ").first.flatMap({ Double($0) })
            else { continue }
            let kind = comm.contains("qos") ? "pool" : "other"
            totals[kind, default: 0] += runtime / 1e9
        }
        return totals
    }

    private static func firstLine(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        guard getline(&line, &capacity, file) > 0, let line else { return nil }
        var text = String(cString: line)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// A counter of /proc/self/io (`syscr`, `syscw`, `rchar`, …), or 0.
    static func ioCounter(_ name: String) -> Int {
        guard let file = fopen("/proc/self/io", "r") else { return 0 }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix(name + ":") else { continue }
            return Int(text.dropFirst(name.count + 1).filter(\.isNumber)) ?? 0
        }
        return 0
    }
}

/// The node's events, as the cost benchmark needs them: counts of devices online and ended, and `.connected` per
/// code with a waiter.
final class CostRecorder: Sendable {
    private struct State {
        var online = 0
        var ended = 0
        var connected: [String: ContinuousClock.Instant] = [:]
        var waiters: [String: CheckedContinuation<ContinuousClock.Instant?, Never>] = [:]
    }

    private let state = Mutex(State())

    var online: Int { state.withLock { $0.online } }
    var ended: Int { state.withLock { $0.ended } }

    func consume(_ events: AsyncStream<SupporterNodeEvent>) async {
        for await event in events {
            let now = ContinuousClock.now
            switch event.event {
            case .deviceOnline: state.withLock { $0.online += 1 }
            case .ended: state.withLock { $0.ended += 1 }
            case .connected:
                let waiter = state.withLock { state in
                    state.connected[event.code] = now
                    return state.waiters.removeValue(forKey: event.code)
                }
                waiter?.resume(returning: now)
            case .rejected, .requestTimedOut:
                state.withLock { $0.waiters.removeValue(forKey: event.code) }?.resume(returning: nil)
            default: break
            }
        }
    }

    /// When `.connected` for `code` was consumed; nil when the request failed.
    func waitConnected(_ code: String) async -> ContinuousClock.Instant? {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> ContinuousClock.Instant? in
                if let at = state.connected.removeValue(forKey: code) { return at }
                state.waiters[code] = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    func waitOnline(_ target: Int, timeout: Duration) -> Bool { wait(timeout) { $0.online >= target } }
    /// Waits until every device that came online has ended.
    func waitAllEnded(timeout: Duration) -> Bool { wait(timeout) { $0.ended >= $0.online } }

    private func wait(_ timeout: Duration, _ done: (State) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state.withLock({ done($0) }) { return true }
            ProcessInfoLite.sleep(.milliseconds(10))
        }
        return false
    }
}

// MARK: the load generator's devices

/// Raw device links in the child: dial (TLS + HELLO), REGISTER, answer every request with allow, close.
final class DeviceGenerator: Sendable {
    let port: UInt16
    let token: String
    let codes: [String]
    let context: TLSContext
    let loops: [EventLoop]
    /// Answer → SESSION_STARTED, nanoseconds, one per session started.
    let answers = Mutex<[UInt64]>([])
    private let online = Mutex<[RawDevice]>([])
    private let earlyCloses = Mutex<[String: Int]>([:])
    private let nextLoop = Atomic<Int>(0)

    init(port: UInt16, token: String, codes: [String], context: TLSContext, loops: [EventLoop]) {
        self.port = port
        self.token = token
        self.codes = codes
        self.context = context
        self.loops = loops
    }

    struct Outcome {
        var ok = 0
        var failed = 0
        var seconds = 0.0
        var error: String?
    }

    private func settings(keepalive: Duration) -> LinkSettings {
        var settings = LinkSettings(role: .device, nodeName: "cost-device")
        settings.keepaliveInterval = keepalive
        return settings
    }

    private func loop() -> EventLoop { loops[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count] }

    /// Dials one device and, with `code`, registers it. The device is open (and registered) when this returns.
    private func open(code: String?, keepalive: Duration) async -> Result<RawDevice, DeviceFailure> {
        let device = RawDevice(generator: self)
        let link: FramedLink
        do throws(TransportError) {
            link = try await TLSDialer.connect(
                host: "127.0.0.1", port: port, context: context, settings: settings(keepalive: keepalive),
                loop: loop(), connectTimeout: .seconds(60), delegate: device)
        } catch {
            return .failure(DeviceFailure(text: "dial: \(error)"))
        }
        device.link = link
        guard let code else { return .success(device) }
        let register = Register(
            sessionCode: code, apiToken: token, capabilities: [Feature(.screenShare), Feature(.voip)])
        let failure = await device.register(register)
        if let failure { return .failure(DeviceFailure(text: "register \(code): \(failure)")) }
        return .success(device)
    }

    /// `count` connect → (REGISTER →) close cycles, `inFlight` at a time.
    func cycles(register: Bool, count: Int, inFlight: Int, firstCode: Int) -> Outcome {
        let start = ContinuousClock.now
        let next = SharedCounter()
        var outcome = blockingAwait { () async -> Outcome in
            await withTaskGroup(of: Outcome.self, returning: Outcome.self) { tasks in
                for _ in 0..<max(1, inFlight) {
                    tasks.addTask {
                        var outcome = Outcome()
                        while true {
                            let index = next.take()
                            guard index < count else { break }
                            let code = register ? self.codes[(firstCode + index) % self.codes.count] : nil
                            switch await self.open(code: code, keepalive: NodeCostBenchmark.quietKeepalive) {
                            case .success(let device):
                                await device.close()
                                outcome.ok += 1
                            case .failure(let failure):
                                outcome.failed += 1
                                outcome.error = outcome.error ?? failure.text
                            }
                        }
                        return outcome
                    }
                }
                var total = Outcome()
                for await outcome in tasks {
                    total.ok += outcome.ok
                    total.failed += outcome.failed
                    total.error = total.error ?? outcome.error
                }
                return total
            }
        }
        outcome.seconds = start.duration(to: .now).seconds
        return outcome
    }

    /// Registers `count` devices on codes 0..<count and keeps them.
    func bringOnline(count: Int, keepalive: Duration, concurrency: Int) -> Outcome {
        let start = ContinuousClock.now
        let next = SharedCounter()
        var outcome = blockingAwait { () async -> Outcome in
            await withTaskGroup(of: Outcome.self, returning: Outcome.self) { tasks in
                for _ in 0..<max(1, concurrency) {
                    tasks.addTask {
                        var outcome = Outcome()
                        while true {
                            let index = next.take()
                            guard index < count else { break }
                            // A dial storm on a loaded machine can starve a 1 s keepalive: try a device up to 3 times.
                            var lastFailure: DeviceFailure?
                            for _ in 0..<3 {
                                switch await self.open(code: self.codes[index % self.codes.count], keepalive: keepalive) {
                                case .success(let device):
                                    self.online.withLock { $0.append(device) }
                                    lastFailure = nil
                                case .failure(let failure):
                                    lastFailure = failure
                                    try? await Task.sleep(for: .milliseconds(200))
                                    continue
                                }
                                break
                            }
                            if let lastFailure {
                                outcome.failed += 1
                                outcome.error = outcome.error ?? lastFailure.text
                            } else {
                                outcome.ok += 1
                            }
                        }
                        return outcome
                    }
                }
                var total = Outcome()
                for await outcome in tasks {
                    total.ok += outcome.ok
                    total.failed += outcome.failed
                    total.error = total.error ?? outcome.error
                }
                return total
            }
        }
        outcome.seconds = start.duration(to: .now).seconds
        return outcome
    }

    /// Closes every online device (GOAWAY `normal_close`) and waits until all are closed. Returns why devices that
    /// closed before had closed, counted by reason.
    func drop() -> [String: Int] {
        let devices = online.withLock { devices in
            defer { devices.removeAll() }
            return devices
        }
        let early = earlyCloses.withLock { closes in
            defer { closes.removeAll() }
            return closes
        }
        blockingAwait { () async in
            await withTaskGroup(of: Void.self) { tasks in
                for slice in 0..<64 {
                    tasks.addTask {
                        var index = slice
                        while index < devices.count {
                            await devices[index].close()
                            index += 64
                        }
                    }
                }
            }
        }
        return early
    }

    /// A registered device's link closed without being asked to.
    func noteEarlyClose(_ reason: LinkCloseReason) {
        let key: String
        switch reason {
        case .keepaliveTimeout: key = "device_saw_no_frame_for_2_intervals"
        case .peerWentAway(let code, _): key = "node_sent_goaway_\(code)"
        case .peerDraining: key = "node_draining"
        case .transport(let error): key = "transport_\(error.kind)"
        case .local(let code): key = "closed_locally_\(code)"
        case .protocolError(let code, _): key = "protocol_error_\(code)"
        case .helloTimeout: key = "hello_timeout"
        }
        earlyCloses.withLock { $0[key, default: 0] += 1 }
    }

    func recordAnswer(_ nanoseconds: UInt64) { answers.withLock { $0.append(nanoseconds) } }
}

struct DeviceFailure: Error {
    let text: String
}

/// A counter tasks share: each `take()` returns the next index.
final class SharedCounter: Sendable {
    private let value = Atomic<Int>(0)
    func take() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// One raw device link. Everything but `link` (set once, before use) is touched only on the link's loop.
final class RawDevice: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `link` is written once right after the dial, before any other use; the waiters, `closed` and
    // `answeredAt` are used only on the link's loop (every entry point hops there first).
    private unowned let generator: DeviceGenerator
    var link: FramedLink?
    private var registerWaiter: CheckedContinuation<String?, Never>?
    private var closeWaiter: CheckedContinuation<Void, Never>?
    private var closed = false
    private var registered = false
    private var answeredAt: UInt64 = 0

    init(generator: DeviceGenerator) { self.generator = generator }

    /// Sends REGISTER and waits for REGISTER_RESULT: nil on success, else why not.
    func register(_ register: Register) async -> String? {
        guard let link else { return "no link" }
        return await withCheckedContinuation { continuation in
            let accepted = link.loop.execute { [self] in
                guard !self.closed else { return continuation.resume(returning: "closed before REGISTER") }
                self.registerWaiter = continuation
                do { try link.send(.register(register)) } catch {
                    self.registerWaiter = nil
                    continuation.resume(returning: "send REGISTER: \(error)")
                }
            }
            if !accepted { continuation.resume(returning: "loop stopped") }
        }
    }

    /// GOAWAY `normal_close`, then waits until the connection is closed.
    func close() async {
        guard let link else { return }
        await withCheckedContinuation { continuation in
            let accepted = link.loop.execute { [self] in
                if self.closed { return continuation.resume() }
                self.closeWaiter = continuation
                link.close(reason: .normalClose)
            }
            if !accepted { continuation.resume() }
        }
    }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {}

    func link(_ link: FramedLink, didReceive message: Message) {
        switch message {
        case .registerResult(let result):
            registered = result.reason == .success
            let waiter = registerWaiter
            registerWaiter = nil
            waiter?.resume(returning: result.reason == .success ? nil : "refused: \(result.reason) \(result.text ?? "")")
        case .connectionRequest(let request):
            answeredAt = Deadline.now().nanoseconds
            try? link.send(.connectionResponse(ConnectionResponse(requestID: request.requestID, decision: .allow)))
        case .sessionStarted:
            let now = Deadline.now().nanoseconds
            if answeredAt != 0 { generator.recordAnswer(now &- answeredAt) }
            answeredAt = 0
        default:
            break
        }
    }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {
        closed = true
        if registered, closeWaiter == nil { generator.noteEarlyClose(reason) }
        let waiter = registerWaiter
        registerWaiter = nil
        waiter?.resume(returning: "closed: \(reason)")
        let closeWaiter = self.closeWaiter
        self.closeWaiter = nil
        closeWaiter?.resume()
    }
}

extension String {
    fileprivate var replacingSpaces: String { String(map { $0 == " " ? "_" : $0 }) }
}
