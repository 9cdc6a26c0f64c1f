import Foundation
import SupporterNode
import TestSupport
import Testing
import SupportUtilities
import DeviceNode
import SampleAppModel
import SupportSession
import SupportWire
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

extension NodeIntegration {
    /// A password hashed with weaker scrypt parameters than today's is hashed again at the next sign-in.
    @Suite(.serialized) struct PasswordHashUpgradeTests {
        @Test func aWeakerHashIsReplacedAtSignInAndStillAcceptsThePassword() async throws {
            let folder = NSTemporaryDirectory() + "rsup-upgrade-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = folder + "/store.sqlite"
            do {
                let store = try SessionStore(path: path)
                let weak = try PasswordHash.make(password: "an old password", parameters: .init(logN: 10, r: 8, p: 1))
                let now = Date()
                try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
                    try transaction.saveAccount(
                        SupporterAccountRecord(
                            login: "old", displayName: "Old Timer", role: .supporter, state: .active,
                            passwordHash: weak.description, createdAt: now, updatedAt: now))
                }
            }
            let harness = try NodeHarness(storePath: path)
            defer { harness.shutdown() }
            _ = try await harness.supporter.signIn(login: "old", password: "an old password", address: "127.0.0.1")
            let upgraded = await waitUntil {
                let stored = (try? SessionStore(path: path).accounts())?.first { $0.login == "old" }
                return stored?.passwordHash.hasPrefix("$scrypt$ln=15,") == true
            }
            #expect(upgraded, "the weak hash stayed")
            _ = try await harness.supporter.signIn(login: "old", password: "an old password", address: "127.0.0.1")
            let audit = try harness.supporter.auditEvents().map(\.kind.rawValue)
            #expect(audit.contains("account_changed"), "\(audit)")
        }
    }
}
