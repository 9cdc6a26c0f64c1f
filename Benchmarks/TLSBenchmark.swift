#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import SupportWire
import SupportLink
import SupportRuntime
import SupportUtilities
import SupportSession
import SupporterCore
import DeviceNode
import SupporterNode
import SupporterREST
import SupportPostgres

/// The `tls` group: the TLS transport (SupportRuntime, SupportLink) over real loopback sockets: new connections per second (next to `openssl
/// s_time`/`s_server`), small-frame round trips, and the node's memory per idle connection (a child process holds
/// the client ends; see ``IdleConnectionsBenchmark``).
enum TLSBenchmark {
    static let group = BenchmarkGroup(
        name: "tls",
        summary: "the TLS transport on loopback: connections/s vs openssl, frame round trips, memory per idle link",
        run: run)

    /// Seconds per connection-rate row (ours and `s_time -time`).
    static let rateSeconds = 5
    /// The session frame both round-trip modes send and the server echoes (an 8-byte header + 3-byte payload).
    static let echoMessage = Message.sessionError(SessionError(reason: .unsupportedFeature))

    static func run(_ options: BenchmarkOptions) {
        if options.allocationProbe { return }  // nothing here is allocation-counted
        print("== tls: the TLS transport over loopback TLS 1.3 (EC P-256 certificates, 127.0.0.1) ==")
        let fileLimit = ProcessInfoLite.raiseFileLimit()
        guard let fixture = TLSFixture.make() else {
            print("   tls: cannot set up (certificates or TLS contexts failed); skipped\n")
            return
        }
        defer { fixture.tearDown() }
        print(
            "certificates: certs/make-dev-certs.sh --out \(fixture.directory) (EC P-256); RLIMIT_NOFILE soft = \(fileLimit);"
                + " \(fixture.serverGroup.loops.count) server loop(s), \(fixture.clientGroup.loops.count) client loop(s),"
                + " \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPU(s)")
        print()
        connectionRates(fixture)
        roundTrips(fixture)
        IdleConnectionsBenchmark.run(fixture)
    }

    // MARK: (a) connections per second

    struct RateResult {
        var connections = 0
        var failures = 0
        var seconds = 0.0
        var cpuSeconds = 0.0
        var firstError: String?
        var rate: Double { seconds > 0 ? Double(connections) / seconds : 0 }
        var cpuMillisecondsPerConnection: Double { connections > 0 ? cpuSeconds * 1000 / Double(connections) : .nan }
    }

    /// Dials with `concurrency` dialers in flight for `seconds`: TCP connect, TLS handshake, HELLO → HELLO_ACK, then
    /// close (GOAWAY + close_notify, finished in the background).
    static func dialRate(_ fixture: TLSFixture, concurrency: Int, seconds: Double) -> RateResult {
        let port = fixture.port
        let context = fixture.clientContext
        let settings = fixture.clientSettings
        let clientGroup = fixture.clientGroup
        let cpuBefore = ProcessInfoLite.cpuSeconds()
        let start = ContinuousClock.now
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        var result = blockingAwait { () async -> RateResult in
            await withTaskGroup(of: RateResult.self) { tasks in
                for _ in 0..<concurrency {
                    tasks.addTask {
                        var partial = RateResult()
                        while ContinuousClock.now < end {
                            do throws(TransportError) {
                                let link = try await TLSDialer.connect(
                                    host: "127.0.0.1", port: port, context: context, settings: settings,
                                    loop: clientGroup.next(), delegate: nil)
                                partial.connections += 1
                                link.close()
                            } catch {
                                partial.failures += 1
                                if partial.firstError == nil { partial.firstError = error.description }
                            }
                        }
                        return partial
                    }
                }
                var total = RateResult()
                for await partial in tasks {
                    total.connections += partial.connections
                    total.failures += partial.failures
                    total.firstError = total.firstError ?? partial.firstError
                }
                return total
            }
        }
        result.seconds = start.duration(to: .now).seconds
        result.cpuSeconds = ProcessInfoLite.cpuSeconds() - cpuBefore
        fixture.waitForServerDrain()
        return result
    }

    /// Runs `instances` copies of `openssl s_time` at once against 127.0.0.1:`port`; connections/s is the sum of each
    /// instance's count over its own wall time (process start to exit). CPU: the s_time processes only.
    static func sTime(port: UInt16, instances: Int, extra: [String], caFile: String) -> RateResult {
        let arguments =
            ["openssl", "s_time", "-connect", "127.0.0.1:\(port)", "-new", "-time", "\(rateSeconds)",
             "-CAfile", caFile, "-verify", "2"] + extra
        let children = (0..<instances).compactMap { _ in ChildProcess("openssl", arguments, captureOutput: true) }
        var result = RateResult()
        guard children.count == instances else {
            result.firstError = "cannot start openssl s_time"
            return result
        }
        var rateSum = 0.0
        for child in children {
            let output = child.readAll()
            let wall = child.started.duration(to: .now).seconds
            child.wait()
            result.cpuSeconds += child.cpuSeconds
            result.seconds = max(result.seconds, wall)
            guard let line = output.split(separator: "\n").first(where: { $0.contains("connections in") }),
                let count = line.split(separator: " ").first.flatMap({ Int($0) })
            else {
                result.firstError = "s_time printed no count: " + String(output.suffix(200))
                continue
            }
            result.connections += count
            rateSum += Double(count) / wall
        }
        // Report the summed per-instance rate through `seconds` so `rate` stays count / seconds.
        if rateSum > 0 { result.seconds = Double(result.connections) / rateSum }
        return result
    }

    /// `openssl s_server` as the brief gives it, on a free port; returns it once it accepts connections.
    static func startSServer(_ fixture: TLSFixture) -> (ChildProcess, UInt16)? {
        guard let port = ProcessInfoLite.freePort(),
            let server = ChildProcess(
                "openssl",
                ["openssl", "s_server", "-accept", "\(port)", "-cert", fixture.directory + "/supporter.pem", "-key",
                 fixture.directory + "/supporter.key", "-tls1_3", "-alpn", "rsup/1", "-www", "-quiet"],
                captureOutput: false)
        else { return nil }
        guard ProcessInfoLite.waitForListener(port: port, timeout: .seconds(5)) else {
            server.signal(SIGKILL)
            server.wait()
            return nil
        }
        return (server, port)
    }

    static func connectionRates(_ fixture: TLSFixture) {
        var table = TablePrinter(
            title: "(a) new connections per second (\(rateSeconds) s per row, 127.0.0.1, EC P-256 server certificate)",
            columns: [
                .init(title: "client -> server", alignment: .left),
                .init(title: "in flight", alignment: .right),
                .init(title: "one connection is", alignment: .left),
                .init(title: "conns", alignment: .right),
                .init(title: "conn/s", alignment: .right),
                .init(title: "CPU ms/conn", alignment: .right),
                .init(title: "failed", alignment: .right),
            ])
        func add(_ name: String, _ inFlight: String, _ what: String, _ result: RateResult) {
            table.addRow([
                name, inFlight, what, Format.grouped(result.connections), Format.rate(result.rate),
                Format.fixed(result.cpuMillisecondsPerConnection, 3), Format.grouped(result.failures),
            ])
            if let error = result.firstError { print("   \(name) (\(inFlight) in flight): first error: \(error)") }
        }

        // Warm-up: code paths, the loops' buffers, the allocator's arenas.
        _ = dialRate(fixture, concurrency: 4, seconds: 0.5)

        let oursWhat = "TCP+TLS 1.3+HELLO/HELLO_ACK+close"
        var ours: [Int: RateResult] = [:]
        for concurrency in [1, 4, 8] {
            let result = dialRate(fixture, concurrency: concurrency, seconds: Double(rateSeconds))
            ours[concurrency] = result
            add("TLSDialer -> TLSListener", "\(concurrency)", oursWhat, result)
        }

        var openssl: [String: RateResult] = [:]
        let caFile = fixture.directory + "/ca.pem"
        for (key, instances, extra, what) in [
            ("hs1", 1, [String](), "TCP+TLS 1.3+close (handshake only)"),
            ("www1", 1, ["-www", "/"], "TCP+TLS 1.3+GET /+page (~5 KB)+close"),
            ("hs4", 4, [String](), "TCP+TLS 1.3+close (handshake only)"),
        ] {
            guard let (server, port) = startSServer(fixture) else {
                print("   openssl s_server did not start; openssl rows skipped")
                break
            }
            var result = sTime(port: port, instances: instances, extra: extra, caFile: caFile)
            server.signal(SIGTERM)
            server.wait()
            result.cpuSeconds += server.cpuSeconds
            openssl[key] = result
            add("s_time -> s_server", instances == 1 ? "1" : "\(instances) (procs)", what, result)
        }

        // s_time against our listener: it offers no ALPN, so our server completes the handshake, then refuses the
        // connection (alpn_mismatch) without HELLO: the server side's TLS cost, nothing of the link.
        var againstOurs: [Int: RateResult] = [:]
        for instances in [1, 4] {
            let before = ProcessInfoLite.cpuSeconds()
            var result = sTime(port: fixture.port, instances: instances, extra: [], caFile: caFile)
            result.cpuSeconds += ProcessInfoLite.cpuSeconds() - before
            fixture.waitForServerDrain()
            againstOurs[instances] = result
            add("s_time -> TLSListener", instances == 1 ? "1" : "\(instances) (procs)", "TCP+TLS 1.3+close (no ALPN: refused after handshake)", result)
        }
        table.print()

        var ratios = TablePrinter(
            title: "(a') ours / openssl (conn/s ratio; CPU ratio = openssl CPU ms/conn / ours: > 1 means we use less)",
            columns: [
                .init(title: "comparison", alignment: .left),
                .init(title: "ours conn/s", alignment: .right),
                .init(title: "openssl conn/s", alignment: .right),
                .init(title: "rate ratio", alignment: .right),
                .init(title: "CPU ratio", alignment: .right),
            ])
        func ratio(_ name: String, _ mine: RateResult?, _ theirs: RateResult?) {
            guard let mine, let theirs, theirs.rate > 0 else {
                ratios.addRow([name, "n/a", "n/a", "n/a", "n/a"])
                return
            }
            ratios.addRow([
                name, Format.rate(mine.rate), Format.rate(theirs.rate), Format.fixed(mine.rate / theirs.rate, 2) + "x",
                Format.fixed(theirs.cpuMillisecondsPerConnection / mine.cpuMillisecondsPerConnection, 2) + "x",
            ])
        }
        ratio("1 in flight: dialer->listener vs s_time->s_server (handshake only)", ours[1], openssl["hs1"])
        ratio("1 in flight: dialer->listener vs s_time -www / -> s_server -www", ours[1], openssl["www1"])
        ratio("4 in flight: dialer->listener vs 4 x s_time->s_server", ours[4], openssl["hs4"])
        ratio("8 in flight: dialer->listener vs 4 x s_time->s_server", ours[8], openssl["hs4"])
        ratio("server only: s_time->TLSListener vs s_time->s_server (1 proc)", againstOurs[1], openssl["hs1"])
        ratio("server only: 4 x s_time->TLSListener vs 4 x s_time->s_server", againstOurs[4], openssl["hs4"])
        ratios.print()
        print(
            """
               Method: both ends run on this machine and share its CPUs, for ours and for openssl alike. Ours: N tasks
               each loop TLSDialer.connect -> link.close() for \(rateSeconds) s (client verifies the chain against ca.pem
               and the name, X25519, TLS_AES_128_GCM_SHA256); a connection counts when connect returns, i.e. after TCP,
               the TLS 1.3 handshake, and HELLO -> HELLO_ACK (one frame each way); the GOAWAY/close_notify close runs
               in the background and its cost is included in CPU. openssl: `openssl s_server -accept PORT -cert
               supporter.pem -key supporter.key -tls1_3 -alpn rsup/1 -www` (same certificate; sends 2 TLS 1.3 session
               tickets per connection, ours sends none; single-threaded, one connection at a time) and `openssl s_time
               -connect 127.0.0.1:PORT -new -time \(rateSeconds) -CAfile ca.pem -verify 2` (verifies like our dialer; one
               connection at a time per process; no ALPN offered). Handshake-only s_time does no application
               round trip, so it is the lighter workload; `-www /` adds one request/response but the response is
               a ~5 KB HTML page, so it is heavier than HELLO/HELLO_ACK; ours sits between. s_time rates use the
               process's wall time (its own "real seconds" is rounded to whole seconds); "(procs)": that many s_time
               processes at once, rates summed. CPU ms/conn: user+sys of every process involved (ours: this process,
               client and server; openssl: s_time + s_server, from wait4) / connections. s_time cannot speak our HELLO,
               so "s_time -> TLSListener" measures only our server's TLS side (refused at the ALPN check, as designed).

            """)
    }

    // MARK: (b) round trips

    struct LatencyRow {
        var mode: String
        var samples: [UInt64]  // nanoseconds, sorted
        var seconds: Double
    }

    static func roundTrips(_ fixture: TLSFixture) {
        let delegate = EchoClientDelegate()
        let port = fixture.port
        let context = fixture.clientContext
        let settings = fixture.clientSettings
        let loop = fixture.clientGroup.next()
        let dialed = blockingAwait { () async -> Result<FramedLink, TransportError> in
            do throws(TransportError) {
                return .success(
                    try await TLSDialer.connect(
                        host: "127.0.0.1", port: port, context: context, settings: settings, loop: loop,
                        delegate: delegate))
            } catch { return .failure(error) }
        }
        guard case .success(let link) = dialed else {
            print("(b) round trips: cannot connect: \(dialed)\n")
            return
        }
        let count = 20_000
        let warmUp = 2_000
        var rows: [LatencyRow] = []
        let clock = ContinuousClock()

        // Caller thread: this thread sends (FramedLink.send hops to the loop) and blocks on a semaphore that the
        // client delegate signals when the echo arrives.
        func callerThreadRun(_ total: Int) -> LatencyRow {
            var samples = [UInt64](repeating: 0, count: total)
            let start = clock.now
            for index in 0..<total {
                let sent = clock.now
                do { try link.send(echoMessage) } catch {
                    print("(b) send failed: \(error)")
                    break
                }
                delegate.echoed.wait()
                samples[index] = UInt64(sent.duration(to: clock.now).nanosecondsClamped)
            }
            let seconds = start.duration(to: clock.now).seconds
            samples.sort()
            return LatencyRow(mode: "caller thread (send + semaphore)", samples: samples, seconds: seconds)
        }
        _ = callerThreadRun(warmUp)
        rows.append(callerThreadRun(count))

        // On the loop: the client delegate sends the next frame from the client loop as soon as the echo arrives.
        delegate.startLoopRun(count: count, link: link)
        delegate.loopRunDone.wait()
        rows.append(
            LatencyRow(mode: "client loop (delegate sends next)", samples: delegate.loopSamples.sorted(), seconds: delegate.loopSeconds))
        link.close()
        fixture.waitForServerDrain()

        var table = TablePrinter(
            title: "(b) small-frame round trips over one connection (SESSION_ERROR, 11 wire bytes, echoed by the server)",
            columns: [
                .init(title: "client side", alignment: .left),
                .init(title: "round trips", alignment: .right),
                .init(title: "RT/s", alignment: .right),
                .init(title: "p50 us", alignment: .right),
                .init(title: "p90 us", alignment: .right),
                .init(title: "p99 us", alignment: .right),
                .init(title: "p99.9 us", alignment: .right),
                .init(title: "max us", alignment: .right),
            ])
        for row in rows {
            func percentile(_ p: Double) -> String {
                guard !row.samples.isEmpty else { return "n/a" }
                let index = min(row.samples.count - 1, Int(Double(row.samples.count) * p))
                return Format.fixed(Double(row.samples[index]) / 1000, 1)
            }
            table.addRow([
                row.mode, Format.grouped(row.samples.count), Format.rate(Double(row.samples.count) / row.seconds),
                percentile(0.5), percentile(0.9), percentile(0.99), percentile(0.999),
                Format.fixed(Double(row.samples.last ?? 0) / 1000, 1),
            ])
        }
        table.print()
        print(
            """
               Method: one TLS link (client loop and server loop are different threads of this process); the client
               sends SESSION_ERROR(unsupported_feature), the server's delegate echoes it with link.send on its loop,
               the client's delegate receives it. \(Format.grouped(warmUp)) warm-up round trips, then \(Format.grouped(count)) timed,
               each timed alone (latency = send call to echo received, on a monotonic clock). "caller thread": the
               benchmark thread calls FramedLink.send (off-loop path: encode-check, loop.execute hop) and waits on a
               DispatchSemaphore the delegate signals, so each trip includes two cross-thread wake-ups. "client loop":
               the delegate sends the next frame directly on the client loop (in-loop send path, no hops besides the
               server's). TCP_NODELAY is on (the transport sets it).

            """)
    }
}

/// Client side of the round-trip benchmark.
final class EchoClientDelegate: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: the loop-run fields are written only on the client loop, and read by the benchmark thread only
    // after `loopRunDone` is signalled.
    let echoed = DispatchSemaphore(value: 0)
    let loopRunDone = DispatchSemaphore(value: 0)
    private var inLoopRun = false
    private var remaining = 0
    private var lastSend = ContinuousClock.now
    private var runStart = ContinuousClock.now
    var loopSamples: [UInt64] = []
    var loopSeconds = 0.0

    func startLoopRun(count: Int, link: FramedLink) {
        link.loop.execute { [self] in
            self.inLoopRun = true
            self.remaining = count
            self.loopSamples = []
            self.loopSamples.reserveCapacity(count)
            self.runStart = .now
            self.lastSend = .now
            try? link.send(TLSBenchmark.echoMessage)
        }
    }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {}

    func link(_ link: FramedLink, didReceive message: Message) {
        guard inLoopRun else {
            echoed.signal()
            return
        }
        let now = ContinuousClock.now
        loopSamples.append(UInt64(lastSend.duration(to: now).nanosecondsClamped))
        remaining -= 1
        if remaining > 0 {
            lastSend = .now
            try? link.send(TLSBenchmark.echoMessage)
        } else {
            inLoopRun = false
            loopSeconds = runStart.duration(to: now).seconds
            loopRunDone.signal()
        }
    }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {}
}

/// Server side: counts links and echoes every session frame back.
final class ServerDelegate: FramedLinkDelegate {
    let accepted = Atomic<Int>(0)
    let opened = Atomic<Int>(0)
    let closed = Atomic<Int>(0)

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {
        opened.wrappingAdd(1, ordering: .relaxed)
    }

    func link(_ link: FramedLink, didReceive message: Message) {
        try? link.send(message)
    }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {
        closed.wrappingAdd(1, ordering: .relaxed)
    }
}

/// Certificates, contexts, loop groups and one listener, shared by the group's benchmarks.
final class TLSFixture: Sendable {
    let directory: String
    let serverContext: TLSContext
    let clientContext: TLSContext
    let serverGroup: EventLoopGroup
    let clientGroup: EventLoopGroup
    let serverDelegate = ServerDelegate()
    let listener: TLSListener
    let port: UInt16
    let clientSettings: LinkSettings
    /// The keepalive both ends propose: long, so idle links stay silent during a measurement.
    static let keepalive: Duration = .seconds(600)

    private init(
        directory: String, serverContext: TLSContext, clientContext: TLSContext, serverGroup: EventLoopGroup,
        clientGroup: EventLoopGroup, listenerFactory: (ServerDelegate) throws(TransportError) -> TLSListener
    ) throws(TransportError) {
        self.directory = directory
        self.serverContext = serverContext
        self.clientContext = clientContext
        self.serverGroup = serverGroup
        self.clientGroup = clientGroup
        var settings = LinkSettings(role: .device, nodeName: "bench-device")
        settings.keepaliveInterval = TLSFixture.keepalive
        self.clientSettings = settings
        let listener = try listenerFactory(serverDelegate)
        self.listener = listener
        self.port = listener.localAddress.port
    }

    static func make() -> TLSFixture? {
        var template = Array("/tmp/rsup-bench-tls-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        let directory = String(cString: made)
        guard let script = locateScript("certs/make-dev-certs.sh"),
            let child = ChildProcess("bash", ["bash", script, "--out", directory], captureOutput: true)
        else {
            print("   cannot find or run certs/make-dev-certs.sh")
            return nil
        }
        _ = child.readAll()
        guard child.wait() == 0 else {
            print("   certs/make-dev-certs.sh failed (status \(child.exitStatus ?? -1))")
            return nil
        }
        do throws(TransportError) {
            let serverContext = try TLSContext(
                .makeServerConfiguration(
                    certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
            let clientContext = try TLSContext(
                .makeClientConfiguration(trustRoots: .file(directory + "/ca.pem"), pinnedPublicKeys: [], serverName: "localhost"))
            let serverGroup = try EventLoopGroup(loopCount: 2)
            let clientGroup = try EventLoopGroup(loopCount: 2)
            var serverSettings = LinkSettings(role: .supporter, nodeName: "bench-supporter")
            serverSettings.keepaliveInterval = keepalive
            return try TLSFixture(
                directory: directory, serverContext: serverContext, clientContext: clientContext,
                serverGroup: serverGroup, clientGroup: clientGroup
            ) { delegate throws(TransportError) in
                try TLSListener(
                    host: "127.0.0.1", port: 0, context: serverContext, settings: serverSettings, group: serverGroup
                ) { link in
                    delegate.accepted.wrappingAdd(1, ordering: .relaxed)
                    link.delegate = delegate
                    return true
                }
            }
        } catch {
            print("   TLS set-up failed: \(error)")
            return nil
        }
    }

    /// `relative` under the working directory, else under the package root guessed from this executable's path
    /// (`<root>/.build/<triple>/release/Benchmarks`).
    static func locateScript(_ relative: String) -> String? {
        if access(relative, R_OK) == 0 { return relative }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        var path = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        while let slash = path.lastIndex(of: "/"), !path.isEmpty {
            path = String(path[..<slash])
            if access(path + "/" + relative, R_OK) == 0 { return path + "/" + relative }
        }
        return nil
    }

    /// Waits (up to `timeout`) until every accepted server link has closed.
    @discardableResult
    func waitForServerDrain(timeout: Duration = .seconds(15)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if serverDelegate.closed.load(ordering: .relaxed) >= serverDelegate.accepted.load(ordering: .relaxed) {
                return true
            }
            ProcessInfoLite.sleep(.milliseconds(20))
        }
        return false
    }

    func tearDown() {
        listener.close()
        if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() }
    }
}

extension Duration {
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
