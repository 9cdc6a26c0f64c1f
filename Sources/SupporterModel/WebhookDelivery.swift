public import Foundation

/// One event on its way to one webhook endpoint: a row of the endpoint's delivery log (the store's outbox).
public struct WebhookDelivery: Sendable, Hashable {
    /// Where a delivery stands.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Not yet answered with 2xx; tried again at ``WebhookDelivery/nextAttemptAt``.
        case pending
        /// The receiver answered 2xx.
        case delivered
        /// Given up: no 2xx within the retry window (24 h by default), or its event was archived meanwhile.
        case failed
    }

    /// The delivery's id: increasing in the order deliveries were made; an endpoint's are sent in this order.
    public var id: Int64
    public var endpointID: String
    /// The audit event delivered (its id is the webhook's event id).
    public var eventID: Int64
    public var eventKind: String
    public var code: String?
    public var state: State
    public var attempts: Int
    public var createdAt: Date
    /// When it is tried next (pending only).
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    /// The receiver's last HTTP status, if it answered.
    public var lastStatus: Int?
    /// Why the last attempt failed (connect error, timeout, status with the start of the body).
    public var lastError: String?
    /// When it was delivered or given up.
    public var finishedAt: Date?
    /// The delivery this one repeats, when an admin asked for a redelivery.
    public var redeliveryOf: Int64?

    public init(
        id: Int64, endpointID: String, eventID: Int64, eventKind: String, code: String?, state: State, attempts: Int,
        createdAt: Date, nextAttemptAt: Date?, lastAttemptAt: Date? = nil, lastStatus: Int? = nil,
        lastError: String? = nil, finishedAt: Date? = nil, redeliveryOf: Int64? = nil
    ) {
        self.id = id
        self.endpointID = endpointID
        self.eventID = eventID
        self.eventKind = eventKind
        self.code = code
        self.state = state
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.finishedAt = finishedAt
        self.redeliveryOf = redeliveryOf
    }
}

/// What became of one attempt to deliver, as the store records it.
public struct WebhookAttempt: Sendable, Hashable {
    /// What the attempt means for the delivery.
    public enum Outcome: Sendable, Hashable {
        /// Answered 2xx.
        case delivered
        /// Not delivered; tried again at this time.
        case retry(at: Date)
        /// Not delivered, and given up (with every pending delivery of the endpoint made before `staleBefore`).
        case failed(staleBefore: Date)
    }

    /// The last error of a delivery given up because an older one of its endpoint was.
    public static let givenUpWithOlder =
        "given up with an older delivery of this endpoint: the receiver did not take one for the whole retry window"

    public var deliveryID: Int64
    public var at: Date
    public var status: Int?
    public var error: String?
    public var outcome: Outcome

    public init(deliveryID: Int64, at: Date, status: Int?, error: String?, outcome: Outcome) {
        self.deliveryID = deliveryID
        self.at = at
        self.status = status
        self.error = error
        self.outcome = outcome
    }
}

/// An endpoint a node has taken (leased) for delivery, with its oldest pending deliveries in order and what each
/// delivers. While the lease holds no other node of the cluster delivers to it.
public struct WebhookWork: Sendable {
    /// One pending delivery and its event; `event` is nil when the event was archived before it could be sent.
    public struct Item: Sendable {
        public var delivery: WebhookDelivery
        public var event: AuditEvent?
        /// A message's content (for `message_sent` / `message_received` rows; no file bytes).
        public var content: StoredSessionContent?

        public init(delivery: WebhookDelivery, event: AuditEvent?, content: StoredSessionContent?) {
            self.delivery = delivery
            self.event = event
            self.content = content
        }
    }

    public var endpoint: WebhookEndpoint
    public var items: [Item]

    public init(endpoint: WebhookEndpoint, items: [Item]) {
        self.endpoint = endpoint
        self.items = items
    }

    /// The audit rows `work` delivers, for one read of their contents.
    public static func eventIDs(of work: [WebhookWork]) -> [Int64] {
        work.flatMap { $0.items.compactMap { $0.event?.id } }
    }

    /// This work with each message row's content from `contents` (by audit id).
    public func with(contents: [Int64: StoredSessionContent]) -> WebhookWork {
        var work = self
        for index in work.items.indices {
            work.items[index].content = work.items[index].event.flatMap { contents[$0.id] }
        }
        return work
    }
}
