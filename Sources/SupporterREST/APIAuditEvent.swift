import Foundation
import SupportUtilities
import SupporterModel

/// `AuditEvent` of protocol/openapi.yaml: one row of the audit trail, with the acting party pulled out of its details.
struct APIAuditEvent: Encodable {
    let event: AuditEvent

    init(_ event: AuditEvent) { self.event = event }

    enum CodingKeys: String, CodingKey { case id, time, kind, code, actor, details }
    enum ActorKeys: String, CodingKey {
        case kind, account, displayName = "display_name", token, address, loginSession = "login_session"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.id, forKey: .id)
        try container.encode(RESTTime.format(event.time), forKey: .time)
        try container.encode(event.kind.rawValue, forKey: .kind)
        try container.encode(event.code, forKey: .code)
        let details = event.details
        if let kind = details["actor"] {
            var actor = container.nestedContainer(keyedBy: ActorKeys.self, forKey: .actor)
            try actor.encode(kind, forKey: .kind)
            try actor.encode(details["actor_account"], forKey: .account)
            try actor.encode(details["actor_account_name"], forKey: .displayName)
            try actor.encode(details["actor_token"], forKey: .token)
            try actor.encode(details["actor_address"], forKey: .address)
            try actor.encode(details["actor_login_session"], forKey: .loginSession)
        } else {
            try container.encodeNil(forKey: .actor)
        }
        try container.encode(details.filter { !$0.key.hasPrefix("actor") }, forKey: .details)
    }
}

/// `AuditPage`: the answer of `GET /audit`, newest first.
struct APIAuditPage: Encodable {
    let events: [APIAuditEvent]
    let nextBeforeID: Int64?

    enum CodingKeys: String, CodingKey { case events, nextBeforeID = "next_before_id" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(events, forKey: .events)
        try container.encode(nextBeforeID, forKey: .nextBeforeID)
    }
}
