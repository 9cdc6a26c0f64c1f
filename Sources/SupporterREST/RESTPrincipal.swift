import SupportUtilities
import SupporterModel

/// Who is calling the REST API: an admin API token (a program; every right, no account), or a supporter signed in
/// through a login session (the web console, or any client holding the session cookie).
enum RESTPrincipal: Sendable {
    case adminToken(id: String, address: String)
    case account(SupporterAccount, session: LoginSession, address: String)

    /// The audit actor of a change made by this caller.
    var actor: AuditActor {
        switch self {
        case .adminToken(let id, let address): AuditActor(kind: "rest", tokenID: id, address: address)
        case .account(let account, let session, let address):
            account.actor(kind: "rest", address: address, loginSession: session.id)
        }
    }

    /// Admin tokens and admin accounts.
    var isAdmin: Bool {
        switch self {
        case .adminToken: true
        case .account(let account, _, _): account.isAdmin
        }
    }

    /// The signed-in account, if any.
    var account: SupporterAccount? {
        if case .account(let account, _, _) = self { return account }
        return nil
    }

    /// Whether this caller may see and act on a code assigned to `assignee`.
    func mayWork(onCodeAssignedTo assignee: String?) -> Bool {
        switch self {
        case .adminToken: true
        case .account(let account, _, _): account.mayWork(onCodeAssignedTo: assignee)
        }
    }

    /// 403 unless this is an admin.
    func requireAdmin() throws(RESTError) {
        guard isAdmin else { throw RESTError(.forbidden, "only an admin may do this") }
    }
}
