public import Foundation
import SupportWire
import SupportUtilities
public import SupporterModel

/// A supporter account as stored: the login name it signs in with, the display name a device's user sees in a
/// connection request, its role and state, and its password's hash (never the password).
public struct SupporterAccountRecord: Sendable, Hashable {
    /// Lower-case letters, digits, `.`, `_` and `-`, 1 to 64 characters; never changes.
    public let login: String
    /// What the device's user sees ("Alice Martin wants to connect"), 1 to 64 bytes of UTF-8.
    public var displayName: String
    public var role: SupporterRole
    public var state: SupporterAccountState
    /// The password's hash in its stored text form (`PasswordHash`).
    public var passwordHash: String
    public let createdAt: Date
    public var updatedAt: Date

    public init(
        login: String, displayName: String, role: SupporterRole, state: SupporterAccountState, passwordHash: String,
        createdAt: Date, updatedAt: Date
    ) {
        self.login = login
        self.displayName = displayName
        self.role = role
        self.state = state
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A login session as stored, so that a restarted node (or another node on the same database) still knows it: the
/// SHA-256 digest of its secret (never the secret), its public id, its account, its CSRF token and when it began.
public struct LoginSessionRecord: Sendable, Hashable {
    public let digest: [UInt8]
    public let id: String
    public let login: String
    public let csrfToken: String
    public let createdAt: Date

    public init(digest: [UInt8], id: String, login: String, csrfToken: String, createdAt: Date) {
        self.digest = digest
        self.id = id
        self.login = login
        self.csrfToken = csrfToken
        self.createdAt = createdAt
    }
}
