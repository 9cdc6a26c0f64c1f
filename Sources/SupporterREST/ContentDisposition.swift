/// `Content-Disposition: attachment` for a file name a device chose: the one way such a name reaches a header.
///
/// The header carries an ASCII `filename` (anything outside printable ASCII, and `"`, `\`, `/`, `%`, `;`, replaced
/// by `_`) for old clients and the exact name as `filename*` (RFC 6266, RFC 8187: UTF-8, percent-encoded but for
/// attribute characters), so no name can end the parameter, split the header or pick a path.
enum ContentDisposition {
    static func attachment(fileName: String) -> String {
        let fallback = String(
            String.UnicodeScalarView(
                fileName.unicodeScalars.map { scalar in
                    (0x20...0x7E).contains(scalar.value) && !"\"\\/%;".unicodeScalars.contains(scalar) ? scalar : "_"
                }))
        var encoded = ""
        for byte in fileName.utf8 {
            if isAttributeCharacter(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return "attachment; filename=\"\(fallback.isEmpty ? "file" : fallback)\"; filename*=UTF-8''\(encoded)"
    }

    /// RFC 8187 `attr-char`: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~".
    private static func isAttributeCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$&+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
