import Foundation
import Testing
import SupporterModel
@testable import SupporterREST

/// The CSV of session reports: RFC 4180 quoting, and no field a spreadsheet would run as a formula.
@Suite struct SessionReportCSVTests {
    @Test(arguments: [
        ("plain", "plain"), ("a,b", #""a,b""#), (#"say "hi""#, #""say ""hi""""#), ("two\nlines", "\"two\nlines\""),
        ("=HYPERLINK(\"x\")", #""'=HYPERLINK(""x"")""#), ("+1", "'+1"), ("-2", "'-2"), ("@cmd", "'@cmd"),
        (" padded ", #"" padded ""#), ("bell\u{07}", "bell\u{FFFD}"), ("c1\u{9B}", "c1\u{FFFD}"), ("", ""),
    ])
    func aFieldIsQuotedAndNeverAFormula(value: String, written: String) {
        #expect(SessionReportCSV.field(value) == written)
    }

    @Test func oneRowPerRequestAfterTheHeaderWithCRLF() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let rows = [
            AuditEvent(time: start, code: "123456789", kind: .deviceOnline, details: ["device": "=Pixel, 8"]),
            AuditEvent(
                time: start.addingTimeInterval(1), code: "123456789", kind: .requestSent,
                details: ["request_id": "1", "supporter": "Alice", "type": "screen_share"]),
            AuditEvent(time: start.addingTimeInterval(3), code: "123456789", kind: .requestRejected, details: ["request_id": "1"]),
        ]
        let text = SessionReportCSV.text([SessionReport(code: "123456789", events: rows)])
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.count == 3 && lines[2].isEmpty, "\(text)")
        #expect(lines[0].hasPrefix("code,device,request_id,supporter,"))
        #expect(lines[1].hasPrefix(#"123456789,"'=Pixel, 8",1,Alice,,screen_share,rejected,2027-01-15T08:00:01.000Z,"#), "\(lines[1])")
        #expect(lines[1].contains(",2000,"), "waiting 2 s: \(lines[1])")
    }
}
