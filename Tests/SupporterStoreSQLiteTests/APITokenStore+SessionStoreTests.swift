import Foundation
import Testing
import TestSupport

@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore

/// API tokens in the SQLite store: their identity (public ids, revocation keeping the row) and the set a node loads.
@Suite struct APITokenStoreSessionStoreTests {
    /// A date on a whole millisecond, as the store keeps them (``SessionStoreTests/date(_:)``).
    static func date(_ milliseconds: Int64) -> Date { SessionStoreTests.date(milliseconds) }

    @Test func storedTokensGetUniquePublicIDsAndRevocationKeepsTheRow() throws {
        let store = try SessionStore(path: ":memory:")
        let adminDigest = APITokenStore.digest(of: APITokenStore.makeToken(scope: .admin))
        let deviceDigest = APITokenStore.digest(of: APITokenStore.makeToken(scope: .device))
        let admin = try store.addToken(digest: adminDigest, scope: .admin, label: "ops", createdAt: Self.date(1))
        let device = try store.addToken(digest: deviceDigest, createdAt: Self.date(2))
        #expect(admin.id.count == 12 && admin.id.allSatisfy(\.isHexDigit) && admin.id != device.id)
        #expect(admin.scope == .admin && admin.label == "ops" && admin.createdAt == Self.date(1) && !admin.isRevoked)
        #expect(try store.tokens() == [admin, device])
        #expect(try store.token(digest: adminDigest) == admin)
        // Adding a stored digest again returns the stored record.
        #expect(try store.addToken(digest: adminDigest, label: "again", createdAt: Self.date(5)) == admin)

        #expect(try store.revokeToken(id: admin.id, at: Self.date(10)))
        #expect(try !store.revokeToken(id: admin.id, at: Self.date(11)))
        #expect(try !store.revokeToken(id: "000000000000"))
        var revoked = admin
        revoked.revokedAt = Self.date(10)
        #expect(try store.tokens() == [revoked, device])  // the row stays
        #expect(try store.token(digest: adminDigest) == nil)  // and never authenticates again
        #expect(try store.tokenDigests(scope: .admin).isEmpty)
        #expect(try APITokenStore(loadingFrom: store).acceptedRecords == [device])
        let error = #expect(throws: StoreError.self) {
            try store.addToken(digest: adminDigest, scope: .admin, createdAt: Self.date(12))
        }
        #expect(error?.kind == .revoked)
        #expect(error?.message.contains(admin.id) == true)
        #expect(throws: StoreError.self) { try store.addTokenDigest(adminDigest, createdAt: Self.date(12)) }
    }

    @Test func aNodeLoadsTheStoredTokensWithTheirIDs() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("tokens.sqlite")
        let token = APITokenStore.makeToken(scope: .device)
        let record = try SessionStore(path: path).addToken(
            digest: APITokenStore.digest(of: token), label: "kiosk", createdAt: Self.date(1))
        let loaded = try APITokenStore(loadingFrom: SessionStore(path: path))
        #expect(loaded.record(of: token) == record)
    }
}
