import SupportTransport

/// API tokens the node issued: stored only as SHA-256 digests, checked in constant time, never logged whole.
public struct APITokenStore: Sendable {
    private var digests: [[UInt8]] = []

    public init() {}

    /// Makes a new random token and remembers its digest. The token itself is returned once and kept nowhere.
    public mutating func issue() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = "rsk_" + Base64URL.encode(bytes)
        add(token)
        return token
    }

    /// Accepts an existing token (from configuration).
    public mutating func add(_ token: String) { digests.append(SHA256.hash(Array(token.utf8))) }

    /// Whether `token` is one of ours. Compares against every digest without an early exit.
    public func accepts(_ token: String) -> Bool {
        let digest = SHA256.hash(Array(token.utf8))
        var found = false
        for stored in digests where ConstantTime.equal(stored, digest) { found = true }
        return found
    }

    public var count: Int { digests.count }
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

/// Base64 with the URL-safe alphabet and no padding, for tokens.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = UInt32(0)
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            for position in 0...chunk.count { out.append(alphabet[Int((value >> (18 - 6 * position)) & 0x3F)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
