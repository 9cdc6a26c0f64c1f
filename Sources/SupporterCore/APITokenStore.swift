import SupportUtilities
import SupportWire
public import SupporterModel

/// The API tokens a node accepts, in memory: only their SHA-256 digests, each with its ``APITokenRecord`` (public id,
/// scope, label), never the tokens.
///
/// Timing: a presented token is hashed, and the digest is looked up in a dictionary. The lookup's time depends only
/// on that digest, which the presenter can compute anyway, and on stored digests, which reveal nothing about their
/// tokens (SHA-256 is preimage-resistant); so it leaks nothing about a valid token, as the constant-time comparison of
/// every digest it replaces did not either. Revoked tokens are never held here.
public struct APITokenStore: Sendable {
    private var records: [[UInt8]: APITokenRecord] = [:]

    public init() {}

    /// Tokens shorter than this many characters are refused (``validate(_:)``). Made tokens have 47 (32 random bytes).
    public static let minimumTokenLength = 24

    /// Checks that `token` can be an API token: at least ``minimumTokenLength`` characters, all printable ASCII
    /// without spaces. Throws an ``APITokenError`` that says what to do, and never holds the token.
    public static func validate(_ token: String) throws(APITokenError) {
        for scalar in token.unicodeScalars where !(0x21...0x7E).contains(scalar.value) {
            let what: String
            switch scalar.value {
            case 0x20: what = "a space"
            case 0..<0x20, 0x7F: what = "a control character (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            default: what = "a non-ASCII character"
            }
            throw APITokenError(
                kind: .invalidCharacter,
                message:
                    "an API token may hold only printable ASCII characters without spaces; this one holds \(what): "
                    + "check for a stray space or line break when copying it, or make one with 'rsup-supporter token'")
        }
        guard token.utf8.count >= minimumTokenLength else {
            throw APITokenError(
                kind: .tooShort,
                message:
                    "an API token must be at least \(minimumTokenLength) characters long; this one has "
                    + "\(token.utf8.count): make one with 'rsup-supporter token'")
        }
    }

    /// A new random token (32 random bytes, 47 characters); remember its digest with ``add(digest:record:)``. The
    /// token itself is kept nowhere.
    public static func makeToken(scope: APITokenScope) -> String { scope.makeToken() }

    public static func digest(of token: String) -> [UInt8] { SHA256.hash(Array(token.utf8)) }

    /// Accepts the token whose digest is `digest`, known by `record` (as ``SessionStore/addToken(digest:scope:label:createdAt:)``
    /// returned it). A revoked record is not added, and removes the digest if it was held.
    public mutating func add(digest: [UInt8], record: APITokenRecord) {
        records[digest] = record.isRevoked ? nil : record
    }

    /// Accepts a digest without its record: it gets a made-up id that matches no stored token.
    @available(*, deprecated, message: "use add(digest:record:) with the record the store returned, so the id is right")
    public mutating func add(digest: [UInt8], scope: APITokenScope) {
        if records[digest] == nil {
            records[digest] = APITokenRecord(id: APITokenRecord.makeID(), scope: scope, createdAt: .distantPast)
        }
    }

    /// Stops accepting the token with public id `id`; returns its record, nil when none was held.
    @discardableResult
    public mutating func remove(id: String) -> APITokenRecord? {
        guard let digest = records.first(where: { $0.value.id == id })?.key else { return nil }
        return records.removeValue(forKey: digest)
    }

    /// Stops accepting the token whose digest is `digest`; returns its record, nil when none was held.
    @discardableResult
    public mutating func remove(digest: [UInt8]) -> APITokenRecord? { records.removeValue(forKey: digest) }

    /// The record of `token` when it is accepted: who acts (its id) and what it may do (its scope).
    public func record(of token: String) -> APITokenRecord? { records[Self.digest(of: token)] }

    /// The record of the token whose digest is `digest`, when it is accepted.
    public func record(digest: [UInt8]) -> APITokenRecord? { records[digest] }

    /// The scope of the token whose digest is `digest`, if it is accepted.
    public func scope(ofDigest digest: [UInt8]) -> APITokenScope? { records[digest]?.scope }

    /// The scope `token` has, if it is one of ours.
    public func scope(of token: String) -> APITokenScope? { record(of: token)?.scope }

    /// Whether `token` is a token of `scope`.
    public func accepts(_ token: String, scope: APITokenScope = .device) -> Bool { self.scope(of: token) == scope }

    /// How many tokens are accepted.
    public var count: Int { records.count }

    /// The records of every accepted token, oldest first.
    public var acceptedRecords: [APITokenRecord] {
        records.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }
}
