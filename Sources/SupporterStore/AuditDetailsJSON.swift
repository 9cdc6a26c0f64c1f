import Foundation

/// How every engine keeps an audit event's details: JSON text with sorted keys, the same bytes on SQLite and
/// PostgreSQL (the hash chain covers them).
package enum AuditDetailsJSON {
    /// The details as the store keeps them: JSON text with sorted keys, `{}` when empty.
    ///
    /// Byte for byte what `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes (the tests compare
    /// both), written by hand: every audit row passes here, and the encoder cost about 20 µs a row, a fifth of the
    /// store writer's time per registration (`swift run -c release Benchmarks nodecost`). Keys in UTF-8 byte order
    /// (not `String` order, which compares canonical equivalents); `"` and `\` escaped; `\b \f \n \r \t` for those
    /// controls, `\u00xx` (lower-case hex) for the other C0 controls; everything else, `/` and non-ASCII included, as
    /// it is.
    package static func json(_ details: [String: String]) throws(StoreError) -> String {
        if details.isEmpty { return "{}" }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(details.reduce(2) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 })
        bytes.append(UInt8(ascii: "{"))
        for (index, key) in details.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendJSONString(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            appendJSONString(details[key]!, to: &bytes)  // safe: `key` is one of the dictionary's keys
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    package static func details(fromJSON text: String) throws(StoreError) -> [String: String] {
        if text == "{}" { return [:] }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        } catch {
            throw StoreError(kind: .invalidData, operation: "decode", message: "an audit event's details are not a JSON object of strings", path: "")
        }
    }


    /// SQL text with every run of white space made one space, to compare a trigger's stored definition with ours.
    package static func normalized(_ sql: String) -> String {
        sql.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}
