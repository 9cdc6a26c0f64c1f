public import Foundation

/// A signed-in supporter's session, as the REST API and web console use it.
public struct LoginSession: Sendable, Hashable {
    /// Public id for the audit trail and logs (a prefix of the secret's digest; never the secret).
    public let id: String
    /// The account signed in.
    public let login: String
    /// The value every state-changing request of a cookie-authenticated client must echo in `X-CSRF-Token`.
    public let csrfToken: String
    public let createdAt: Date
    public var lastUsed: Date

    public init(id: String, login: String, csrfToken: String, createdAt: Date, lastUsed: Date) {
        self.id = id
        self.login = login
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastUsed = lastUsed
    }
}
