import Foundation
import Testing

@testable import SupporterCore
import SupporterModel

/// API tokens: validation and the in-memory set a node checks (their identity in the store: SupporterStoreSQLiteTests'
/// `APITokenStoreSessionStoreTests`).
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
}
