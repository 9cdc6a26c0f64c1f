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
    /// end-to-end flow as on SQLite, a restart on the same database, a verified TLS connection, and an unreachable
    /// server's clear error at start. The engine on its own: SupporterStorePostgresTests' `PostgresStoreEngineTests`.
    @Suite(.serialized) struct PostgresNodeTests {
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
