import DeviceNode
import Foundation
import SupportPostgres
import Synchronization
@testable import SupporterNode
import TestSupport
import Testing
import SupportSession
import SampleAppModel
import SupportWire
import SupportUtilities
import SupportRuntime
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary
import SupporterModel

extension NodeIntegration {
    /// The supporter node with all its durable state in PostgreSQL (a real throwaway cluster per test): the same
    /// end-to-end flow as on SQLite, a restart on the same database, and typed failures.
    @Suite(.serialized) struct PostgresStoreEngineTests {
        @Test func aWholeSessionTokensAndSignInAreStoredAndTheAuditChainVerifies() async throws {
            let cluster = try ThrowawayPostgres()
            defer { cluster.stop() }
            let harness = try NodeHarness(storeBackend: .postgres(cluster.connectionString))
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(type: .remoteSupport, description: "printer").code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            let request = try #require(await device.request())
            #expect(request.requestID == id)
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            try await harness.supporter.endSession(code: code)
            #expect(await device.event { $0 == .supporterDisconnected(reason: .endedBySupporter, text: nil) } != nil)

            let second = try harness.supporter.issueAPIToken(scope: .admin, label: "ops")
            let record = try #require(harness.supporter.tokenRecord(of: second))
            try harness.supporter.revokeAPIToken(id: record.id)
            #expect(harness.supporter.scope(ofToken: second) == nil)
            #expect(try harness.supporter.apiTokens().first { $0.id == record.id }?.isRevoked == true)

            _ = try await harness.supporter.addAccount(login: "alice", displayName: "Alice Martin", password: "a long password 1")
            let signedIn = try await harness.supporter.signIn(
                login: "alice", password: "a long password 1", address: "127.0.0.1")
            #expect(harness.supporter.loginSession(secret: signedIn.secret)?.account.login == "alice")

            let kinds = try harness.supporter.auditEvents().map(\.kind)
            for kind: AuditEvent.Kind in [
                .tokenIssued, .codeCreated, .deviceOnline, .requestSent, .requestAllowed, .sessionStarted, .sessionEnded,
                .tokenRevoked,
            ] {
                #expect(kinds.contains(kind), "no \(kind) in \(kinds)")
            }
            #expect(try harness.supporter.latestAuditID() == Int64(kinds.count))
            let engine = try #require(harness.supporter.store as? PostgresStoreEngine)
            let verification = try engine.verifyAudit()
            #expect(verification.isVerified, "\(verification.problems)")
            #expect(verification.eventCount == kinds.count)
            #expect(harness.supporter.storeStatistics.failed == 0)
        }

        @Test func aRestartOnTheSameDatabaseKeepsCodesTokensAccountsAndSessions() async throws {
            let cluster = try ThrowawayPostgres()
            defer { cluster.stop() }
            let code: String
            let token: String
            let secret: String
            do {
                let first = try NodeHarness(storeBackend: .postgres(cluster.connectionString))
                code = try await first.supporter.createCode(description: "kept").code
                token = first.token
                _ = try await first.supporter.addAccount(login: "bob", displayName: "Bob", password: "another password 2")
                secret = try await first.supporter.signIn(login: "bob", password: "another password 2", address: "::1").secret
                first.shutdown()
            }
            let second = try NodeHarness(storeBackend: .postgres(cluster.connectionString))
            defer { second.shutdown() }
            #expect(second.supporter.code(code)?.description == "kept")
            #expect(second.supporter.scope(ofToken: token) == .device)
            #expect(second.supporter.account("bob")?.displayName == "Bob")
            #expect(second.supporter.loginSession(secret: secret)?.account.login == "bob")
            // A device registers on the kept code with the kept token.
            let device = try JoinedDevice(node: try second.device(second.deviceConfiguration(token: token)), code: code)
            #expect(await device.online())
            let engine = try #require(second.supporter.store as? PostgresStoreEngine)
            let verification = try engine.verifyAudit()
            #expect(verification.isVerified, "\(verification.problems)")
        }

        @Test func aFailedJobGetsAStoreErrorWithThePostgresErrorAndOthersInItsBatchCommit() async throws {
            let cluster = try ThrowawayPostgres()
            defer { cluster.stop() }
            let engine = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
            defer { engine.stop() }
            let now = Date()
            let record = SessionCodeRecord(
                code: "123456789", type: .remoteSupport, description: nil, customerName: nil, customerEmail: nil,
                waitingMessage: nil, isClosed: false, createdAt: now, validUntil: now.addingTimeInterval(60),
                closedAt: nil, assignedSupporter: nil, featureRules: FeatureRules(default: .allow))
            try await engine.write([.insertCode(record)])
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

        @Test func aNodeOnAVerifiedTLSConnectionStoresAndVerifiesItsAuditTrail() async throws {
            let certificates = try TestCertificates.make()
            defer { certificates.remove() }
            let cluster = try ThrowawayPostgres(tls: certificates.server)
            defer { cluster.stop() }
            let harness = try NodeHarness(
                storeBackend: .postgres(cluster.tlsConnectionString(rootCertificate: certificates.caPath)))
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(description: "over TLS").code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            #expect(try harness.supporter.auditEvents().map(\.kind).contains(.deviceOnline))
            let engine = try #require(harness.supporter.store as? PostgresStoreEngine)
            #expect(try engine.verifyAudit().isVerified)
            // Every session the node opened came over TCP, and every one of them is encrypted (this check itself
            // comes over the Unix socket, which has no client address).
            let observer = try PostgresConnection(cluster.connectionString)
            let sessions = try observer.query(
                """
                SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                WHERE a.backend_type = 'client backend' AND a.client_addr IS NOT NULL
                """)
            #expect(sessions.count >= 1)
            #expect(sessions.rows.allSatisfy { $0[0] == "t" }, "\(sessions)")
        }

        /// A real deadlock: the batch (job 1 updates a code, job 2 appends an audit event) holds the code's row and
        /// waits for the chain's head, which another session holds and then asks for the code's row. The engine's
        /// session is the victim (its deadlock check runs first), and the batch is run again once the other commits.
        @Test func aBatchChosenAsADeadlockVictimIsRunAgainAndEachJobCompletesOnceInOrder() async throws {
            let cluster = try ThrowawayPostgres()
            defer { cluster.stop() }
            let engine = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
            defer { engine.stop() }
            let now = Date()
            var record = SessionCodeRecord(
                code: "123456789", type: .remoteSupport, description: "first", customerName: nil, customerEmail: nil,
                waitingMessage: nil, isClosed: false, createdAt: now, validUntil: now.addingTimeInterval(60),
                closedAt: nil, assignedSupporter: nil, featureRules: FeatureRules(default: .allow))
            try await engine.write([.insertCode(record)])

            let other = try PostgresConnection(cluster.connectionString)
            let observer = try PostgresConnection(cluster.connectionString)
            // The server's default is 1 s for the engine's session: this one must not look for the cycle first.
            try other.query("SET deadlock_timeout = '30s'")
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

        @Test func anUnreachableServerIsAClearErrorAtStart() throws {
            // The engine is opened before the node, as `rsup-supporter serve` does.
            let store = StoreConfiguration(backend: .postgres("host=127.0.0.1 port=1 dbname=rsup connect_timeout=2"))
            do {
                _ = try store.open()
                Issue.record("a node started without its database")
            } catch {
                #expect(error.description.contains("connect to PostgreSQL"), "\(error)")
            }
        }
    }
}
