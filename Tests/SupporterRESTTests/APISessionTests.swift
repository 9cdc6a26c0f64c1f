import Foundation
import Testing
import SupportHTTP
import SupporterNode
@testable import SupporterREST
import SupporterCore
import SupportSession
import SupportWire
import SupportRuntime
import TestSupport
import SupporterModel

/// The answers' JSON, byte for byte as protocol/openapi.yaml's `Session`, `SessionPage` and `Error` say.
@Suite struct APISessionTests {
    static let created = Date(unixMilliseconds: 1_796_033_700_042)

    static func info(state: SessionCodeState = .open, closed: Bool = false, device: String? = nil) -> SessionCodeInfo {
        SessionCodeInfo(
            record: SessionCodeRecord(
                code: "123-456-789", type: .assistAR, description: "printer", customerName: nil,
                customerEmail: "ann@example.com", waitingMessage: nil, isClosed: closed, createdAt: created,
                validUntil: created.addingTimeInterval(86_400), closedAt: closed ? created.addingTimeInterval(60) : nil,
                assignedSupporter: nil),
            state: state, deviceName: device)
    }

    static func body(_ value: some Encodable) -> String {
        String(decoding: HTTPResponse.json(.ok, encoding: value).body, as: UTF8.self)
    }

    @Test func everyMemberIsSentAndAbsentValuesAreNull() {
        #expect(
            Self.body(APISession(Self.info()))
                == #"{"assigned_supporter":null,"closed_at":null,"code":"123-456-789","created_at":"2026-11-30T10:15:00.042Z","#
                + #""customer_email":"ann@example.com","customer_name":null,"description":"printer","device_name":null,"#
                + #""feature_rules":{"default":"allow","rules":{}},"has_media_descriptor":false,"#
                + #""live_state":"open","node":null,"online":false,"reconnecting":false,"state":"open","type":"assist_ar","#
                + #""valid_until":"2026-12-01T10:15:00.042Z","waiting_message":null}"#)
    }

    @Test(arguments: [
        (SessionCodeState.online, "online", true), (.requestPending, "request_pending", true), (.active, "active", true),
        (.expired, "expired", false), (.open, "open", false),
    ])
    func liveStateAndOnlineFollowTheNode(_ state: SessionCodeState, _ name: String, _ online: Bool) {
        let session = APISession(Self.info(state: state, device: online ? "pc" : nil))
        #expect(session.liveState.rawValue == name)
        #expect(session.online == online)
        #expect(session.deviceName == (online ? "pc" : nil))
        #expect(session.state == .open)
    }

    @Test func aClosedCodeShowsItsClosingTime() {
        let text = Self.body(APISession(Self.info(state: .closed, closed: true)))
        #expect(text.contains(#""state":"closed""#))
        #expect(text.contains(#""live_state":"closed""#))
        #expect(text.contains(#""closed_at":"2026-11-30T10:16:00.042Z""#))
    }

    @Test func anAnswerReadsBackToTheSameSession() throws {
        let session = APISession(Self.info(state: .closed, closed: true))
        let data = Data(Self.body(session).utf8)
        #expect(try JSONDecoder().decode(APISession.self, from: data) == session)
    }

    @Test func aPageHasItsSessionsTotalOffsetAndLimit() {
        let page = APISessionPage(sessions: [], total: 4, offset: 9, limit: 50)
        #expect(Self.body(page) == #"{"limit":50,"offset":9,"sessions":[],"total":4}"#)
    }

    @Test func errorsHaveTheOneErrorShape() {
        #expect(
            Self.body(APIErrorBody(status: 404, code: "not_found", message: "no session code 1"))
                == #"{"error":{"code":"not_found","message":"no session code 1","status":404}}"#)
    }
}
