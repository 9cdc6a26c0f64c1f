/// Who made a change, for the audit trail: the node itself, a local operator (console or control socket), or a REST
/// client with the id of its token and its address.
public struct AuditActor: Sendable, Hashable {
    public var kind: String
    public var tokenID: String?
    public var address: String?
    /// The supporter account acting (its login), when one signed in.
    public var account: String?
    /// That account's display name at the time.
    public var accountName: String?
    /// The public id of the login session the account acts through (never the session's secret).
    public var loginSession: String?

    public init(
        kind: String, tokenID: String? = nil, address: String? = nil, account: String? = nil,
        accountName: String? = nil, loginSession: String? = nil
    ) {
        self.kind = kind
        self.tokenID = tokenID
        self.address = address
        self.account = account
        self.accountName = accountName
        self.loginSession = loginSession
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
        if let account { details["actor_account"] = account }
        if let accountName { details["actor_account_name"] = accountName }
        if let loginSession { details["actor_login_session"] = loginSession }
        return details
    }
}
