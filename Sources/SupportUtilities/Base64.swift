/// Base64 without Foundation: standard (RFC 4648 §4, padded) or URL-safe (§5, unpadded, for tokens).
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` as Base64 text.
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

    /// The bytes of standard (padded) Base64 `text`, or nil when it is not that.
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
