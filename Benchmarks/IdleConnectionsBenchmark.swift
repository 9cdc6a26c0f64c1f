#if canImport(Glibc)
import Glibc
#endif
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

/// (c) of the `tls` group: resident memory per idle established link on the node (server) side.
///
/// The client ends live in a child process (this executable again, hidden subcommand `tls-idle-clients`), so each
/// process stays under its own descriptor limit and the server's RSS holds only server-side state.
enum IdleConnectionsBenchmark {
    static let subcommand = "tls-idle-clients"
    static let counts = [1_000, 10_000]
    /// Dials in flight in the child: bounds the accept backlog and the dial rate.
    static let childConcurrency = 32

    struct Row {
        var count: Int
        var opened = 0
        var dialSeconds = 0.0
        var rssBeforeKiB = 0
        var rssAfterKiB = 0
        var rssAfterTrimKiB = 0
        var heapBefore = 0
        var heapAfter = 0
        var rssClosedKiB = 0
        var clientKiBPerLink: Double = .nan
        var error: String?

        var kibPerLink: Double { Double(rssAfterKiB - rssBeforeKiB) / Double(max(opened, 1)) }
        var kibPerLinkTrimmed: Double { Double(rssAfterTrimKiB - rssBeforeKiB) / Double(max(opened, 1)) }
        var heapBytesPerLink: Double { Double(heapAfter - heapBefore) / Double(max(opened, 1)) }
    }

    static func run(_ fixture: TLSFixture) {
        var rows: [Row] = []
        for count in counts { rows.append(measure(fixture, count: count)) }
        var table = TablePrinter(
            title: "(c) node (server) memory per idle established link (TLS 1.3 + HELLO done, keepalive 600 s)",
            columns: [
                .init(title: "links", alignment: .right),
                .init(title: "dial s", alignment: .right),
                .init(title: "RSS before MiB", alignment: .right),
                .init(title: "RSS idle MiB", alignment: .right),
                .init(title: "KiB/link", alignment: .right),
                .init(title: "KiB/link trimmed", alignment: .right),
                .init(title: "heap B/link", alignment: .right),
                .init(title: "RSS closed MiB", alignment: .right),
                .init(title: "client KiB/link", alignment: .right),
            ])
        for row in rows {
            if let error = row.error { print("   \(Format.grouped(row.count)) links: \(error)") }
            table.addRow([
                Format.grouped(row.opened), Format.fixed(row.dialSeconds, 1),
                Format.fixed(Double(row.rssBeforeKiB) / 1024, 1), Format.fixed(Double(row.rssAfterKiB) / 1024, 1),
                Format.fixed(row.kibPerLink, 1), Format.fixed(row.kibPerLinkTrimmed, 1),
                Format.fixed(row.heapBytesPerLink, 0), Format.fixed(Double(row.rssClosedKiB) / 1024, 1),
                Format.fixed(row.clientKiBPerLink, 1),
            ])
        }
        table.print()
        print(
            """
               Method: this process is the node: the listener of (a)/(b), \(fixture.serverGroup.loops.count) loops, keepalive 600 s. Before:
               all earlier links closed, malloc_trim(0), VmRSS. Then `/proc/self/exe \(subcommand) --port P --count N`
               dials N links (TLSDialer, \(childConcurrency) in flight, keepalive 600 s, RLIMIT_NOFILE raised) and prints a ready
               line; once the server has opened all N, the links sit idle 2 s and VmRSS is read ("KiB/link" =
               (idle - before) / N), then again after malloc_trim(0) ("trimmed"; target <= 16 KiB). heap B/link:
               mallinfo2 in-use bytes (every arena, mmapped chunks included), after - before, / N: the allocator's
               view without page rounding or free-but-unreturned pages. Kernel socket buffers are not in RSS. RSS
               closed: after the child exits, every server link closed, malloc_trim(0). client KiB/link: the same
               RSS delta in the child (dialer side, untrimmed).

            """)
    }

    static func measure(_ fixture: TLSFixture, count: Int) -> Row {
        var row = Row(count: count)
        let delegate = fixture.serverDelegate
        fixture.waitForServerDrain()
        ProcessInfoLite.trimHeap()
        ProcessInfoLite.sleep(.milliseconds(300))
        ProcessInfoLite.trimHeap()
        row.rssBeforeKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        row.heapBefore = ProcessInfoLite.heapInUse()
        let openedBefore = delegate.opened.load(ordering: .relaxed)

        let started = ContinuousClock.now
        guard
            let child = ChildProcess(
                "/proc/self/exe",
                ["Benchmarks", subcommand, "--port", "\(fixture.port)", "--count", "\(count)", "--concurrency",
                 "\(childConcurrency)", "--ca", fixture.directory + "/ca.pem"],
                captureOutput: true, pipeInput: true, inheritStandardError: true)
        else {
            row.error = "cannot start the client child process"
            return row
        }
        defer {
            child.closeInput()
            child.wait()
        }
        guard let ready = child.readLine(timeout: .seconds(300)), ready.hasPrefix("ready") else {
            row.error = "the client child did not report ready"
            return row
        }
        row.dialSeconds = started.duration(to: .now).seconds
        var fields: [String: String] = [:]
        for field in ready.split(separator: " ").dropFirst() {
            let parts = field.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let childOpened = fields["opened"].flatMap { Int($0) } ?? 0
        if let failed = fields["failed"].flatMap({ Int($0) }), failed > 0 {
            row.error = "\(failed) dial(s) failed in the child: \(fields["error"] ?? "?")"
        }
        row.clientKiBPerLink = fields["kib_per_link"].flatMap { Double($0) } ?? .nan
        // Every link the child holds is open on our side too.
        let deadline = ContinuousClock.now + .seconds(20)
        while delegate.opened.load(ordering: .relaxed) - openedBefore < childOpened, ContinuousClock.now < deadline {
            ProcessInfoLite.sleep(.milliseconds(20))
        }
        row.opened = delegate.opened.load(ordering: .relaxed) - openedBefore
        ProcessInfoLite.sleep(.seconds(2))
        row.rssAfterKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        ProcessInfoLite.trimHeap()
        row.rssAfterTrimKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        row.heapAfter = ProcessInfoLite.heapInUse()

        child.closeInput()
        child.wait()
        if !fixture.waitForServerDrain(timeout: .seconds(30)) {
            row.error = (row.error.map { $0 + "; " } ?? "") + "server links did not all close within 30 s"
        }
        ProcessInfoLite.trimHeap()
        row.rssClosedKiB = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        return row
    }

    // MARK: the child

    /// `tls-idle-clients --port P --count N [--concurrency C] --ca PATH`: dials N links to 127.0.0.1:P, prints
    /// `ready opened=N failed=F kib_per_link=K [error=...]`, holds them until stdin closes, then exits.
    static func childMain(_ arguments: [String]) -> Never {
        var port: UInt16 = 0
        var count = 0
        var concurrency = 32
        var caPath = ""
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--port": port = UInt16(value) ?? 0
            case "--count": count = Int(value) ?? 0
            case "--concurrency": concurrency = max(1, Int(value) ?? 32)
            case "--ca": caPath = value
            default: break
            }
        }
        ProcessInfoLite.raiseFileLimit()
        let context: TLSContext
        let group: EventLoopGroup
        do throws(TransportError) {
            context = try TLSContext(
                .makeClientConfiguration(trustRoots: .file(caPath), pinnedPublicKeys: [], serverName: "localhost"))
            group = try EventLoopGroup(loopCount: 2)
        } catch {
            writeStandardOutput("ready opened=0 failed=\(count) error=\(error.description.replacingSpaces)")
            exit(1)
        }
        var settings = LinkSettings(role: .device, nodeName: "bench-idle-device")
        settings.keepaliveInterval = TLSFixture.keepalive
        let rssBefore = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        let state = ChildState()
        let settingsCopy = settings
        let (targetPort, total, inFlight) = (port, count, concurrency)
        blockingAwait { () async -> Void in
            await withTaskGroup(of: Void.self) { tasks in
                for _ in 0..<inFlight {
                    tasks.addTask {
                        while state.next.wrappingAdd(1, ordering: .relaxed).oldValue < total {
                            do throws(TransportError) {
                                let link = try await TLSDialer.connect(
                                    host: "127.0.0.1", port: targetPort, context: context, settings: settingsCopy,
                                    loop: group.next(), connectTimeout: .seconds(30), delegate: nil)
                                state.links.withLock { $0.append(link) }
                            } catch {
                                state.failures.wrappingAdd(1, ordering: .relaxed)
                                state.firstError.withLock { $0 = $0 ?? error.description }
                            }
                        }
                    }
                }
            }
        }
        let opened = state.links.withLock { $0.count }
        ProcessInfoLite.sleep(.seconds(1))
        let rssAfter = ProcessInfoLite.statusKiB("VmRSS") ?? 0
        var line = "ready opened=\(opened) failed=\(state.failures.load(ordering: .relaxed))"
        line += " kib_per_link=\(Format.fixed(Double(rssAfter - rssBefore) / Double(max(opened, 1)), 1))"
        if let error = state.firstError.withLock({ $0 }) { line += " error=" + error.replacingSpaces }
        writeStandardOutput(line)
        // Hold the links until the parent closes our stdin.
        var byte: UInt8 = 0
        while true {
            let result = read(0, &byte, 1)
            if result == 0 || (result < 0 && errno != EINTR) { break }
        }
        _exit(0)
    }
}

/// The child's shared dial state.
private final class ChildState: Sendable {
    let links = Mutex<[FramedLink]>([])
    let next = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    let firstError = Mutex<String?>(nil)
}

extension String {
    fileprivate var replacingSpaces: String { String(map { $0 == " " ? "_" : $0 }) }
}
