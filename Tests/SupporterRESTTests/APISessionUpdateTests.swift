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

/// `PUT /sessions/{code}` bodies: present members change, absent ones stay, null clears.
@Suite struct APISessionUpdateTests {
    static let now = Date(unixMilliseconds: 1_796_033_700_000)

    static func decode(_ json: String) throws(RESTError) -> APISessionUpdate {
        try StrictJSON.decode(APISessionUpdate.self, from: Array(json.utf8)).validated(now: now)
    }

    static let record = SessionCodeRecord(
        code: "123-456-789", description: "printer", customerName: "Ann", createdAt: now,
        validUntil: now.addingTimeInterval(3600), assignedSupporter: "bob")

    @Test func absentMembersStayAndNullClears() throws {
        let change = try Self.decode(#"{"description":null,"customer_email":"ann@example.com"}"#)
        #expect(change.description == .clear)
        #expect(change.customerEmail == .set("ann@example.com"))
        #expect(change.customerName == .keep)
        #expect(change.changesMetadata)
        var record = Self.record
        change.apply(to: &record)
        #expect(record.description == nil)
        #expect(record.customerEmail == "ann@example.com")
        #expect(record.customerName == "Ann")
        #expect(record.assignedSupporter == "bob")
        #expect(record.validUntil == Self.record.validUntil)
    }

    @Test func stateAloneChangesNoMetadata() throws {
        #expect(try Self.decode(#"{"state":"closed"}"#).state == .closed)
        #expect(try Self.decode(#"{"state":"open"}"#).changesMetadata == false)
    }

    @Test func validUntilMovesTheEnd() throws {
        let change = try Self.decode(#"{"valid_until":"2099-01-01T00:00:00Z"}"#)
        var record = Self.record
        change.apply(to: &record)
        #expect(record.validUntil == RESTTime.parse("2099-01-01T00:00:00Z"))
    }

    @Test(arguments: [
        ("{}", "nothing to change"), (#"{"bogus":1}"#, "unknown member 'bogus'"),
        (#"{"type":"assist_ar"}"#, "unknown member 'type'"), (#"{"state":"gone"}"#, "state must be open or closed"),
        (#"{"state":null}"#, "state must be open or closed"),
        (#"{"valid_until":null}"#, "valid_until must be an RFC 3339 time"),
        (#"{"valid_until":"2001-01-01T00:00:00Z"}"#, "valid_until must be in the future"),
        (#"{"customer_email":"a b@c.de"}"#, "customer_email is not an email address"),
        (#"{"customer_name":""}"#, "customer_name must have 1 to 128 characters"),
        (#"{"description":false}"#, "description must be a string"),
        ("{\"assigned_supporter\":\"\(String(repeating: "s", count: 65))\"}",
         "assigned_supporter must have 1 to 64 characters"),
    ])
    func schemaViolationsAre422NamingTheMember(_ body: String, _ message: String) {
        #expect(throws: RESTError(.unprocessable, message)) { try Self.decode(body) }
    }

    @Test func encodingWritesNullForClearAndLeavesKeepOut() throws {
        let change = APISessionUpdate(description: .clear, customerName: .set("Ann"), state: .closed)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(change), as: UTF8.self)
        #expect(text == #"{"customer_name":"Ann","description":null,"state":"closed"}"#)
        #expect(try Self.decode(text) == change)
    }
}
