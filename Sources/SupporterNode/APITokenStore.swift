import SupportTransport

/// What an API token may do.
public enum APITokenScope: String, Sendable, Hashable, CaseIterable {
    /// Register devices on session codes (the wire protocol's REGISTER).
    case device
    /// Use the REST API.
    case admin
}

/// API tokens the node knows: only their SHA-256 digests, checked in constant time, never logged whole.
public struct APITokenStore: Sendable {
    private var digests: [APITokenScope: [[UInt8]]] = [:]

    public init() {}

    /// A new random token; remember its digest with ``add(digest:scope:)``. The token itself is kept nowhere.
    public static func makeToken(scope: APITokenScope) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return (scope == .admin ? "rsa_" : "rsk_") + Base64.encode(bytes, urlSafe: true)
    }

    public static func digest(of token: String) -> [UInt8] { SHA256.hash(Array(token.utf8)) }

    public mutating func add(digest: [UInt8], scope: APITokenScope) {
        if !(digests[scope] ?? []).contains(digest) { digests[scope, default: []].append(digest) }
    }

    /// The scope `token` has, if it is one of ours. Compares against every digest without an early exit.
    public func scope(of token: String) -> APITokenScope? {
        let digest = Self.digest(of: token)
        var found: APITokenScope?
        for scope in APITokenScope.allCases {
            for stored in digests[scope] ?? [] where ConstantTime.equal(stored, digest) { found = scope }
        }
        return found
    }

    /// The scope of the token whose digest is `digest`, compared like ``scope(of:)``.
    public func scope(ofDigest digest: [UInt8]) -> APITokenScope? {
        var found: APITokenScope?
        for scope in APITokenScope.allCases {
            for stored in digests[scope] ?? [] where ConstantTime.equal(stored, digest) { found = scope }
        }
        return found
    }

    /// Whether `token` is a token of `scope`.
    public func accepts(_ token: String, scope: APITokenScope = .device) -> Bool { self.scope(of: token) == scope }

    public var count: Int { digests.values.reduce(0) { $0 + $1.count } }
}

/// Comparisons whose time does not depend on where the inputs differ.
public enum ConstantTime {
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<lhs.count { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
