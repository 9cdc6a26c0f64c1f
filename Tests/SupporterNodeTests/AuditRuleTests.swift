import Foundation
import Testing
import TestSupport

@testable import SupporterCore
@testable import SupporterNode
import SupporterStore
import SupporterStores
import StoreTestSupport
import SupportSession
import SupportWire
import SupportVocabulary
import SupporterModel

/// The node's one audit rule, decide → commit → apply → answer, under a store that fails on command: after any failed
/// commit the caller hears the failure, and memory and store both still hold what was there before — for codes
/// (create, update, rules, delete, close, expire), accounts (add, change), login sessions (sign-in, sign-out) and
/// API tokens (issue, revoke). Sessions, whose commands fail the device's connection, are proven in NodeTests.
@Suite(.serialized) struct AuditRuleTests {
    /// A node (not started) on a SQLite file behind a ``FailingStoreEngine``.
    final class Fixture: Sendable {
        let certificates: TestCertificates
        let engine: FailingStoreEngine
        let node: SupporterNode

        init() throws {
            certificates = try TestCertificates.make()
            let configuration = SupporterNodeConfiguration(
                tls: .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            let store = StoreConfiguration(path: certificates.directory + "/store.sqlite")
            engine = FailingStoreEngine(wrapping: try store.open().engine)
            node = try SupporterNode(configuration: configuration, store: engine)
        }

        /// What the store holds now, read past the node.
        func stored() throws -> StoreSnapshot { try engine.loadSnapshot(expiringLoginSessionsBefore: .distantPast) }

        /// The kinds of the audit rows stored so far, oldest first.
        func auditKinds() throws -> [String] {
            try engine.auditEvents(
                code: nil, from: nil, to: nil, limit: 10_000, afterID: nil, beforeID: nil, newestFirst: false
            ).map { "\($0.kind)" }
        }

        /// Runs `body` with every write failing; returns the error it threw (nil when it did not throw).
        func failing<T>(_ body: () async throws -> T) async -> (any Error)? {
            engine.failing = true
            defer { engine.failing = false }
            do {
                _ = try await body()
                return nil
            } catch {
                return error
            }
        }

        func stop() {
            node.shutdown()
            certificates.remove()
        }
    }

    /// The node's error of a failed commit.
    static func isStoreFailure(_ error: (any Error)?) -> Bool {
        (error as? SupporterNodeError)?.kind == .store
    }

    @Test func aCodeChangeThatCannotBeStoredChangesNothing() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let code = try await fixture.node.createCode(description: "printer").code
        let before = try #require(fixture.node.code(code))
        let auditBefore = try fixture.auditKinds()

        // Update, rules, close, expire, delete: each answered with the failure, none in effect here or stored.
        #expect(Self.isStoreFailure(await fixture.failing {
            try await fixture.node.updateCode(code) { $0.description = "scanner" }
        }))
        #expect(Self.isStoreFailure(await fixture.failing {
            try await fixture.node.setFeatureRules(code, FeatureRules(default: .deny))
        }))
        #expect(Self.isStoreFailure(await fixture.failing { try await fixture.node.closeCode(code) }))
        #expect(Self.isStoreFailure(await fixture.failing { try await fixture.node.expireCode(code) }))
        #expect(Self.isStoreFailure(await fixture.failing { try await fixture.node.deleteCode(code) }))

        let after = try #require(fixture.node.code(code), "a delete that was not stored must not remove the code")
        #expect(after.record == before.record)
        #expect(after.state == before.state)
        // The store keeps times to the millisecond: compare what it keeps.
        let stored = try #require(try fixture.stored().codes.first { $0.code == code })
        #expect(stored.description == before.record.description)
        #expect(stored.isClosed == before.record.isClosed && stored.closedAt == nil)
        #expect(stored.validUntil.unixMilliseconds == before.record.validUntil.unixMilliseconds)
        #expect(stored.featureRules == before.record.featureRules)
        #expect(try fixture.auditKinds() == auditBefore)

        // And once the store works again, the same changes go through.
        _ = try await fixture.node.updateCode(code) { $0.description = "scanner" }
        #expect(fixture.node.code(code)?.record.description == "scanner")
        #expect(try fixture.stored().codes.first { $0.code == code }?.description == "scanner")
    }

    @Test func aCodeThatCannotBeStoredIsNeverCreated() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let error = await fixture.failing { try await fixture.node.createCode(description: "never") }
        #expect(Self.isStoreFailure(error))
        #expect(fixture.node.codes().isEmpty)
        #expect(try fixture.stored().codes.isEmpty)
        #expect(try fixture.auditKinds().isEmpty)
    }

    @Test func anAccountChangeThatCannotBeStoredChangesNothing() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let error = await fixture.failing {
            try await fixture.node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        }
        #expect(Self.isStoreFailure(error))
        #expect(fixture.node.account("ann") == nil)
        #expect(try fixture.stored().accounts.isEmpty)

        _ = try await fixture.node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        let change = SupporterAccountChange(displayName: "Ann Other", state: .disabled)
        #expect(Self.isStoreFailure(await fixture.failing { try await fixture.node.changeAccount("ann", change) }))
        #expect(fixture.node.account("ann")?.displayName == "Ann")
        #expect(fixture.node.account("ann")?.isActive == true)
        #expect(try fixture.stored().accounts.first?.displayName == "Ann")
    }

    @Test func aSignInOrSignOutThatCannotBeStoredLeavesTheSessionsAsTheyWere() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        _ = try await fixture.node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        let refused = await fixture.failing {
            try await fixture.node.signIn(login: "ann", password: "the right password", address: "192.0.2.1")
        }
        #expect((refused as? SignInError)?.kind == .busy, "\(String(describing: refused))")
        #expect(fixture.node.people.withLock { $0.loginSessions.count } == 0)
        #expect(try fixture.stored().loginSessions.isEmpty)

        let secret = try await fixture.node.signIn(
            login: "ann", password: "the right password", address: "192.0.2.1"
        ).secret
        #expect(Self.isStoreFailure(await fixture.failing { try await fixture.node.signOut(secret: secret) }))
        // Not recorded, so not in effect: the session still works, here and in the store.
        #expect(fixture.node.loginSession(secret: secret)?.account.login == "ann")
        #expect(try fixture.stored().loginSessions.count == 1)
        try await fixture.node.signOut(secret: secret)
        #expect(fixture.node.loginSession(secret: secret) == nil)
    }

    @Test func aTokenChangeThatCannotBeStoredChangesNothing() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let refused = await fixture.failing { try fixture.node.issueAPIToken() }
        #expect(Self.isStoreFailure(refused))
        #expect(fixture.node.sessions.withLock { $0.tokens.count } == 0)
        #expect(try fixture.engine.tokens().isEmpty)

        let token = try fixture.node.issueAPIToken()
        let id = try #require(fixture.node.tokenRecord(of: token)?.id)
        #expect(Self.isStoreFailure(await fixture.failing { try fixture.node.revokeAPIToken(id: id) }))
        #expect(fixture.node.scope(ofToken: token) == .device)
        #expect(try fixture.engine.tokens().first { $0.id == id }?.revokedAt == nil)
    }
}
