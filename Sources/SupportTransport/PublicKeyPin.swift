/// A SHA-256 fingerprint of a peer's DER SubjectPublicKeyInfo: what `certs/make-dev-certs.sh` prints.
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let digest: [UInt8]

    /// A pin from its 32 bytes.
    public init(digest: [UInt8]) throws(TransportError) {
        guard digest.count == 32 else {
            throw TransportError(.invalidPin, "a SHA-256 pin has 32 bytes, this one has \(digest.count)")
        }
        self.digest = digest
    }

    /// A pin from text: `sha256/<base64>` or 64 hexadecimal digits (colons allowed).
    public init(_ text: String) throws(TransportError) {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("sha256/") {
            guard let bytes = Base64.decode(String(trimmed.dropFirst("sha256/".count))) else {
                throw TransportError(.invalidPin, "pin '\(text)' is not valid base64 after 'sha256/'")
            }
            try self.init(digest: bytes)
            return
        }
        let hex = trimmed.filter { $0 != ":" }
        guard hex.count == 64, let bytes = Hex.decode(hex) else {
            throw TransportError(
                .invalidPin, "pin '\(text)' is neither 'sha256/<base64>' nor 64 hexadecimal digits")
        }
        try self.init(digest: bytes)
    }

    /// The `sha256/<base64>` form.
    public var description: String { "sha256/" + Base64.encode(digest) }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}

/// Hexadecimal text, without Foundation.
enum Hex {
    static func decode(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? bytes : nil
    }
}

/// Base64 without Foundation: standard (RFC 4648 §4, padded) or URL-safe (§5, unpadded, for tokens).
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8], urlSafe: Bool = false) -> String {
        let alphabet = urlSafe ? urlAlphabet : alphabet
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = UInt32(0)
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            for position in 0..<4 {
                if position <= chunk.count {
                    out.append(alphabet[Int((value >> (18 - 6 * position)) & 0x3F)])
                } else if !urlSafe {
                    out.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        var padding = 0
        for character in text.utf8 {
            if character == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, let value = alphabet.firstIndex(of: character) else { return nil }
            values.append(UInt8(value))
        }
        guard (values.count + padding) % 4 == 0, padding <= 2 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < values.count {
            let group = values[index..<min(index + 4, values.count)]
            var value = UInt32(0)
            for (offset, sextet) in group.enumerated() { value |= UInt32(sextet) << (18 - 6 * offset) }
            for position in 0..<(group.count - 1) { bytes.append(UInt8(truncatingIfNeeded: value >> (16 - 8 * position))) }
            index += 4
        }
        return bytes
    }
}
