import Foundation
import SupporterCore
import Testing
import SupportSession
import SupportWire
import TestSupport

/// A full pool of unregistered connections is shared fairly (SPEC §13.1): a few dozen sources holding all of it cannot
/// keep a new source out.
@Suite struct FairShareAdmissionTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func registry(total: Int = 100) -> CodeRegistry {
        var policy = CodeRegistry.Policy()
        policy.unauthenticatedTotal = total
        return CodeRegistry(policy: policy)
    }

    @Test func aNewSourceTakesTheOldestConnectionOfTheBiggestHolderOfAFullPool() {
        var registry = registry()
        var next: UInt64 = 1
        // 10 attacking sources fill the pool of 100, 10 connections each.
        var sources: [String] = []
        for index in 0..<10 {
            let source = "203.0.113.\(index + 1)"
            sources.append(source)
            for _ in 0..<10 {
                #expect(registry.connectionOpened(ConnectionID(next), address: source, now: start) == .admit)
                next += 1
            }
        }
        #expect(registry.unauthenticatedConnections == 100)
        // An attacker as big as the others gets nothing more.
        #expect(registry.connectionOpened(ConnectionID(next), address: sources[1], now: start) != .admit)
        next += 1
        // A legitimate newcomer is let in, in place of the oldest connection of a biggest holder.
        let outcome = registry.connectionOpened(ConnectionID(next), address: "198.51.100.9", now: start)
        next += 1
        guard case .admitEvicting(let victim) = outcome else {
            Issue.record("the newcomer was not admitted: \(outcome)")
            return
        }
        #expect(victim.rawValue % 10 == 1, "not the oldest of its source: \(victim)")
        #expect(registry.unauthenticatedConnections == 100)
        #expect(registry.invariantViolation() == nil)
        // The evicted connection is forgotten: its close changes nothing.
        registry.connectionClosed(victim)
        #expect(registry.unauthenticatedConnections == 100)
        #expect(registry.invariantViolation() == nil)
        // Newcomers keep getting in until the shares are level (every source within one of the biggest).
        var admitted = 0
        for index in 0..<200 {
            let outcome = registry.connectionOpened(ConnectionID(next), address: "198.51.100.\(20 + index % 30)", now: start)
            next += 1
            if outcome != .admit, case .refuse = outcome { continue }
            admitted += 1
        }
        #expect(admitted > 40, "only \(admitted) newcomers got a share of the full pool")
        #expect(registry.unauthenticatedConnections == 100)
        #expect(registry.invariantViolation() == nil)
    }

    @Test func aPoolWithRoomEvictsNobody() {
        var registry = registry()
        for index in 0..<50 {
            #expect(registry.connectionOpened(ConnectionID(UInt64(index + 1)), address: "203.0.113.1", now: start) == .admit)
        }
        #expect(registry.connectionOpened(ConnectionID(100), address: "198.51.100.1", now: start) == .admit)
    }
}
