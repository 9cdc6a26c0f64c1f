/// What an admin changes of a webhook endpoint; nil leaves a field as it is.
public struct WebhookEndpointChange: Sendable, Hashable {
    public var url: String?
    public var eventKinds: [String]?
    public var isEnabled: Bool?
    /// `.some(nil)` removes the description.
    public var description: String??
    /// A new secret; the old one keeps signing (as a second `v1`) for 24 hours.
    public var rotateSecret = false

    public init(
        url: String? = nil, eventKinds: [String]? = nil, isEnabled: Bool? = nil, description: String?? = nil,
        rotateSecret: Bool = false
    ) {
        self.url = url
        self.eventKinds = eventKinds
        self.isEnabled = isEnabled
        self.description = description
        self.rotateSecret = rotateSecret
    }
}
