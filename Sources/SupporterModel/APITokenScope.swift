import SupportUtilities

/// What an API token may do.
public enum APITokenScope: String, Sendable, Hashable, CaseIterable {
    /// Register devices on session codes (the wire protocol's REGISTER).
    case device
    /// Use the REST API.
    case admin
}

extension APITokenScope {
    /// A new random token of this scope: `rsa_` (admin) or `rsk_` (device) and 32 random bytes, base64url.
    public func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return (self == .admin ? "rsa_" : "rsk_") + Base64.encode(bytes, urlSafe: true)
    }
}
