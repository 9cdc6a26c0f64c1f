public import SupportUtilities

/// Who may read `GET /metrics` without a supporter account: a client from one of ``allowed`` (its address as
/// ``ClientAddressResolver`` finds it: a trusted proxy's `X-Forwarded-For` counts), or one sending the metrics token
/// as `Authorization: Bearer` (compared by digest, in constant time), or an admin API token.
public struct MetricsAccess: Sendable {
    /// Networks whose clients read metrics without a token (default: loopback only).
    public var allowed: [IPPrefix]
    /// SHA-256 of the metrics token; nil when none is configured.
    private var tokenDigest: [UInt8]?

    public init(allowed: [IPPrefix] = IPPrefix.loopback, token: String? = nil) {
        self.allowed = allowed
        tokenDigest = token.map { SHA256.hash(Array($0.utf8)) }
    }

    /// Whether a metrics token is configured.
    public var hasToken: Bool { tokenDigest != nil }

    /// Whether `token` is the metrics token.
    func isMetricsToken(_ token: String) -> Bool {
        guard let tokenDigest else { return false }
        return ConstantTime.equal(SHA256.hash(Array(token.utf8)), tokenDigest)
    }

    /// Whether `address` may read metrics without a token.
    func allows(_ address: String) -> Bool { allowed.contains { $0.contains(address) } }
}
