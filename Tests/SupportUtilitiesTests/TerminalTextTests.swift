// The escaping rule of SPEC §4.2 for text shown on a terminal or written to a log, as tables.
import Foundation
import SupportUtilities
import Testing

@Suite struct TerminalTextTests {
    /// Every escaped code point and what it becomes, written out from SPEC §4.2 (not computed from the code).
    static let escapes: [(UInt32, String)] =
        [
            (0x00, #"\x00"#), (0x01, #"\x01"#), (0x02, #"\x02"#), (0x03, #"\x03"#), (0x04, #"\x04"#),
            (0x05, #"\x05"#), (0x06, #"\x06"#), (0x07, #"\x07"#), (0x08, #"\x08"#), (0x09, #"\t"#),
            (0x0A, #"\n"#), (0x0B, #"\x0B"#), (0x0C, #"\x0C"#), (0x0D, #"\r"#), (0x0E, #"\x0E"#),
            (0x0F, #"\x0F"#), (0x10, #"\x10"#), (0x11, #"\x11"#), (0x12, #"\x12"#), (0x13, #"\x13"#),
            (0x14, #"\x14"#), (0x15, #"\x15"#), (0x16, #"\x16"#), (0x17, #"\x17"#), (0x18, #"\x18"#),
            (0x19, #"\x19"#), (0x1A, #"\x1A"#), (0x1B, #"\x1B"#), (0x1C, #"\x1C"#), (0x1D, #"\x1D"#),
            (0x1E, #"\x1E"#), (0x1F, #"\x1F"#),
            (0x5C, #"\\"#),
            (0x7F, #"\x7F"#),
            (0x80, #"\x80"#), (0x81, #"\x81"#), (0x82, #"\x82"#), (0x83, #"\x83"#), (0x84, #"\x84"#),
            (0x85, #"\x85"#), (0x86, #"\x86"#), (0x87, #"\x87"#), (0x88, #"\x88"#), (0x89, #"\x89"#),
            (0x8A, #"\x8A"#), (0x8B, #"\x8B"#), (0x8C, #"\x8C"#), (0x8D, #"\x8D"#), (0x8E, #"\x8E"#),
            (0x8F, #"\x8F"#), (0x90, #"\x90"#), (0x91, #"\x91"#), (0x92, #"\x92"#), (0x93, #"\x93"#),
            (0x94, #"\x94"#), (0x95, #"\x95"#), (0x96, #"\x96"#), (0x97, #"\x97"#), (0x98, #"\x98"#),
            (0x99, #"\x99"#), (0x9A, #"\x9A"#), (0x9B, #"\x9B"#), (0x9C, #"\x9C"#), (0x9D, #"\x9D"#),
            (0x9E, #"\x9E"#), (0x9F, #"\x9F"#),
            (0x061C, #"\u{061C}"#), (0x200E, #"\u{200E}"#), (0x200F, #"\u{200F}"#),
            (0x202A, #"\u{202A}"#), (0x202B, #"\u{202B}"#), (0x202C, #"\u{202C}"#), (0x202D, #"\u{202D}"#),
            (0x202E, #"\u{202E}"#),
            (0x2066, #"\u{2066}"#), (0x2067, #"\u{2067}"#), (0x2068, #"\u{2068}"#), (0x2069, #"\u{2069}"#),
            (0x2028, #"\u{2028}"#), (0x2029, #"\u{2029}"#),
        ]

    static func text(_ value: UInt32) -> String { String(Unicode.Scalar(value)!) }

    @Test("each escaped code point becomes its escape, alone and between letters", arguments: escapes)
    func escapesEachControl(value: UInt32, expected: String) {
        #expect(TerminalText.escaped(Self.text(value)) == expected)
        #expect(TerminalText.escaped("a" + Self.text(value) + "b") == "a" + expected + "b")
        #expect(TerminalText.needsEscaping(Unicode.Scalar(value)!))
    }

    @Test("every other code point in all of Unicode passes unchanged")
    func passesEveryOtherCodePoint() {
        let escaped = Set(Self.escapes.map(\.0))
        var changed: [UInt32] = []
        for value in UInt32(0)...0x10FFFF where !escaped.contains(value) {
            guard let scalar = Unicode.Scalar(value) else { continue }  // surrogates
            let text = String(scalar)
            if TerminalText.escaped(text) != text || TerminalText.needsEscaping(scalar) { changed.append(value) }
        }
        #expect(changed.isEmpty, "changed: \(changed.prefix(20).map { String($0, radix: 16) })")
    }

    @Test(
        "strings with controls among ordinary text",
        arguments: [
            ("", ""),
            ("plain ASCII, 123-456-789", "plain ASCII, 123-456-789"),
            ("Zoë Ångström, 日本語, مرحبا, Ελληνικά", "Zoë Ångström, 日本語, مرحبا, Ελληνικά"),
            ("emoji 👩‍💻🇫🇷 and e\u{301} (e + U+0301)", "emoji 👩‍💻🇫🇷 and e\u{301} (e + U+0301)"),
            ("x\n2026-01-01 INFO forged", #"x\n2026-01-01 INFO forged"#),
            ("\u{1B}[31mred\u{1B}[0m", #"\x1B[31mred\x1B[0m"#),
            ("nul\u{0}byte", #"nul\x00byte"#),
            ("\u{9B}31m", #"\x9B31m"#),
            ("crlf\r\n", #"crlf\r\n"#),
            ("tab\there", #"tab\there"#),
            (#"C:\temp\new"#, #"C:\\temp\\new"#),
            (#"already \n escaped"#, #"already \\n escaped"#),
            ("abc\u{202E}fdp.exe", #"abc\u{202E}fdp.exe"#),
            ("\u{2066}isolate\u{2069}", #"\u{2066}isolate\u{2069}"#),
            ("line\u{2028}separator", #"line\u{2028}separator"#),
            ("\u{85}next line, \u{7F}del", #"\x85next line, \x7Fdel"#),
            ("\u{A0}no-break space, \u{AD}soft hyphen stay", "\u{A0}no-break space, \u{AD}soft hyphen stay"),
        ])
    func escapesStrings(input: String, expected: String) {
        #expect(TerminalText.escaped(input) == expected)
    }

    @Test("the result holds no control character, so it is one line")
    func resultHasNoControls() {
        let all = String(String.UnicodeScalarView(Self.escapes.map { Unicode.Scalar($0.0)! }))
        let result = TerminalText.escaped(all)
        #expect(!result.unicodeScalars.contains { TerminalText.needsEscaping($0) && $0 != "\\" })
        #expect(result.split(separator: "\n", omittingEmptySubsequences: false).count == 1)
    }

    @Test("escaping is unambiguous: unescaping the result gives the text back")
    func escapingReadsBackOneWay() {
        let pool: [Unicode.Scalar] =
            Self.escapes.map { Unicode.Scalar($0.0)! } + ["a", "x", "u", "{", "}", "0", "1", "B", "n", "é", "😀"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            var scalars = String.UnicodeScalarView()
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            for _ in 0..<Int(state >> 60) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                scalars.append(pool[Int((state >> 33) % UInt64(pool.count))])
            }
            let text = String(scalars)
            #expect(Self.unescaped(TerminalText.escaped(text)) == text, "\(Array(text.unicodeScalars))")
        }
    }

    /// The inverse of the SPEC §4.2 escaping, written here from the SPEC: nil if `text` is not a possible result.
    static func unescaped(_ text: String) -> String? {
        var scalars = Array(text.unicodeScalars)[...]
        var result = String.UnicodeScalarView()
        while let scalar = scalars.popFirst() {
            guard scalar == "\\" else {
                result.append(scalar)
                continue
            }
            switch scalars.popFirst() {
            case "\\": result.append("\\")
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "x":
                guard scalars.count >= 2,
                    let value = UInt32(String(String.UnicodeScalarView(scalars.prefix(2))), radix: 16)
                else { return nil }
                scalars = scalars.dropFirst(2)
                result.append(Unicode.Scalar(value)!)
            case "u":
                guard scalars.popFirst() == "{", let close = scalars.firstIndex(of: "}"),
                    let value = UInt32(String(String.UnicodeScalarView(scalars[..<close])), radix: 16),
                    let decoded = Unicode.Scalar(value)
                else { return nil }
                scalars = scalars[scalars.index(after: close)...]
                result.append(decoded)
            default:
                return nil
            }
        }
        return String(result)
    }

    @Test("JSON output: DEL, C1, bidi controls and U+2028/U+2029 become \\u escapes, and the JSON decodes to the same text")
    func jsonOutputEscapesWhatJSONLeavesRaw() throws {
        let text = "dev\n\u{1B}[31m\u{7F}\u{85}\u{9B}\u{202E}evil\u{2028}\u{2066}é😀\\"
        let data = try JSONSerialization.data(withJSONObject: ["name": text])
        let escaped = TerminalText.escapedJSON(String(decoding: data, as: UTF8.self))
        // The backslash stays (it is JSON's own escape); no control, bidi or separator code point is left raw.
        #expect(!escaped.unicodeScalars.contains { TerminalText.needsEscaping($0) && $0 != "\\" }, "\(escaped)")
        #expect(escaped.contains(#"\u202e"#) && escaped.contains(#"\u0085"#) && escaped.contains(#"\u2028"#))
        #expect(escaped.contains("é😀"), "other code points stay as they are: \(escaped)")
        let decoded = try JSONSerialization.jsonObject(with: Data(escaped.utf8)) as? [String: String]
        #expect(decoded?["name"] == text)
    }

    @Test("JSON without such code points is returned as it is")
    func plainJSONIsUnchanged() {
        let json = #"{"a":"b\n\u0000 é","c":[1,2]}"#
        #expect(TerminalText.escapedJSON(json) == json)
    }
}
