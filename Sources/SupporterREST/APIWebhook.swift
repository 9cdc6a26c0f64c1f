import Foundation
import SupportUtilities
public import SupporterModel

/// `Webhook` of protocol/openapi.yaml: an endpoint as an admin sees it; `secret` only in the answers that made it
/// (create, rotate).
struct APIWebhook: Encodable {
    let endpoint: WebhookEndpoint
    var showsSecret = false

    enum CodingKeys: String, CodingKey {
        case id, url, eventKinds = "event_kinds", enabled, description, createdAt = "created_at", pending, failed,
            secret, previousSecretUntil = "previous_secret_until"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(endpoint.id, forKey: .id)
        try container.encode(endpoint.url, forKey: .url)
        try container.encode(endpoint.eventKinds, forKey: .eventKinds)
        try container.encode(endpoint.isEnabled, forKey: .enabled)
        try container.encode(endpoint.description, forKey: .description)
        try container.encode(RESTTime.format(endpoint.createdAt), forKey: .createdAt)
        try container.encode(endpoint.pendingCount, forKey: .pending)
        try container.encode(endpoint.failedCount, forKey: .failed)
        try container.encode(endpoint.previousSecretUntil.map(RESTTime.format), forKey: .previousSecretUntil)
        if showsSecret { try container.encode(endpoint.secret, forKey: .secret) }
    }
}

/// `WebhookList`: the answer of `GET /webhooks`.
struct APIWebhookList: Encodable {
    let webhooks: [APIWebhook]
}

/// `WebhookCreate`: the body of `POST /webhooks`.
struct APIWebhookCreate: Decodable {
    let url: String
    let eventKinds: [String]
    let description: String?
    let enabled: Bool

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["url", "event_kinds", "description", "enabled"])
        url = try object.string("url", max: 2048, required: true) ?? ""
        guard let kinds = try object.strings("event_kinds", max: 64) else {
            throw RESTError.unprocessable("event_kinds is required: a list of audit kinds, or [\"*\"] for every kind")
        }
        eventKinds = kinds
        description = try object.string("description", min: 0, max: 200, required: false)
        enabled = try object.bool("enabled") ?? true
    }
}

/// `WebhookUpdate`: the body of `PATCH /webhooks/{id}`; absent members stay as they are.
struct APIWebhookUpdate: Decodable {
    let change: WebhookEndpointChange

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["url", "event_kinds", "description", "enabled"])
        var change = WebhookEndpointChange()
        change.url = try object.string("url", max: 2048, required: false)
        change.eventKinds = try object.strings("event_kinds", max: 64)
        change.isEnabled = try object.bool("enabled")
        switch try object.text("description", min: 0, max: 200, nullable: true) {
        case .keep: break
        case .clear: change.description = .some(nil)
        case .set(let text): change.description = .some(text)
        }
        self.change = change
    }
}

/// `WebhookDelivery`: one row of an endpoint's delivery log.
struct APIWebhookDelivery: Encodable {
    let delivery: WebhookDelivery

    enum CodingKeys: String, CodingKey {
        case id, eventID = "event_id", eventKind = "event_kind", code, state, attempts, createdAt = "created_at",
            nextAttemptAt = "next_attempt_at", lastAttemptAt = "last_attempt_at", lastStatus = "last_status",
            lastError = "last_error", finishedAt = "finished_at", redeliveryOf = "redelivery_of"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivery.id, forKey: .id)
        try container.encode(delivery.eventID, forKey: .eventID)
        try container.encode(delivery.eventKind, forKey: .eventKind)
        try container.encode(delivery.code, forKey: .code)
        try container.encode(delivery.state.rawValue, forKey: .state)
        try container.encode(delivery.attempts, forKey: .attempts)
        try container.encode(RESTTime.format(delivery.createdAt), forKey: .createdAt)
        try container.encode(delivery.nextAttemptAt.map(RESTTime.format), forKey: .nextAttemptAt)
        try container.encode(delivery.lastAttemptAt.map(RESTTime.format), forKey: .lastAttemptAt)
        try container.encode(delivery.lastStatus, forKey: .lastStatus)
        try container.encode(delivery.lastError, forKey: .lastError)
        try container.encode(delivery.finishedAt.map(RESTTime.format), forKey: .finishedAt)
        try container.encode(delivery.redeliveryOf, forKey: .redeliveryOf)
    }
}

/// `WebhookRetry`: the answer of `POST /webhooks/{id}/retry`: how many pending deliveries were made due now.
struct APIWebhookRetry: Encodable {
    let retried: Int
}

/// `WebhookDeliveryPage`: the answer of `GET /webhooks/{id}/deliveries`, newest first.
struct APIWebhookDeliveryPage: Encodable {
    let deliveries: [APIWebhookDelivery]
    let nextBeforeID: Int64?

    enum CodingKeys: String, CodingKey { case deliveries, nextBeforeID = "next_before_id" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(deliveries, forKey: .deliveries)
        try container.encode(nextBeforeID, forKey: .nextBeforeID)
    }
}

/// The body of a webhook delivery (`WebhookEvent` of protocol/openapi.yaml): the audit row as `AuditEvent` shows
/// it, and for a message or file row what it held (`content`, null once past its retention; absent on other rows).
public enum WebhookPayload {
    /// The JSON body delivering `event`.
    public static func body(_ event: AuditEvent, content: StoredSessionContent?) -> [UInt8] {
        RESTJSON.encode(
            APIEventData(
                event: APIAuditEvent(event), session: nil, includesSession: false,
                content: APISessionContent.carried.contains(event.kind) ? .some(content.map(APISessionContent.init)) : nil))
            ?? Array("{}".utf8)
    }
}
