import Foundation
import Testing
import TestSupport

@testable import SupporterStore

/// The store writes audit details with its own JSON writer; what it writes must stay byte for byte what
/// `JSONEncoder` (sorted keys, slashes unescaped) wrote before, so old and new rows look alike and tools that
/// compare the text see no change.
@Suite struct AuditDetailsJSONTests {
    static func foundation(_ details: [String: String]) throws -> String {
        if details.isEmpty { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(details), as: UTF8.self)
    }

    static let controls = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init)))

    static let cases: [[String: String]] = [
        [:],
        ["source_address": "127.0.0.1", "device": "bench-device-7", "token": "a1b2c3d4e5f6"],
        ["what": "registration_refused", "reason": "invalid_api_token", "detail": "unknown API token"],
        ["controls": controls, "quote": "\"", "backslash": "\\", "slash": "a/b//c", "del": "\u{7F}"],
        ["unicode": "Zoë Ångström 中村 👩🏽‍💻 \u{2028}\u{2029} مرحبا", "empty": ""],
        // Keys in every order that matters: case, digits, underscore, punctuation, non-ASCII.
        ["b": "1", "B": "2", "a": "3", "_": "4", "Z": "5", "code_type": "6", "codes": "7", "code1": "8", "code10": "9",
         "code2": "10", "codeA": "11", "é": "12", "z": "13", "Ω": "14", "🙂": "15", "a b": "16", "a\"b": "17",
         "C\u{301}": "18", "D": "19", "`": "20", "\u{106}x": "21"],
    ]

    @Test(arguments: cases)
    func writesWhatJSONEncoderWrote(_ details: [String: String]) throws {
        #expect(try AuditDetailsJSON.json(details) == Self.foundation(details))
    }

    @Test func randomDetailsMatchJSONEncoder() throws {
        var generator = SplitMix64(state: 0x5EED)
        let alphabet: [Unicode.Scalar] =
            (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "ß", "Ω", "中", "\u{2028}", "\u{FEFF}", "🙂", "\u{301}"]
        for _ in 0..<500 {
            var details: [String: String] = [:]
            for _ in 0..<Int(generator.next() % 6) {
                func text() -> String {
                    let count = Int(generator.next() % 12)
                    return String(String.UnicodeScalarView((0..<count).map { _ in
                        alphabet[Int(generator.next() % UInt64(alphabet.count))]
                    }))
                }
                details[text()] = text()
            }
            #expect(try AuditDetailsJSON.json(details) == Self.foundation(details), "\(details)")
        }
    }
}
