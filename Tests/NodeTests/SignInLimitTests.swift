import Foundation
import SupporterNode
import Testing
import SupportUtilities
import DeviceNode
import SampleAppModel
import SupportSession
import SupportWire
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

extension NodeIntegration {
    /// Sign-in limits hold against attempts sent all at once (an outside probe found them checked only one by one):
    /// a burst gets as many password checks as the same attempts in a row would.
    @Suite(.serialized) struct SignInLimitTests {
        /// A node whose store holds `logins`, each with a cheaply hashed password, so the checks that do run are fast.
        static func harness(logins: [String]) throws -> (NodeHarness, String) {
            let folder = NSTemporaryDirectory() + "rsup-signin-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let store = try SessionStore(path: folder + "/store.sqlite")
            let hash = try PasswordHash.make(password: "the right password", parameters: .init(logN: 10, r: 8, p: 1))
            let now = Date()
            try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                for login in logins {
                    try transaction.saveAccount(
                        SupporterAccountRecord(
                            login: login, displayName: login, role: .supporter, state: .active,
                            passwordHash: hash.description, createdAt: now, updatedAt: now))
                }
            }
            return (try NodeHarness(storePath: folder + "/store.sqlite"), folder)
        }

        /// Sends every attempt at once; how many were checked and found wrong, and how many were refused unchecked.
        static func burst(_ node: SupporterNode, _ attempts: [(login: String, address: String)]) async
            -> (wrong: Int, limited: Int, other: [String])
        {
            await withTaskGroup(of: String.self) { group in
                for attempt in attempts {
                    group.addTask {
                        do throws(SignInError) {
                            _ = try await node.signIn(login: attempt.login, password: "wrong", address: attempt.address)
                            return "signed in"
                        } catch {
                            switch error.kind {
                            case .wrongCredentials: return "wrong"
                            case .rateLimited: return "limited"
                            default: return "\(error)"
                            }
                        }
                    }
                }
                var outcome = (wrong: 0, limited: 0, other: [String]())
                for await result in group {
                    switch result {
                    case "wrong": outcome.wrong += 1
                    case "limited": outcome.limited += 1
                    default: outcome.other.append(result)
                    }
                }
                return outcome
            }
        }

        @Test func aBurstOfWrongPasswordsGetsNoMoreChecksThanTheLimitsAllow() async throws {
            let (harness, folder) = try Self.harness(logins: ["ann", "bea"])
            defer {
                harness.shutdown()
                try? FileManager.default.removeItem(atPath: folder)
            }
            // One address: 5 free failures, the 6th starts the block; 20 at once get 6 checks.
            let fromOne = await Self.burst(harness.supporter, (0..<20).map { _ in ("ann", "10.1.0.1") })
            #expect(fromOne.wrong == 6 && fromOne.limited == 14 && fromOne.other.isEmpty, "\(fromOne)")
            // One account from 30 addresses: 10 free failures, the 11th starts the block; 30 at once get 11 checks.
            let onOne = await Self.burst(harness.supporter, (0..<30).map { ("bea", "10.2.0.\($0 + 1)") })
            #expect(onOne.wrong == 11 && onOne.limited == 19 && onOne.other.isEmpty, "\(onOne)")
        }
    }
}
