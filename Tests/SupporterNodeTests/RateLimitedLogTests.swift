import Synchronization
import SupportSession
import Testing

@testable import SupporterNode
import SupportUtilities
import SupportWire
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

@Suite struct RateLimitedLogTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        var logger: NodeLogger { NodeLogger(minimumLevel: .info) { [self] _, line in lines.withLock { $0.append(line) } } }
    }

    let start = Deadline(nanoseconds: 1_000_000_000_000)

    @Test func aBurstIsOneLineAndItsCountIsReportedWhenTheIntervalEndsEvenIfItStopped() {
        let lines = Lines()
        let log = RateLimitedLog(logger: lines.logger, interval: .seconds(10))
        for index in 0..<16 { log.log(.info, key: "tls:203.0.113.9", now: start + .milliseconds(index), "failed \(index)") }
        log.log(.info, key: "tls:198.51.100.1", now: start, "other source")
        #expect(lines.all == ["failed 0", "other source"])
        log.flush(now: start + .seconds(5))
        #expect(lines.all.count == 2, "nothing is due before the interval ends")
        log.flush(now: start + .seconds(10))
        #expect(lines.all.count == 3)
        #expect(lines.all.last == "held back 15 more like this (one line per 10 s): failed 0")
        // The key was forgotten: the next line is logged at once, with nothing left to report.
        log.log(.info, key: "tls:203.0.113.9", now: start + .seconds(11), "failed again")
        log.flush(now: start + .seconds(30))
        #expect(lines.all.suffix(1) == ["failed again"])
    }

    @Test func keysDoNotPileUp() {
        let lines = Lines()
        let log = RateLimitedLog(logger: lines.logger, interval: .seconds(10))
        for index in 0..<3000 { log.log(.info, key: "k\(index)", now: start, "line \(index)") }
        #expect(lines.all.count == 1024 + 1, "1,024 keys, then one shared key")
        log.flush(now: start + .seconds(10))
        log.log(.info, key: "fresh", now: start + .seconds(10), "fresh line")
        #expect(lines.all.last == "fresh line", "after a flush new keys have their own lines again")
    }
}
