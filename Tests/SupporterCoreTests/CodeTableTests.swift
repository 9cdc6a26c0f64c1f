import Foundation
import Testing
import TestSupport

@testable import SupporterCore
import SupportSession
import SupportWire
import SupporterModel

/// The code table's expiry index: the tick sees exactly the codes a full scan would, without scanning.
@Suite struct CodeTableTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func entry(_ code: String, validFor seconds: TimeInterval) -> CodeRegistry.CodeEntry {
        CodeRegistry.CodeEntry(
            record: SessionCodeRecord(code: code, createdAt: start, validUntil: start.addingTimeInterval(seconds)))
    }

    /// What the index answers must be what scanning every code answers.
    func scan(_ table: CodeTable, now: Date) -> [String] {
        table.all.filter { !$0.value.expiryRecorded && now >= $0.value.record.validUntil }.map(\.key).sorted()
    }

    @Test func dueCodesAreTheOnesWhoseTimeCameAndStayDueUntilRecorded() {
        var table = CodeTable()
        table["a"] = entry("a", validFor: 10)
        table["b"] = entry("b", validFor: 20)
        table["c"] = entry("c", validFor: 30)
        #expect(table.due(now: start.addingTimeInterval(5)) == [])
        #expect(table.due(now: start.addingTimeInterval(20)) == ["a", "b"])
        // Not recorded yet (a device on it): due again.
        #expect(table.due(now: start.addingTimeInterval(21)) == ["a", "b"])
        table["a"]?.expiryRecorded = true
        #expect(table.due(now: start.addingTimeInterval(22)) == ["b"])
        // Extended: no longer due, due again at its new time.
        table["b"]?.record.validUntil = start.addingTimeInterval(40)
        #expect(table.due(now: start.addingTimeInterval(25)) == [])
        // Removed: never reported.
        table["c"] = nil
        #expect(table.due(now: start.addingTimeInterval(41)) == ["b"])
    }

    @Test func aRecordedExpiryThatIsClearedAgainIsIndexedAgain() {
        var table = CodeTable()
        table["a"] = entry("a", validFor: 10)
        #expect(table.due(now: start.addingTimeInterval(10)) == ["a"])
        table["a"]?.expiryRecorded = true
        #expect(table.due(now: start.addingTimeInterval(11)) == [])
        // An update that makes the code valid again (as `updateCode` does) clears the flag.
        table["a"]?.record.validUntil = start.addingTimeInterval(60)
        table["a"]?.expiryRecorded = false
        #expect(table.due(now: start.addingTimeInterval(59)) == [])
        #expect(table.due(now: start.addingTimeInterval(60)) == ["a"])
    }

    /// Random changes, checked against a full scan at every step; many changes of one code's time make the index
    /// rebuild itself (stale entries outnumbering live ones) without losing anything.
    @Test func randomChangesAgreeWithAFullScan() {
        var table = CodeTable()
        var generator = SplitMix64(state: 7)
        var now = start
        for step in 0..<20_000 {
            let code = "c\(generator.next() % 300)"
            switch generator.next() % 6 {
            case 0, 1: table[code] = entry(code, validFor: Double(generator.next() % 600))
            case 2: table[code]?.record.validUntil = now.addingTimeInterval(Double(generator.next() % 300))
            case 3: table[code]?.expiryRecorded = true
            case 4: table[code] = nil
            default:
                now = now.addingTimeInterval(Double(generator.next() % 20))
                let expected = scan(table, now: now)
                let due = table.due(now: now)
                #expect(due == expected, "step \(step)")
                if due != expected { return }
            }
        }
    }
}
