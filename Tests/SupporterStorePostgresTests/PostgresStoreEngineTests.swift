import Foundation
import SupportPostgres
import SupportSession
import Synchronization
import TestSupport
import Testing
import SupportVocabulary
import SupporterModel
@testable import SupporterStore
@testable import SupporterStorePostgres
@testable import SupporterCore

/// The PostgreSQL engine on a real throwaway cluster per test: a failed job's typed error beside the jobs of its batch
/// that commit, a server restart, a deadlock victim's batch run again. (A node on it: NodeTests' `PostgresNodeTests`.)
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresStoreEngineTests {
    @Test func aFailedJobGetsAStoreErrorWithThePostgresErrorAndOthersInItsBatchCommit() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let engine = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { engine.stop() }
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))  // what the store keeps
        let record = SessionCodeRecord(
            code: "123456789", type: .remoteSupport, description: nil, customerName: nil, customerEmail: nil,
            waitingMessage: nil, isClosed: false, createdAt: now, validUntil: now.addingTimeInterval(60),
            closedAt: nil, assignedSupporter: nil, featureRules: FeatureRules(default: .allow))
        try await engine.write([.insertCode(record)])
        #expect(try engine.code("123456789") == record, "one code read back as stored")
        #expect(try engine.code("111111111") == nil)
        let failures = Mutex<[StoreError?]>([])
        let done = DispatchSemaphore(value: 0)
        for intents: [StoreIntent] in [
            [.insertCode(record)], [.audit(AuditEvent(time: now, code: "123456789", kind: .codeUpdated))],
        ] {
            engine.submit(intents, deferrable: false) { error in
                failures.withLock { $0.append(error) }
                done.signal()
            }
        }
        done.wait()
        done.wait()
        let results = failures.withLock { $0 }
        #expect(results.count == 2)
        let duplicate = try #require(results[0])
        #expect(duplicate.kind == .duplicate)
        #expect((duplicate.underlying as? PostgresError)?.sqlState == "23505")
        #expect(results[1] == nil)
        var missing = record
        missing.code = "987654321"
        await #expect(throws: StoreError.self) { try await engine.write([.updateCode(missing)]) }
        #expect(try engine.auditEvents(code: "123456789", from: nil, to: nil, limit: 10, afterID: nil, beforeID: nil, newestFirst: false).count == 1)
        #expect(try engine.verifyAudit().isVerified)
    }

    @Test func aServerRestartIsReconnectedAndNothingAcknowledgedIsLost() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let engine = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { engine.stop() }
        try await engine.write([.audit(AuditEvent(time: Date(), kind: .codeCreated))])
        try cluster.restart()
        // The first write after the restart reconnects (once) and goes through.
        try await engine.write([.audit(AuditEvent(time: Date(), kind: .codeUpdated))])
        #expect(try engine.latestAuditID() == 2)
        #expect(try engine.verifyAudit().isVerified)
    }

    /// A real deadlock: the batch (job 1 updates a code, job 2 appends an audit event) holds the code's row and
    /// waits for the chain's head, which another session holds and then asks for the code's row. The engine's
    /// session is the victim (its deadlock check runs first), and the batch is run again once the other commits.
    ///
    /// PostgreSQL looks for a cycle once per wait, `deadlock_timeout` after the wait began. The engine's session
    /// waits first, so its check must come after the other session closed the cycle: 10 s gives a loaded machine
    /// time to see the engine waiting and send the other UPDATE (with the default 1 s, a slow look missed the cycle
    /// and the other session became the victim); the other session's 120 s keeps it from looking first.
    @Test func aBatchChosenAsADeadlockVictimIsRunAgainAndEachJobCompletesOnceInOrder() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let engine = try PostgresStoreEngine(
            connectionString: cluster.connectionString + " options='-c deadlock_timeout=10s'", logger: .disabled)
        defer { engine.stop() }
        let now = Date()
        var record = SessionCodeRecord(
            code: "123456789", type: .remoteSupport, description: "first", customerName: nil, customerEmail: nil,
            waitingMessage: nil, isClosed: false, createdAt: now, validUntil: now.addingTimeInterval(60),
            closedAt: nil, assignedSupporter: nil, featureRules: FeatureRules(default: .allow))
        try await engine.write([.insertCode(record)])

        let other = try PostgresConnection(cluster.connectionString)
        let observer = try PostgresConnection(cluster.connectionString)
        // The engine's session looks for the cycle after 10 s: this one must not look first.
        try other.query("SET deadlock_timeout = '120s'")
        try other.query("BEGIN")
        try other.query("SELECT next_id FROM audit_chain_head FOR UPDATE")

        // Both jobs in one batch: the engine's thread is held until both are queued.
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? engine.perform("hold the engine") { _ in
                entered.signal()
                release.wait()
            }
        }
        entered.wait()
        record.description = "from the node"
        let completions = Mutex<[(Int, StoreError?)]>([])
        let done = DispatchSemaphore(value: 0)
        for (number, intents) in [
            (1, [StoreIntent.updateCode(record)]),
            (2, [.audit(AuditEvent(time: now, code: record.code, kind: .codeUpdated))]),
        ] {
            #expect(
                engine.submit(intents, deferrable: false) { error in
                    completions.withLock { $0.append((number, error)) }
                    done.signal()
                })
        }
        release.signal()

        // The engine holds the code's row and waits for the head; then the cycle closes.
        let waiting = await waitUntil {
            let rows = try? observer.query("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
            return rows?[0, "n"] == "1"
        }
        #expect(waiting, "the engine never waited for the chain's head")
        try other.query(
            "UPDATE session_codes SET description = 'from the other session' WHERE code = $1", [record.code])
        try other.query("COMMIT")

        done.wait()
        done.wait()
        // A later job on the engine's thread: whatever the batch still had to complete, it has completed.
        _ = try? await engine.perform("a later job") { _ in }
        let results = completions.withLock { $0 }
        #expect(results.map(\.0) == [1, 2], "each job completes once, in order")
        #expect(results.allSatisfy { $0.1 == nil }, "\(results)")
        #expect(engine.statistics.conflictRetries == 1)
        #expect(engine.statistics.jobsFailed == 0)
        // The batch ran again after the other session's commit: its update is the one kept, its event stored once.
        let stored = try observer.query("SELECT description FROM session_codes WHERE code = $1", [record.code])
        #expect(stored[0, "description"] == "from the node")
        #expect(try engine.latestAuditID() == 1)
        #expect(try engine.verifyAudit().isVerified)
    }
}
