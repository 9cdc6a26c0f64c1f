public import SupporterStore
import SupporterCore
public import Foundation
import Synchronization
import SupportWire
import SupportUtilities
public import SupporterModel

/// The store's API tokens: digests with their public ids, scopes, labels and revocations (never the tokens).
extension SessionStore {
    package static let tokenColumns = "id, scope, label, created_at, revoked_at"

    /// Stores the digest of an API token (never the token) with a new public id, and returns its record. Adding a
    /// digest that is stored already changes nothing and returns the stored record; adding one that was revoked throws
    /// ``StoreError/Kind/revoked``.
    @discardableResult
    public func addToken(
        digest: [UInt8], scope: APITokenScope = .device, label: String? = nil, createdAt: Date
    ) throws(StoreError) -> APITokenRecord {
        try write("add API token") { (transaction: inout StoreTransaction) throws(StoreError) -> APITokenRecord in
            try transaction.addToken(digest: digest, scope: scope, label: label, createdAt: createdAt)
        }
    }

    /// Remembers the digest of an API token (never the token). True when it was new; adding a known digest again
    /// changes nothing; adding a revoked one throws ``StoreError/Kind/revoked``. ``addToken(digest:scope:label:createdAt:)``
    /// also returns the token's id.
    @discardableResult
    public func addTokenDigest(
        _ digest: [UInt8], scope: APITokenScope = .device, label: String? = nil, createdAt: Date
    ) throws(StoreError) -> Bool {
        try write("add API token") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            try transaction.addTokenReportingNew(digest: digest, scope: scope, label: label, createdAt: createdAt).isNew
        }
    }

    /// Revokes the token with public id `id` at `date`: it is never accepted again, and its row stays for the audit
    /// trail. True when it was valid until now; false when there is no such token or it was revoked already.
    /// A running node must also drop it from its ``APITokenStore`` (``APITokenStore/remove(id:)``).
    @discardableResult
    public func revokeToken(id: String, at date: Date = Date()) throws(StoreError) -> Bool {
        try write("revoke API token") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            try transaction.revokeToken(id: id, at: date)
        }
    }

    /// Revokes the token whose digest is `digest` (see ``revokeToken(id:at:)``); true when it was valid until now.
    @discardableResult
    public func removeTokenDigest(_ digest: [UInt8], at date: Date = Date()) throws(StoreError) -> Bool {
        try write("revoke API token") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            try transaction.revokeToken(digest: digest, at: date)
        }
    }

    /// Every stored token, revoked ones included, oldest first.
    public func tokens() throws(StoreError) -> [APITokenRecord] {
        try perform("list API tokens") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [APITokenRecord] in
            let statement = try connection.prepare(
                "SELECT \(Self.tokenColumns) FROM api_tokens ORDER BY created_at, rowid")
            var records: [APITokenRecord] = []
            while try statement.step() { records.append(try Self.tokenRecord(from: statement)) }
            return records
        }
    }

    /// The record of the valid (not revoked) token whose digest is `digest`: its id, to name the acting token in the
    /// audit trail, and its scope. Nil when there is none, or it was revoked.
    public func token(digest: [UInt8]) throws(StoreError) -> APITokenRecord? {
        try perform("look up API token") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> APITokenRecord? in
            let statement = try connection.prepare(
                "SELECT \(Self.tokenColumns) FROM api_tokens WHERE digest = ? AND revoked_at IS NULL")
            try statement.bind(blob: digest, at: 1)
            guard try statement.step() else { return nil }
            return try Self.tokenRecord(from: statement)
        }
    }

    /// Every valid token's digest and record, oldest first (for ``APITokenStore/init(loadingFrom:)``).
    package func activeTokens() throws(StoreError) -> [(digest: [UInt8], record: APITokenRecord)] {
        try perform("read API tokens") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError)
                -> [(digest: [UInt8], record: APITokenRecord)] in
            let statement = try connection.prepare(
                """
                SELECT \(Self.tokenColumns), digest FROM api_tokens WHERE revoked_at IS NULL
                ORDER BY created_at, rowid
                """)
            var tokens: [(digest: [UInt8], record: APITokenRecord)] = []
            while try statement.step() {
                guard let digest = statement.blob(at: 5) else { throw Self.invalidData("an API token digest is NULL") }
                tokens.append((digest, try Self.tokenRecord(from: statement)))
            }
            return tokens
        }
    }

    /// The digest of every valid (not revoked) token of `scope`, oldest first.
    public func tokenDigests(scope: APITokenScope = .device) throws(StoreError) -> [[UInt8]] {
        try activeTokens().filter { $0.record.scope == scope }.map(\.digest)
    }

    package static func tokenRecord(from row: borrowing SQLiteDatabase.Statement) throws(StoreError) -> APITokenRecord {
        guard let id = row.text(at: 0), let scopeText = row.text(at: 1), let createdAt = row.int64(at: 3) else {
            throw invalidData("an API token row lacks a required value")
        }
        guard let scope = APITokenScope(rawValue: scopeText) else {
            throw invalidData("an API token has the unknown scope '\(scopeText)'")
        }
        return APITokenRecord(
            id: id, scope: scope, label: row.text(at: 2), createdAt: Date(unixMilliseconds: createdAt),
            revokedAt: row.int64(at: 4).map(Date.init(unixMilliseconds:)))
    }
}
