import Dispatch
import Foundation
import Synchronization
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

@Suite struct SessionStoreTests {
    /// A date on a whole millisecond, as the store keeps them.
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    static let full = SessionCodeRecord(
        code: "482913067", type: .assistAR, description: "Drucker im 2. Stock — «Papierstau» 🖨️",
        customerName: "Zoë Ångström-Nakamura 中村", customerEmail: "zoë@example.com",
        waitingMessage: "Bitte warten… مرحبا\nzweite Zeile \"quoted\" 'single' \\ backslash", isClosed: true,
        createdAt: date(1_700_000_000_123), validUntil: date(1_700_003_600_456), closedAt: date(1_700_001_000_789),
        assignedSupporter: "Ålice 👩🏽‍💻")

    static let bare = SessionCodeRecord(
        code: "000000001", type: .remoteSupport, createdAt: date(0), validUntil: date(-1_000))

    @Test(arguments: [full, bare])
    func aCodeReadsBackFieldForField(_ record: SessionCodeRecord) throws {
        let folder = try TemporaryFolder()
        let path = folder.file("codes.sqlite")
        do {
            let store = try SessionStore(path: path)
            try store.insert(record)
            #expect(try store.record(code: record.code) == record)
        }
        // And after reopening the file.
        let reopened = try SessionStore(path: path)
        #expect(try reopened.record(code: record.code) == record)
        #expect(try reopened.allRecords() == [record])
        #expect(try reopened.record(code: "999999999") == nil)
    }

    @Test func emptyStringsStayEmptyStrings() throws {
        let store = try SessionStore(path: ":memory:")
        var record = Self.bare
        record.description = ""
        record.customerName = ""
        record.customerEmail = ""
        record.waitingMessage = ""
        record.assignedSupporter = ""
        try store.insert(record)
        #expect(try store.record(code: record.code) == record)
    }

    @Test func aDuplicateCodeIsRefused() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.full)
        var other = Self.bare
        other.code = Self.full.code
        let error = #expect(throws: StoreError.self) { try store.insert(other) }
        #expect(error?.kind == .duplicate)
        #expect(error?.operation.hasPrefix("insert session code") == true)
        #expect(try store.record(code: Self.full.code) == Self.full)
    }

    @Test func updateReplacesEveryFieldAndRefusesAMissingCode() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.bare)
        var changed = Self.full
        changed.code = Self.bare.code
        try store.update(changed)
        #expect(try store.record(code: Self.bare.code) == changed)
        try store.update(Self.bare)  // and back to all-nil
        #expect(try store.record(code: Self.bare.code) == Self.bare)
        let error = #expect(throws: StoreError.self) { try store.update(Self.full) }
        #expect(error?.kind == .notFound)
    }

    @Test func deleteTellsWhetherTheCodeExisted() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.full)
        #expect(try store.delete(code: Self.full.code))
        #expect(try !store.delete(code: Self.full.code))
        #expect(try store.record(code: Self.full.code) == nil)
    }

    @Test func pagesAreOrderedByCreationThenCodeWithTheTotal() throws {
        let store = try SessionStore(path: ":memory:")
        var expected: [SessionCodeRecord] = []
        for index in 0..<25 {
            // Pairs of codes share a creation time, so the code breaks the tie; inserted out of order.
            let record = SessionCodeRecord(
                code: String(format: "%09d", 1000 - index), createdAt: Self.date(Int64(index / 2) * 1000),
                validUntil: Self.date(9_999_999))
            expected.append(record)
        }
        expected.sort { ($0.createdAt, $0.code) < ($1.createdAt, $1.code) }
        for record in expected.shuffled() { try store.insert(record) }
        var seen: [SessionCodeRecord] = []
        for offset in stride(from: 0, to: 30, by: 10) {
            let page = try store.records(offset: offset, limit: 10)
            #expect(page.total == 25)
            #expect(page.records.count == min(10, 25 - offset))
            seen += page.records
        }
        #expect(seen == expected)
        #expect(try store.allRecords() == expected)
        let beyond = try store.records(offset: 100, limit: 10)
        #expect(beyond.records.isEmpty && beyond.total == 25)
        let none = try store.records(offset: -5, limit: -1)
        #expect(none.records.isEmpty && none.total == 25)
        let empty = try SessionStore(path: ":memory:").records(offset: 0, limit: 10)
        #expect(empty.records.isEmpty && empty.total == 0)
    }

    @Test func aRowTheCodeCannotUnderstandIsAnErrorNotACrash() throws {
        let store = try SessionStore(path: ":memory:")
        try store.database.execute(
            "INSERT INTO session_codes (code, type, is_closed, created_at, valid_until) VALUES ('777', 9, 0, 0, 0)")
        let error = #expect(throws: StoreError.self) { _ = try store.record(code: "777") }
        #expect(error?.kind == .invalidData)
        #expect(error?.path == ":memory:")
        #expect(throws: StoreError.self) { _ = try store.allRecords() }
    }

    // MARK: audit

    static func event(_ ms: Int64, _ code: String?, _ kind: AuditEvent.Kind, _ details: [String: String] = [:])
        -> AuditEvent
    {
        AuditEvent(time: date(ms), code: code, kind: kind, details: details)
    }

    @Test func auditEventsReadBackWithIncreasingIDs() throws {
        let store = try SessionStore(path: ":memory:")
        let events = AuditEvent.Kind.known.enumerated().map { index, kind in
            Self.event(
                Int64(index) * 10, index % 3 == 0 ? nil : "code\(index % 2)", kind,
                index % 2 == 0
                    ? [:] : ["supporter": "Ålice 👩🏽‍💻", "reason": "a \"quoted\" {json} / path\n", "z": ""])
        }
        var ids: [Int64] = []
        for event in events { ids.append(try store.append(event)) }
        #expect(ids == Array(1...Int64(events.count)))
        let read = try store.auditEvents()
        #expect(read.map(\.id) == ids)
        for (stored, original) in zip(read, events) {
            var expected = original
            expected.id = stored.id
            #expect(stored == expected)
        }
        let json = try SQLiteDatabaseTests.scalar(store.database, "SELECT details FROM audit_events WHERE id = 2")
        #expect(json?.hasPrefix(#"{"reason":"#) == true)  // sorted keys
        #expect(try SQLiteDatabaseTests.scalar(store.database, "SELECT details FROM audit_events WHERE id = 1") == "{}")
    }

    @Test func auditFiltersByCodeTimeRangeAfterIDAndLimit() throws {
        let store = try SessionStore(path: ":memory:")
        // Times go back and forth so id order and time order differ.
        let times: [Int64] = [5000, 1000, 3000, 2000, 4000, 6000, 1500, 2500]
        let codes: [String?] = ["A", "B", "A", nil, "A", "B", "A", "B"]
        let ids = try store.append(
            contentsOf: zip(times, codes).map { Self.event($0, $1, .deviceOnline) })
        #expect(ids == Array(1...8))
        func idsOf(_ events: [AuditEvent]) -> [Int64] { events.map(\.id) }
        #expect(idsOf(try store.auditEvents(code: "A")) == [1, 3, 5, 7])
        #expect(idsOf(try store.auditEvents(code: "B")) == [2, 6, 8])
        #expect(idsOf(try store.auditEvents(code: "C")) == [])
        #expect(idsOf(try store.auditEvents(from: Self.date(2000), to: Self.date(4000))) == [3, 4, 8])
        #expect(idsOf(try store.auditEvents(from: Self.date(4000))) == [1, 5, 6])
        #expect(idsOf(try store.auditEvents(to: Self.date(2000))) == [2, 7])
        #expect(idsOf(try store.auditEvents(code: "A", from: Self.date(1500), to: Self.date(5000))) == [3, 5, 7])
        #expect(idsOf(try store.auditEvents(afterID: 5)) == [6, 7, 8])
        #expect(idsOf(try store.auditEvents(limit: 3)) == [1, 2, 3])
        #expect(idsOf(try store.auditEvents(limit: 0)) == [])
        #expect(idsOf(try store.auditEvents(code: "A", limit: 1, afterID: 3)) == [5])
        // Paging through with afterID sees every event once.
        var paged: [Int64] = []
        var last: Int64? = nil
        while true {
            let page = try store.auditEvents(limit: 3, afterID: last)
            guard let end = page.last else { break }
            paged += idsOf(page)
            last = end.id
        }
        #expect(paged == Array(1...8))
    }

    @Test func theAuditLogRefusesUpdateAndDeleteEvenThroughRawSQL() throws {
        let store = try SessionStore(path: ":memory:")
        try store.append(Self.event(1, "A", .codeCreated, ["who": "me"]))
        for sql in [
            "UPDATE audit_events SET kind = 'error'", "UPDATE audit_events SET details = '{}' WHERE id = 1",
            "DELETE FROM audit_events", "DELETE FROM audit_events WHERE id = 1",
            "INSERT OR REPLACE INTO audit_events (id, time, kind) VALUES (1, 0, 'error')",
        ] {
            let error = #expect(throws: StoreError.self, "\(sql)") { try store.database.execute(sql) }
            #expect(error?.kind == .constraint, "\(sql)")
            #expect(error?.message.contains("append-only") == true, "\(sql)")
        }
        let events = try store.auditEvents()
        #expect(events.count == 1)
        #expect(events.first?.kind == .codeCreated && events.first?.details == ["who": "me"])
    }

    @Test func aBatchIsAppendedAllOrNothing() throws {
        let store = try SessionStore(path: ":memory:")
        // A trigger that refuses one kind makes the third event of the batch fail.
        try store.database.execute(
            """
            CREATE TEMP TRIGGER refuse_errors BEFORE INSERT ON audit_events WHEN NEW.kind = 'error'
            BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
            """)
        let batch = [Self.event(1, "A", .requestSent), Self.event(2, "A", .requestAllowed), Self.event(3, "A", .error)]
        #expect(throws: StoreError.self) { try store.append(contentsOf: batch) }
        #expect(try store.auditEvents().isEmpty)
        #expect(try store.append(contentsOf: Array(batch.prefix(2))) == [1, 2])
        #expect(try store.append(contentsOf: []) == [])
    }

    @Test func concurrentAppendsAreAllStoredWithUniqueIncreasingIDs() throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: folder.file("concurrent.sqlite"))
        let threads = 8, perThread = 500
        final class Outcome: Sendable {
            let ids = Mutex<[Int: [Int64]]>([:])
            let failures = Mutex<[String]>([])
        }
        let outcome = Outcome()
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                var ids: [Int64] = []
                for index in 0..<perThread {
                    do {
                        ids.append(
                            try store.append(
                                Self.event(Int64(index), "T\(thread)", .voipState, ["n": "\(index)"])))
                    } catch {
                        outcome.failures.withLock { $0.append("\(error)") }
                    }
                }
                outcome.ids.withLock { $0[thread] = ids }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(outcome.failures.withLock { $0 } == [])
        let byThread = outcome.ids.withLock { $0 }
        let all = byThread.values.flatMap { $0 }
        #expect(all.count == threads * perThread)
        #expect(Set(all) == Set(1...Int64(threads * perThread)))
        for ids in byThread.values { #expect(ids == ids.sorted()) }
        let stored = try store.auditEvents(limit: .max)
        #expect(stored.map(\.id) == Array(1...Int64(threads * perThread)))
        // Each thread's own events are stored in the order it appended them.
        for thread in 0..<threads {
            let mine = try store.auditEvents(code: "T\(thread)", limit: .max)
            #expect(mine.map { $0.details["n"] ?? "" } == (0..<perThread).map { "\($0)" })
        }
    }

    // MARK: tokens and back-off

    @Test func tokenDigestsAreKeptAndAddingOneTwiceChangesNothing() throws {
        let store = try SessionStore(path: ":memory:")
        let first = [UInt8](repeating: 0xAB, count: 32), second = (0..<32).map { UInt8($0) }
        #expect(try store.addTokenDigest(first, label: "ops", createdAt: Self.date(1)))
        #expect(try store.addTokenDigest(second, label: nil, createdAt: Self.date(2)))
        #expect(try !store.addTokenDigest(first, label: "again", createdAt: Self.date(3)))
        #expect(try store.tokenDigests() == [first, second])
        #expect(try store.removeTokenDigest(first))
        #expect(try !store.removeTokenDigest(first))
        #expect(try store.tokenDigests() == [second])
        let error = #expect(throws: StoreError.self) { try store.addTokenDigest([], createdAt: Self.date(4)) }
        #expect(error?.kind == .constraint)
    }

    @Test func backoffIsSavedReplacedLoadedAndForgotten() throws {
        let store = try SessionStore(path: ":memory:")
        try store.saveBackoff(key: "code:123", failures: 1, blockedUntil: nil, lastFailure: Self.date(1000))
        try store.saveBackoff(
            key: "ip:192.0.2.1", failures: 5, blockedUntil: Self.date(9000), lastFailure: Self.date(2000))
        try store.saveBackoff(key: "ip:198.51.100.7", failures: 2, blockedUntil: nil, lastFailure: Self.date(500))
        try store.saveBackoff(key: "code:123", failures: 4, blockedUntil: Self.date(3000), lastFailure: Self.date(2500))
        #expect(
            try store.loadBackoff() == [
                BackoffRow(key: "code:123", failures: 4, blockedUntil: Self.date(3000), lastFailure: Self.date(2500)),
                BackoffRow(
                    key: "ip:192.0.2.1", failures: 5, blockedUntil: Self.date(9000), lastFailure: Self.date(2000)),
                BackoffRow(key: "ip:198.51.100.7", failures: 2, blockedUntil: nil, lastFailure: Self.date(500)),
            ])
        try store.deleteBackoff(key: "ip:198.51.100.7")
        try store.deleteBackoff(key: "never-stored")
        // At 5000: code:123 is old and no longer blocked; ip:192.0.2.1 is old but still blocked until 9000.
        #expect(try store.deleteBackoff(olderThan: Self.date(5000)) == 1)
        #expect(try store.loadBackoff().map(\.key) == ["ip:192.0.2.1"])
        #expect(try store.deleteBackoff(olderThan: Self.date(9000)) == 1)
        #expect(try store.loadBackoff().isEmpty)
    }

    // MARK: files

    @Test func aReopenedFileHasEverything() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("reopen.sqlite")
        let digest = [UInt8](repeating: 1, count: 32)
        do {
            let store = try SessionStore(path: path, durability: .powerLoss)
            try store.insert(Self.full)
            try store.insert(Self.bare)
            try store.append(Self.event(10, Self.full.code, .codeCreated, ["type": "assistAR"]))
            try store.addTokenDigest(digest, label: "cli", createdAt: Self.date(5))
            try store.saveBackoff(key: "k", failures: 3, blockedUntil: Self.date(7), lastFailure: Self.date(6))
        }
        let store = try SessionStore(path: path)
        #expect(try Set(store.allRecords()) == [Self.full, Self.bare])
        #expect(try store.auditEvents().map(\.details) == [["type": "assistAR"]])
        #expect(try store.tokenDigests() == [digest])
        #expect(try store.loadBackoff().map(\.failures) == [3])
        #expect(try store.append(Self.event(11, nil, .error)) == 2)
    }

    /// The state a `kill -9` leaves: the database file and its WAL, never checkpointed, the connection never closed.
    /// Copying both files while the first store is still open gives exactly that state to a second connection.
    @Test func committedRowsSurviveWithoutCloseOrCheckpoint() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("live.sqlite")
        let store = try SessionStore(path: path)
        try store.insert(Self.full)
        for index in 0..<200 { try store.append(Self.event(Int64(index), "A", .voipState, ["i": "\(index)"])) }
        let walSize = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(walSize > 0)  // the rows are in the WAL, not yet in the main file

        let crashed = try TemporaryFolder()
        let copy = crashed.file("live.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        let recovered = try SessionStore(path: copy)
        #expect(try recovered.record(code: Self.full.code) == Self.full)
        let events = try recovered.auditEvents(limit: .max)
        #expect(events.count == 200)
        #expect(events.last?.details == ["i": "199"])
        _ = store
    }

    @Test func aGarbageFileIsRefusedWithAClearError() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("garbage.sqlite")
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: StoreError.self) { _ = try SessionStore(path: path) }
        #expect(error?.kind == .corrupt)
        #expect(error?.description.contains(path) == true)
    }

    /// Prints the time one committed append takes; measures, asserts nothing about speed.
    @Test(.serialized, arguments: [SQLiteDatabase.Durability.processCrash, .powerLoss])
    func appendLatency(_ durability: SQLiteDatabase.Durability) throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: folder.file("latency.sqlite"), durability: durability)
        let count = 2000
        let event = Self.event(1_700_000_000_000, "482913067", .requestSent, ["supporter": "Alice", "type": "1"])
        var samples: [Double] = []
        samples.reserveCapacity(count)
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            try store.append(event)
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        samples.sort()
        let mean = samples.reduce(0, +) / Double(count)
        func percentile(_ p: Double) -> Double { samples[min(count - 1, Int(Double(count) * p))] }
        print(
            "append latency \(durability): mean \(Int(mean)) µs, p50 \(Int(percentile(0.5))) µs, "
                + "p99 \(Int(percentile(0.99))) µs, max \(Int(samples.last ?? 0)) µs over \(count) events")
        #expect(try store.auditEvents(limit: .max).count == count)
    }
}
