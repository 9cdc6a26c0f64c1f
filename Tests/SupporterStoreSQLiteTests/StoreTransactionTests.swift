import Foundation
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// `SessionStore.write`: many changes, one transaction.
@Suite struct StoreTransactionTests {
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    static func code(_ code: String) -> SessionCodeRecord {
        SessionCodeRecord(code: code, createdAt: date(1000), validUntil: date(9_000_000))
    }

    static func event(_ ms: Int64, _ code: String? = nil) -> AuditEvent {
        AuditEvent(time: date(ms), code: code, kind: .codeCreated)
    }

    @Test func everyKindOfWriteIsCommittedTogether() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.code("000000002"))
        let digest = [UInt8](repeating: 7, count: 32)
        let (ids, token) = try store.write {
            (transaction: inout StoreTransaction) throws(StoreError) -> ([Int64], APITokenRecord) in
            try transaction.insert(Self.code("000000001"))
            var changed = Self.code("000000002")
            changed.isClosed = true
            try transaction.update(changed)
            #expect(try transaction.record(code: "000000002")?.isClosed == true)  // reads see the transaction
            #expect(try transaction.delete(code: "000000002"))
            let first = try transaction.append(Self.event(1, "000000001"))
            let more = try transaction.append(contentsOf: [Self.event(2), Self.event(3)])
            try transaction.saveBackoff(key: "ip:192.0.2.1", failures: 2, blockedUntil: nil, lastFailure: Self.date(5))
            try transaction.saveBackoff(key: "code:1", failures: 1, blockedUntil: nil, lastFailure: Self.date(1))
            try transaction.deleteBackoff(key: "code:1")
            #expect(try transaction.deleteBackoff(olderThan: Self.date(0)) == 0)
            let token = try transaction.addToken(digest: digest, scope: .admin, label: "ops", createdAt: Self.date(9))
            return ([first] + more, token)
        }
        #expect(ids == [1, 2, 3])
        #expect(try store.allRecords().map(\.code) == ["000000001"])
        #expect(try store.auditEvents().map(\.id) == [1, 2, 3])
        #expect(try store.loadBackoff().map(\.key) == ["ip:192.0.2.1"])
        #expect(try store.token(digest: digest) == token)
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func aWriteThatThrowsLeavesNothingBehind() throws {
        let store = try SessionStore(path: ":memory:")
        let error = #expect(throws: StoreError.self) {
            try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                try transaction.insert(Self.code("000000001"))
                try transaction.append(Self.event(1))
                try transaction.addToken(digest: [1, 2, 3], createdAt: Self.date(1))
                try transaction.insert(Self.code("000000001"))  // a duplicate: the whole write is undone
            }
        }
        #expect(error?.kind == .duplicate)
        #expect(error?.operation.hasPrefix("insert session code") == true)
        #expect(error?.path == ":memory:")
        #expect(try store.allRecords().isEmpty)
        #expect(try store.auditEvents().isEmpty)
        #expect(try store.tokens().isEmpty)
        // The rolled-back ids are given again, and the chain is whole.
        #expect(try store.append(Self.event(2)) == 1)
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func anAttemptUndoesOnlyItsOwnChanges() throws {
        let store = try SessionStore(path: ":memory:")
        let outcomes = try store.write {
            (transaction: inout StoreTransaction) throws(StoreError) -> [Bool] in
            let good = transaction.attempt { (transaction: inout StoreTransaction) throws(StoreError) -> Int64 in
                try transaction.insert(Self.code("000000001"))
                return try transaction.append(Self.event(1, "000000001"))
            }
            let bad = transaction.attempt { (transaction: inout StoreTransaction) throws(StoreError) in
                try transaction.append(Self.event(2, "000000001"))  // undone with the failing insert
                try transaction.insert(Self.code("000000001"))
            }
            let last = try transaction.append(Self.event(3))
            return [(try? good.get()) == 1, (try? bad.get()) == nil, last == 2]
        }
        #expect(outcomes == [true, true, true])
        #expect(try store.auditEvents().map(\.time) == [Self.date(1), Self.date(3)])
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func writeEachCommitsTheGoodItemsAndReportsTheBadOnes() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.code("000000002"))
        let codes = ["000000001", "000000002", "000000003", "000000003"]
        let results = try store.write(each: codes) {
            (transaction: inout StoreTransaction, code: String) throws(StoreError) -> Int64 in
            try transaction.insert(Self.code(code))
            return try transaction.append(Self.event(1, code))
        }
        #expect(results.count == 4)
        #expect(try results[0].get() == 1)
        #expect(try results[2].get() == 2)
        for index in [1, 3] {
            guard case .failure(let error) = results[index] else {
                Issue.record("item \(index) should have failed")
                continue
            }
            #expect(error.kind == .duplicate)
        }
        #expect(try store.allRecords().map(\.code) == ["000000001", "000000002", "000000003"])
        #expect(try store.auditEvents().map(\.code) == ["000000001", "000000003"])
        #expect(try store.verifyAudit().isVerified)
        #expect(try store.write(each: [String]()) { (_: inout StoreTransaction, _: String) throws(StoreError) in }.isEmpty)
    }

    @Test func aBatchCostsOneCommit() throws {
        // Each commit in powerLoss durability is one fsync: a batch of 200 appends takes one, not 200.
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: folder.file("batch.sqlite"), durability: .powerLoss)
        let events = (0..<200).map { Self.event(Int64($0)) }
        let clock = ContinuousClock()
        let batched = try clock.measure {
            _ = try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> [Int64] in
                try transaction.append(contentsOf: events)
            }
        }
        let single = try clock.measure { for event in events { try store.append(event) } }
        print("200 appends: one write \(batched), one write each \(single)")
        #expect(try store.auditEvents(limit: .max).count == 400)
        #expect(try store.verifyAudit().isVerified)
    }

    @Test func usingTheStoreInsideItsOwnWriteStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let store = try SessionStore(path: ":memory:")
            try store.write { (_: inout StoreTransaction) throws(StoreError) in
                _ = try store.allRecords()
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("used again from inside its own withConnection"), "\(stderr)")
    }
}
