import Foundation
import Testing
import SupporterNode
@testable import SupporterREST
import SupporterCore
import SupportSession
import SupportWire
import SupportHTTP
import SupportRuntime
import TestSupport
import SupporterModel

/// `POST /sessions` bodies: what is accepted, and what is refused with which status and member.
@Suite struct APISessionCreateTests {
    static let now = Date(unixMilliseconds: 1_796_033_700_000)

    static func decode(_ json: String) throws(RESTError) -> APISessionCreate {
        try StrictJSON.decode(APISessionCreate.self, from: Array(json.utf8)).validated(now: now)
    }

    @Test func anEmptyObjectAsksForARemoteSupportCodeWithDefaults() throws {
        let body = try Self.decode("{}")
        #expect(body == APISessionCreate())
        #expect(body.codeType == .remoteSupport)
        #expect(body.lifetime == nil)
        #expect(body.details == SessionCodeDetails())
    }

    @Test func everyMemberIsRead() throws {
        let body = try Self.decode(
            #"{"type":"assist_ar","description":"printer","customer_name":"Ann","customer_email":"ann@example.com","#
                + #""waiting_message":"hold on","valid_for_seconds":600}"#)
        #expect(body.codeType == .assistAR)
        #expect(
            body.details
                == SessionCodeDetails(
                    description: "printer", customerName: "Ann", customerEmail: "ann@example.com",
                    waitingMessage: "hold on"))
        #expect(body.lifetime == .seconds(600))
    }

    @Test(arguments: ["600", "600.0", "6e2", "60", "31536000"])
    func aLifetimeIsAnyWholeJSONNumberInRange(_ number: String) throws {
        #expect(try Self.decode(#"{"valid_for_seconds":\#(number)}"#).validForSeconds == Int(Double(number)!))
    }

    @Test func validUntilTakesAnyOffset() throws {
        let body = try Self.decode(#"{"valid_until":"2099-01-01T01:00:00+01:00"}"#)
        #expect(body.validUntil == RESTTime.parse("2099-01-01T00:00:00Z"))
    }

    @Test func lengthsCountCodePoints() throws {
        // 128 × "e + combining acute" is 256 code points (128 characters): allowed; one more pair is not.
        let fits = String(repeating: "e\u{301}", count: 128)
        #expect(try Self.decode("{\"description\":\"\(fits)\"}").description == fits)
        #expect(throws: RESTError.self) { try Self.decode("{\"description\":\"\(fits)e\u{301}\"}") }
    }

    /// `{"description":"…"}` whose string holds C3 28, which is not UTF-8.
    static let descriptionWithInvalidUTF8: [UInt8] = Array(#"{"description":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)

    /// Bodies that are not one JSON object: 400.
    @Test(arguments: [
        ([], "the body must be a JSON object"), (Array("{".utf8), "the body is not valid JSON"),
        (Array("[]".utf8), "the body must be a JSON object"), (Array(#""text""#.utf8), "the body must be a JSON object"),
        (Array("42".utf8), "the body must be a JSON object"), (Array("null".utf8), "the body must be a JSON object"),
        (Array("true".utf8), "the body must be a JSON object"),
        ([0xFF, 0xFE] as [UInt8], "the body is not valid JSON: it is not UTF-8"),
        // Invalid UTF-8 inside a member's string is a body that is not JSON, not a member of the wrong type.
        (Self.descriptionWithInvalidUTF8, "the body is not valid JSON: it is not UTF-8"),
    ])
    func notAnObjectIs400(_ body: [UInt8], _ message: String) {
        #expect(throws: RESTError(.badRequest, message)) {
            try StrictJSON.decode(APISessionCreate.self, from: body)
        }
        #expect(throws: RESTError(.badRequest, message)) {
            try StrictJSON.decode(APISessionUpdate.self, from: body)
        }
    }

    /// Objects the schema refuses: 422, with a message that names the member.
    @Test(arguments: [
        (#"{"bogus":1}"#, "unknown member 'bogus'"), (#"{"Type":"assist_ar"}"#, "unknown member 'Type'"),
        (#"{"customerName":"x"}"#, "unknown member 'customerName'"),
        (#"{"type":"video"}"#, "type must be remote_support or assist_ar"),
        (#"{"type":null}"#, "type must be remote_support or assist_ar"),
        (#"{"type":1}"#, "type must be remote_support or assist_ar"),
        (#"{"description":42}"#, "description must be a string"),
        (#"{"description":null}"#, "description cannot be null"),
        (#"{"description":""}"#, "description must have 1 to 256 characters"),
        (#"{"customer_name":["Ann"]}"#, "customer_name must be a string"),
        (#"{"customer_email":"ab"}"#, "customer_email must have 3 to 254 characters"),
        (#"{"customer_email":"not-an-email"}"#, "customer_email is not an email address"),
        (#"{"customer_email":"ann@example"}"#, "customer_email is not an email address"),
        (#"{"customer_email":"a b@c.de"}"#, "customer_email is not an email address"),
        (#"{"waiting_message":{}}"#, "waiting_message must be a string"),
        (#"{"valid_for_seconds":59}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":31536001}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":"60"}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":true}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":60.5}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":null}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_for_seconds":1e300}"#, "valid_for_seconds must be a whole number from 60 to 31536000"),
        (#"{"valid_until":"tomorrow"}"#, "valid_until must be an RFC 3339 time"),
        (#"{"valid_until":1796033760}"#, "valid_until must be an RFC 3339 time"),
        (#"{"valid_until":"2001-01-01T00:00:00.000Z"}"#, "valid_until must be in the future"),
        (#"{"valid_until":"2026-11-30T10:15:00Z"}"#, "valid_until must be in the future"),
        (#"{"valid_for_seconds":600,"valid_until":"2099-01-01T00:00:00Z"}"#,
         "give valid_for_seconds or valid_until, not both"),
    ])
    func schemaViolationsAre422NamingTheMember(_ body: String, _ message: String) {
        #expect(throws: RESTError(.unprocessable, message)) { try Self.decode(body) }
    }

    @Test func encodingLeavesAbsentMembersOut() throws {
        let body = APISessionCreate(type: .assistAR, validForSeconds: 600)
        let data = try JSONEncoder().encode(body)
        #expect(try StrictJSON.decode(APISessionCreate.self, from: Array(data)) == body)
        #expect(String(decoding: data, as: UTF8.self).contains("null") == false)
    }
}
