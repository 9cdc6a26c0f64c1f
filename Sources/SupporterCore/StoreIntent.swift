public import Foundation
import SupportWire
import SupportUtilities

/// A durable change the registry asks for. The node hands intents to its store writer, which applies them in order
/// in one transaction; whatever an intent records is told to nobody before that transaction commits.
public enum StoreIntent: Sendable, Hashable {
    case insertCode(SessionCodeRecord)
    case updateCode(SessionCodeRecord)
    case deleteCode(String)
    case audit(AuditEvent)
    case saveBackoff(BackoffRow)
    case deleteBackoff(key: String)
    /// Creates or replaces a supporter account (by login).
    case saveAccount(SupporterAccountRecord)
    /// Remembers a login session.
    case saveLoginSession(LoginSessionRecord)
    /// Forgets the login session with this digest (sign-out).
    case deleteLoginSession(digest: [UInt8])
    /// Forgets every login session of an account (disabled, or its password changed).
    case deleteLoginSessions(login: String)
    /// Forgets login sessions that began before this time (past their lifetime).
    case deleteLoginSessionsBefore(Date)
    /// This node now holds the device on `code`. Where several nodes share one database this is "one device per
    /// code" across them: the write fails with a conflict while another node's live presence holds the code. A store
    /// of one node has nothing to record.
    case claimPresence(code: String, deviceName: String?)
    /// The session on a code this node holds moved to `state` (online, request pending, active), for the other nodes.
    case presenceState(code: String, state: SessionCodeState)
    /// What another node needs to take over the session on `code` if this node dies (an opaque text the node
    /// makes: state, request, grant, digests of the resume secrets). A store of one node has nothing to record.
    case resumeState(code: String, state: String)
    /// This node no longer holds a device on `code`.
    case releasePresence(code: String)
}

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
