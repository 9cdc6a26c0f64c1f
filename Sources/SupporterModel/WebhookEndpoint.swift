public import Foundation

/// A receiver an admin registered for webhooks: where the node POSTs the audit events of the kinds it asked for,
/// signed with its secret.
public struct WebhookEndpoint: Sendable, Hashable {
    /// The endpoint's public id (`wh_` and 16 hex digits).
    public var id: String
    /// Where deliveries go: `https://…`, or `http://…` for a host the operator allows plain HTTP for.
    public var url: String
    /// The audit kinds delivered (`AuditEvent.Kind` raw values), or `["*"]` for every kind.
    public var eventKinds: [String]
    /// A disabled endpoint gets no new deliveries; its pending ones wait until it is enabled again.
    public var isEnabled: Bool
    /// What the admin wrote about it (at most 200 characters).
    public var description: String?
    public var createdAt: Date
    /// The signing secret (`whsec_…`). Shown once, when the endpoint is made or its secret rotated.
    public var secret: String
    /// The secret before the last rotation: deliveries are signed with it too until ``previousSecretUntil``, so a
    /// receiver can switch without missing one.
    public var previousSecret: String?
    public var previousSecretUntil: Date?
    /// Deliveries waiting (`pending`) and given up (`failed`), as counted when the endpoint was read.
    public var pendingCount: Int
    public var failedCount: Int

    public init(
        id: String, url: String, eventKinds: [String], isEnabled: Bool = true, description: String? = nil,
        createdAt: Date, secret: String, previousSecret: String? = nil, previousSecretUntil: Date? = nil,
        pendingCount: Int = 0, failedCount: Int = 0
    ) {
        self.id = id
        self.url = url
        self.eventKinds = eventKinds
        self.isEnabled = isEnabled
        self.description = description
        self.createdAt = createdAt
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil
        self.pendingCount = pendingCount
        self.failedCount = failedCount
    }

    /// Whether an event of `kind` is delivered to this endpoint.
    public func wants(_ kind: String) -> Bool { eventKinds.contains("*") || eventKinds.contains(kind) }

    /// The secrets a delivery at `now` is signed with: the current one, and the previous one while it is still valid.
    public func signingSecrets(at now: Date) -> [String] {
        guard let previousSecret, let until = previousSecretUntil, now < until else { return [secret] }
        return [secret, previousSecret]
    }
}
