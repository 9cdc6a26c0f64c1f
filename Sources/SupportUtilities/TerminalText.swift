/// The one escaping rule for text shown on a terminal or written to a log (SPEC §4.2).
///
/// Wire strings accept every well-formed code point, U+0000 included (SPEC §4.2), and the store keeps them as they
/// came. Shown raw, such a string could end a log line and forge the next one, move the cursor, recolour or clear the
/// screen, or reorder what a person reads. Every place that shows or logs a string from outside passes it through
/// ``escaped(_:)``, once.
public enum TerminalText {
    /// Whether ``escaped(_:)`` replaces `scalar`: the C0 controls U+0000–U+001F, DEL U+007F, the C1 controls
    /// U+0080–U+009F, the bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and
    /// paragraph separators U+2028 and U+2029, and the backslash (so that the result reads back one way only).
    public static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x5C, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `text` with every scalar of ``needsEscaping(_:)`` replaced: `\\` for the backslash, `\n`, `\r`, `\t`, `\xHH`
    /// for the others below U+0100, `\u{HHHH}` for the rest (uppercase hex). Everything else passes unchanged.
    ///
    /// The result holds no control character, so it stays on one line; and it is unambiguous: no two texts give the
    /// same result.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscaping) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscaping(scalar) else {
                result.append(scalar)
                continue
            }
            switch scalar {
            case "\\": result.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": result.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": result.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": result.append(contentsOf: #"\t"#.unicodeScalars)
            default:
                if scalar.value < 0x100 {
                    result.append(contentsOf: #"\x"#.unicodeScalars)
                    result.append(contentsOf: hex(scalar.value, digits: 2).unicodeScalars)
                } else {
                    result.append(contentsOf: #"\u{"#.unicodeScalars)
                    result.append(contentsOf: hex(scalar.value, digits: 4).unicodeScalars)
                    result.append("}")
                }
            }
        }
        return String(result)
    }

    /// Serialized JSON text made safe for a terminal or a log without changing what it decodes to: every scalar of
    /// ``needsEscaping(_:)`` that JSON itself leaves raw (DEL, the C1 controls, the bidi controls, U+2028, U+2029) is
    /// written as a JSON `\uHHHH` escape. JSON escapes the C0 controls and the backslash already, and these scalars
    /// can only occur inside JSON strings, so the result is the same JSON value, on one line. The one rule for JSON
    /// output (SPEC §4.2).
    public static func escapedJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { needsEscaping($0) && $0.value >= 0x7F }) else { return json }
        var result = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if scalar.value >= 0x7F, needsEscaping(scalar) {
                result.append(contentsOf: #"\u"#.unicodeScalars)
                result.append(contentsOf: hex(scalar.value, digits: 4).lowercased().unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// `value` in uppercase hex, zero-padded to `digits`.
    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
