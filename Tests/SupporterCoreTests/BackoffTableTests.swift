import SupporterCore
import Testing
import SupportSession
import SupportWire
import TestSupport
import SupporterModel

@Suite struct BackoffTableTests {
    let policy = BackoffPolicy(freeFailures: 3, base: .seconds(1), maximum: .seconds(8), decayInterval: .seconds(60))

    @Test func freeFailuresDoNotBlock() {
        var table = BackoffTable(policy: policy)
        for _ in 0..<3 { #expect(table.recordFailure("a", now: .seconds(100)) == nil) }
        #expect(table.retryAfter("a", now: .seconds(100)) == nil)
    }

    @Test func blocksDoubleUpToTheMaximum() {
        var table = BackoffTable(policy: policy)
        for _ in 0..<3 { table.recordFailure("a", now: .seconds(100)) }
        #expect(table.recordFailure("a", now: .seconds(100)) == .seconds(1))
        #expect(table.recordFailure("a", now: .seconds(100)) == .seconds(2))
        #expect(table.recordFailure("a", now: .seconds(100)) == .seconds(4))
        #expect(table.recordFailure("a", now: .seconds(100)) == .seconds(8))
        #expect(table.recordFailure("a", now: .seconds(100)) == .seconds(8))
        #expect(table.retryAfter("a", now: .seconds(103)) == .seconds(5))
        #expect(table.retryAfter("a", now: .seconds(108)) == nil)
    }

    @Test func failuresDecayOnePerInterval() {
        var table = BackoffTable(policy: policy)
        for _ in 0..<5 { table.recordFailure("a", now: .seconds(0)) }
        #expect(table.failures("a", now: .seconds(59)) == 5)
        #expect(table.failures("a", now: .seconds(120)) == 3)
        #expect(table.failures("a", now: .seconds(17 * 60)) == 0)
        // 17 minutes later one failure is free again: no ban for a carrier-grade NAT's occasional typo.
        #expect(table.recordFailure("a", now: .seconds(17 * 60)) == nil)
    }

    @Test func aSuccessResetsTheKey() {
        var table = BackoffTable(policy: policy)
        for _ in 0..<6 { table.recordFailure("a", now: .seconds(0)) }
        #expect(table.retryAfter("a", now: .seconds(0)) != nil)
        let wasRecorded = table.reset("a")
        #expect(wasRecorded)
        #expect(table.retryAfter("a", now: .seconds(0)) == nil)
        #expect(table.failures("a", now: .seconds(0)) == 0)
    }

    @Test func theTableStaysWithinItsCapacity() {
        var table = BackoffTable(policy: policy, capacity: 100)
        for index in 0..<10_000 { table.recordFailure("k\(index)", now: .milliseconds(Int64(index))) }
        #expect(table.count <= 100)
        // The newest key is kept.
        #expect(table.failures("k9999", now: .milliseconds(9999)) == 1)
    }

    @Test func decayedKeysAreForgotten() {
        var table = BackoffTable(policy: policy)
        table.recordFailure("a", now: .seconds(0))
        table.forgetDecayed(now: .seconds(61))
        #expect(table.count == 0)
    }
}
