import Dispatch
import Foundation
import Testing
import TestSupport

@testable import SupporterNode
import SupportUtilities
import SupportSession
import SupportWire
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

/// Sign-in against a password worker that strangers keep full (issue 20, findings 2 and 10): admission before the
/// queue, a refusal for lack of room counted as an attempt, the reserved lane for a proven earlier success, token
/// administration on a thread of its own, and a refused attempt that costs nothing durable.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SupporterNodeAccountsTests {
    /// A node (not started: no listener, no sweeper) with an in-memory store and the accounts `ann` and `bea`.
    final class Fixture: Sendable {
        let certificates: TestCertificates
        let node: SupporterNode

        init() async throws {
            certificates = try TestCertificates.make()
            let configuration = SupporterNodeConfiguration(
                tls: .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            node = try SupporterNode(configuration: configuration, store: try StoreConfiguration().open().engine)
            for login in ["ann", "bea"] {
                _ = try await node.addAccount(login: login, displayName: login, password: "the right password")
            }
        }

        func stop() {
            node.shutdown()
            certificates.remove()
        }

        /// Holds the password worker's thread on `gate` and fills its normal lane with jobs of other keys, the first
        /// of them held on `second` when given. Returns the tasks to await once the gates open.
        func fillPasswordWorker(gate: BlockingWorkerAdmissionTests.Gate, second: BlockingWorkerAdmissionTests.Gate? = nil)
            async throws -> [Task<Int?, Never>]
        {
            let worker = node.passwords
            var tasks = [try await BlockingWorkerAdmissionTests.hold(worker, gate)]
            for index in 0..<worker.capacity {
                tasks.append(
                    Task {
                        await worker.run(key: "filler-\(index)") {
                            if index == 0 { second?.wait() }
                            return index
                        }
                    })
                _ = try await eventually("filler \(index) to wait") { worker.waiting.normal == index + 1 ? true : nil }
            }
            return tasks
        }
    }

    /// What a sign-in got: `signed in`, `wrong`, `limited`, `busy` or `disabled`.
    static func outcome(
        _ node: SupporterNode, _ login: String, _ password: String, from address: String, proof: String? = nil
    ) async -> String {
        do throws(SignInError) {
            _ = try await node.signIn(login: login, password: password, address: address, knownSignIn: proof)
            return "signed in"
        } catch {
            switch error.kind {
            case .wrongCredentials: return "wrong"
            case .rateLimited: return "limited"
            case .busy: return "busy"
            case .disabled: return "disabled"
            }
        }
    }

    @Test func aSignInRefusedForLackOfRoomCountsAsAnAttemptForItsAddress() async throws {
        let fixture = try await Fixture()
        defer { fixture.stop() }
        let gate = BlockingWorkerAdmissionTests.Gate()
        let fillers = try await fixture.fillPasswordWorker(gate: gate)
        var outcomes: [String] = []
        for _ in 0..<10 {
            outcomes.append(
                await Self.outcome(fixture.node, "ann", "a guess", from: "10.1.0.1"))
        }
        gate.release()
        for task in fillers { _ = await task.value }
        // 5 refusals are free, the 6th blocks the address: the flood of 503s ends in the flood's own 429s.
        #expect(Array(outcomes.prefix(6)) == Array(repeating: "busy", count: 6), "\(outcomes)")
        #expect(outcomes.filter { $0 == "limited" }.count >= 3, "\(outcomes)")
    }

    @Test func theOwnersSignInWithAProofIsCheckedWhileStrangersHoldTheWorkerAndWithoutOneIsRefused() async throws {
        let fixture = try await Fixture()
        defer { fixture.stop() }
        _ = try await fixture.node.signIn(login: "ann", password: "the right password", address: "10.9.0.1")
        let proof = try #require(fixture.node.knownSignInProof(login: "ann"))
        let gate = BlockingWorkerAdmissionTests.Gate()
        let strangers = BlockingWorkerAdmissionTests.Gate()
        let fillers = try await fixture.fillPasswordWorker(gate: gate, second: strangers)
        #expect(
            await Self.outcome(fixture.node, "ann", "the right password", from: "10.9.0.1") == "busy", "without the proof the owner waits in the full normal lane")
        // The worker's thread is held and its lane full: the owner's check runs on the reserved lane's own thread.
        #expect(
            await Self.outcome(fixture.node, "ann", "the right password", from: "10.9.0.1", proof: proof) == "signed in")
        #expect(fixture.node.passwords.waiting.normal == fixture.node.passwords.capacity)
        gate.release()
        strangers.release()
        for task in fillers { _ = await task.value }
    }

    @Test func tokenAdministrationIsNeverQueuedBehindPasswordHashing() async throws {
        let fixture = try await Fixture()
        defer { fixture.stop() }
        let gate = BlockingWorkerAdmissionTests.Gate()
        let fillers = try await fixture.fillPasswordWorker(gate: gate)
        let record = try await fixture.node.run { [node = fixture.node] () throws(SupporterNodeError) in
            try node.addAPIToken(APITokenStore.makeToken(scope: .admin), scope: .admin, label: "during a flood")
        }
        try await fixture.node.run { [node = fixture.node] () throws(SupporterNodeError) in
            try node.revokeAPIToken(id: record.id)
        }
        gate.release()
        for task in fillers { _ = await task.value }
    }

    @Test func aRefusedSignInCostsNoHashNoStoreWriteAndNoAuditRow() async throws {
        let fixture = try await Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        for _ in 0..<6 {
            _ = await Self.outcome(node, "ann", "wrong", from: "10.2.0.1")
        }
        let hashes = node.passwords.counts.completed
        let stored = node.storeStatistics.applied
        let rows = try node.auditEvents(limit: 100_000).count
        for index in 0..<200 {
            let outcome = await Self.outcome(node, "ann", "guess \(index)", from: "10.2.0.1")
            #expect(outcome == "limited")
        }
        #expect(node.passwords.counts.completed == hashes)
        #expect(node.storeStatistics.applied == stored)
        #expect(try node.auditEvents(limit: 100_000).count == rows)
    }

    @Test func aKnownSignInProofCannotBeForgedMovedOrKeptPastItsPassword() async throws {
        let fixture = try await Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        let proof = try #require(node.knownSignInProof(login: "ann"))
        let hash = { (login: String) in node.people.withLock { $0.accounts[login] }.flatMap { PasswordHash($0.passwordHash) } }
        #expect(SupporterNode.isValid(proof, login: "ann", hash: hash("ann"), now: Date()))
        #expect(!SupporterNode.isValid(proof, login: "bea", hash: hash("bea"), now: Date()), "another login")
        let parts = proof.split(separator: ":").map(String.init)
        let flipped = parts[0] + ":" + parts[1] + ":" + String(parts[2].reversed())
        #expect(!SupporterNode.isValid(flipped, login: "ann", hash: hash("ann"), now: Date()), "a forged code")
        let later = "\(parts[0]):\(Int64(parts[1])! + 1):\(parts[2])"
        #expect(!SupporterNode.isValid(later, login: "ann", hash: hash("ann"), now: Date()), "a moved expiry")
        #expect(
            !SupporterNode.isValid(
                proof, login: "ann", hash: hash("ann"), now: Date().addingTimeInterval(SupporterNode.knownSignInLifetime + 60)),
            "expired")
        _ = try await node.changeAccount("ann", SupporterAccountChange(password: "a new password!"))
        #expect(!SupporterNode.isValid(proof, login: "ann", hash: hash("ann"), now: Date()), "a new password")
        for text in ["", "ann", "ann::", "ann:x:00", "ann:1:zz"] {
            #expect(!SupporterNode.isValid(text, login: "ann", hash: hash("ann"), now: Date()), "\(text)")
        }
    }
}
