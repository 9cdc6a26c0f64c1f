internal import COpenSSL

/// SHA-256 from the system's OpenSSL, for nodes that store digests (API tokens, the audit chain).
public enum SHA256 {
    /// The implementation, fetched from OpenSSL's default provider once. With `EVP_sha256()` every `EVP_Digest` call
    /// looks it up again (a locked table lookup): half the cost of hashing an audit row (0.8 of 1.6 µs here), and the
    /// node hashes every audit row and every REGISTER's token.
    private static let algorithm = FetchedAlgorithm()

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &digest, &length, algorithm.pointer ?? EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")  // safe: only memory exhaustion fails
        return digest
    }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let blockSize = 64
        var block = key.count > blockSize ? hash(key) : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        let inner = hash(block.map { $0 ^ 0x36 } + message)
        return hash(block.map { $0 ^ 0x5C } + inner)
    }
}

private final class FetchedAlgorithm: @unchecked Sendable {
    // @unchecked: `pointer` is set once in init and never changes; OpenSSL lets a fetched EVP_MD be used from any
    // thread at once. Kept for the life of the process (never freed).
    package let pointer: OpaquePointer?
    package init() { pointer = EVP_MD_fetch(nil, "SHA256", nil) }
}
