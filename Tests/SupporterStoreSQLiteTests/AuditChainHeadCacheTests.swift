import Foundation
import Testing

import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// A store remembers the audit chain's head between its own writes; anything else that changes the file since (another
/// connection, another process, raw SQL on its own connection) must make it read the head again.
@Suite struct AuditChainHeadCacheTests {
    static func event(_ n: Int) -> AuditEvent {
        AuditEvent(time: Date(timeIntervalSince1970: Double(n)), code: "482913067", kind: .deviceOnline, details: ["n": "\(n)"])
    }

    @Test(arguments: [":memory:", "file"])
    func aWriteAfterOwnWritesStartsFromTheRememberedHead(_ kind: String) throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: kind == "file" ? folder.file("store.sqlite") : kind)
        try store.append(Self.event(1))
        let known = try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            transaction.knownChainHead != nil
        }
        #expect(known)
        // Raw SQL on the store's own connection changes the data version: the head is read again.
        try store.database.execute("INSERT INTO registration_backoff (key, failures, last_failure) VALUES ('k', 1, 0)")
        let knownAfterRawSQL = try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            transaction.knownChainHead != nil
        }
        #expect(!knownAfterRawSQL)
    }

    @Test func appendsAfterAnotherConnectionsEventsLinkToThem() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("store.sqlite")
        let node = try SessionStore(path: path)
        let other = try SessionStore(path: path)
        let first = try node.append(Self.event(1))
        let second = try node.append(Self.event(2))  // from the remembered head
        let theirs = try other.append(Self.event(3))
        let mine = try node.append(Self.event(4))
        #expect([first, second, theirs, mine] == [1, 2, 3, 4])
        let verification = try node.verifyAudit()
        #expect(verification.problems.isEmpty)
        #expect(verification.eventCount == 4)
    }

    @Test func appendsAfterRawSQLOnTheSameConnectionLinkAfterIt() throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: folder.file("store.sqlite"))
        try store.append(Self.event(1))
        // An event the store did not write (no digests): the next one must not reuse its id.
        try store.database.execute(
            "INSERT INTO audit_events (id, time, code, kind, details) VALUES (2, 0, NULL, 'error', '{}')")
        let id = try store.append(Self.event(3))
        #expect(id == 3)
    }

    @Test func aFailedWriteLeavesTheHeadWhereItWas() throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: folder.file("store.sqlite"))
        try store.append(Self.event(1))
        #expect(throws: StoreError.self) {
            try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                try transaction.append(Self.event(2))
                throw StoreError(kind: .invalidData, operation: "test", message: "planned", path: "")
            }
        }
        #expect(try store.append(Self.event(3)) == 2)
        #expect(try store.verifyAudit().problems.isEmpty)
    }

    @Test(arguments: [":memory:", "file"])
    func manyWritesKeepAVerifiableChain(_ kind: String) throws {
        let folder = try TemporaryFolder()
        let store = try SessionStore(path: kind == "file" ? folder.file("store.sqlite") : kind)
        for n in 1...50 {
            if n % 7 == 0 {
                _ = try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                    try transaction.append(contentsOf: [Self.event(n), Self.event(n)])
                }
            } else {
                try store.append(Self.event(n))
            }
        }
        let verification = try store.verifyAudit()
        #expect(verification.problems.isEmpty)
        #expect(verification.eventCount == 57)
    }
}
