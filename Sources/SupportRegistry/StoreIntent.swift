public import Foundation

/// A durable change the registry asks for. The node hands intents to its store writer, which applies them in order
/// in one transaction; whatever an intent records is told to nobody before that transaction commits.
public enum StoreIntent: Sendable, Hashable {
    case insertCode(SessionCodeRecord)
    case updateCode(SessionCodeRecord)
    case deleteCode(String)
    case audit(AuditEvent)
    case saveBackoff(BackoffRow)
    case deleteBackoff(key: String)
}

/// Who made a change, for the audit trail: the node itself, a local operator (console or control socket), or a REST
/// client with the id of its token and its address.
public struct AuditActor: Sendable, Hashable {
    public var kind: String
    public var tokenID: String?
    public var address: String?

    public init(kind: String, tokenID: String? = nil, address: String? = nil) {
        self.kind = kind
        self.tokenID = tokenID
        self.address = address
    }

    /// The node acting on its own (expiry, shutdown).
    public static let node = AuditActor(kind: "node")
    /// A local operator: the console or the control socket (owner-only Unix socket).
    public static let local = AuditActor(kind: "local")

    /// The audit details naming this actor.
    public var details: [String: String] {
        var details = ["actor": kind]
        if let tokenID { details["actor_token"] = tokenID }
        if let address { details["actor_address"] = address }
        return details
    }
}
