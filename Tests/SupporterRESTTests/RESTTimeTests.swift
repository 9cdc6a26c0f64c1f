import Foundation
import Testing
import SupporterREST
import SupporterNode
import SupporterCore
import SupportSession
import SupportWire
import SupportHTTP
import SupportRuntime
import TestSupport
import SupporterModel

@Suite struct RESTTimeTests {
    @Test func timesAreSentInUTCWithMilliseconds() {
        #expect(RESTTime.format(Date(unixMilliseconds: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(RESTTime.format(Date(unixMilliseconds: 1_796_033_700_042)) == "2026-11-30T10:15:00.042Z")
        // Rounded to the millisecond the store keeps, so an answer reads the same after a restart.
        #expect(RESTTime.format(Date(timeIntervalSince1970: 1.0006)) == "1970-01-01T00:00:01.001Z")
        #expect(RESTTime.format(Date(unixMilliseconds: -1)) == "1969-12-31T23:59:59.999Z")
    }

    @Test(arguments: [
        ("2026-11-30T10:15:00.042Z", Int64(1_796_033_700_042)), ("2026-11-30T10:15:00Z", 1_796_033_700_000),
        ("2026-11-30T11:15:00+01:00", 1_796_033_700_000), ("2026-11-30T10:15:00.5Z", 1_796_033_700_500),
    ])
    func anyOffsetAndOptionalFractionsAreAccepted(_ text: String, _ milliseconds: Int64) {
        #expect(RESTTime.parse(text)?.unixMilliseconds == milliseconds)
    }

    @Test(arguments: ["tomorrow", "2026-11-30", "2026-11-30 10:15:00Z", "2026-13-01T00:00:00Z", ""])
    func otherTextIsNotATime(_ text: String) {
        #expect(RESTTime.parse(text) == nil)
    }

    @Test func aSentTimeReadsBackToTheSameMillisecond() {
        let date = Date(unixMilliseconds: 1_796_033_700_123)
        #expect(RESTTime.parse(RESTTime.format(date)) == date)
    }
}
