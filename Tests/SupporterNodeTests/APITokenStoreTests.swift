import Foundation
import Testing

@testable import SupporterNode
import SupportSession
import SupportWire
import SupportUtilities
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

/// API tokens: validation, the in-memory set a node checks, and their identity in the store.
@Suite struct APITokenStoreTests {
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    // MARK: validation

    @Test(arguments: APITokenScope.allCases)
    func madeTokensAreLongEnough(scope: APITokenScope) throws {
        let token = APITokenStore.makeToken(scope: scope)
        #expect(token.count >= APITokenStore.minimumTokenLength)
        try APITokenStore.validate(token)
    }

    @Test func aShortTokenIsRefusedWithItsLengthAndWhatToDo() {
        let error = #expect(throws: APITokenError.self) { try APITokenStore.validate("short-secret-123") }
        #expect(error?.kind == .tooShort)
        #expect(error?.message.contains("at least 24 characters") == true)
        #expect(error?.message.contains("has 16") == true)
        #expect(error?.message.contains("rsup-supporter token") == true)
        #expect(error?.message.contains("short-secret-123") == false)  // never the token itself
        #expect(throws: Never.self) { try APITokenStore.validate(String(repeating: "x", count: 24)) }
    }

    @Test(arguments: ["a-long-enough-token-value-1\n", " a-long-enough-token-value-1", "a-long-enough-tökén-value-1",
        "a-long-enough\ttoken-value-1"])
    func aTokenWithSpacesOrControlCharactersIsRefused(token: String) {
        let error = #expect(throws: APITokenError.self) { try APITokenStore.validate(token) }
        #expect(error?.kind == .invalidCharacter)
    }

    // MARK: in memory

    @Test func theInMemoryStoreNamesTheActingTokenAndForgetsRemovedOnes() {
        var tokens = APITokenStore()
        let admin = APITokenStore.makeToken(scope: .admin), device = APITokenStore.makeToken(scope: .device)
        let adminRecord = APITokenRecord(id: "a1a1a1a1a1a1", scope: .admin, label: "ops", createdAt: Self.date(1))
        let deviceRecord = APITokenRecord(id: "d2d2d2d2d2d2", scope: .device, createdAt: Self.date(2))
        tokens.add(digest: APITokenStore.digest(of: admin), record: adminRecord)
        tokens.add(digest: APITokenStore.digest(of: device), record: deviceRecord)
        #expect(tokens.count == 2)
        #expect(tokens.record(of: admin) == adminRecord)
        #expect(tokens.scope(of: device) == .device)
        #expect(tokens.accepts(admin, scope: .admin) && !tokens.accepts(admin, scope: .device))
        #expect(tokens.record(of: "rsa_not-a-token-we-know-about") == nil)
        #expect(tokens.acceptedRecords == [adminRecord, deviceRecord])

        #expect(tokens.remove(id: "a1a1a1a1a1a1") == adminRecord)
        #expect(tokens.remove(id: "a1a1a1a1a1a1") == nil)
        #expect(tokens.record(of: admin) == nil && tokens.count == 1)
        #expect(tokens.remove(digest: APITokenStore.digest(of: device)) == deviceRecord)
        // A revoked record is never held.
        var revoked = deviceRecord
        revoked.revokedAt = Self.date(3)
        tokens.add(digest: APITokenStore.digest(of: device), record: revoked)
        #expect(tokens.record(of: device) == nil && tokens.count == 0)
    }

    // MARK: in the store

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
