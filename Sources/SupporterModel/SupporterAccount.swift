public import Foundation
import SupportUtilities
import SupportVocabulary

/// A supporter account as the node shows it: never its password or hash.
public struct SupporterAccount: Sendable, Hashable {
    public let login: String
    /// The name a device's user sees in a connection request.
    public let displayName: String
    public let role: SupporterRole
    public let state: SupporterAccountState
    public let createdAt: Date
    public let updatedAt: Date

    public init(
        login: String, displayName: String, role: SupporterRole, state: SupporterAccountState, createdAt: Date,
        updatedAt: Date
    ) {
        self.login = login
        self.displayName = displayName
        self.role = role
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var isAdmin: Bool { role == .admin }
    public var isActive: Bool { state == .active }

    /// The audit actor for this account acting through `kind` (`rest`, `local`, …).
    public func actor(kind: String, address: String? = nil, loginSession: String? = nil, tokenID: String? = nil)
        -> AuditActor
    {
        AuditActor(
            kind: kind, tokenID: tokenID, address: address, account: login, accountName: displayName,
            loginSession: loginSession)
    }

    /// Whether this account may see and act on a code assigned to `assignee` (nil: unassigned).
    public func mayWork(onCodeAssignedTo assignee: String?) -> Bool {
        isAdmin || assignee == nil || assignee == login
    }

    /// Checks a login name: 1 to 64 of lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit.
    public static func validate(login: String) throws(SupporterNodeError) {
        let bytes = Array(login.utf8)
        let allowed = { (byte: UInt8) in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
        guard (1...64).contains(bytes.count), bytes.allSatisfy(allowed), allowed(bytes[0]), bytes[0] != 0x2E,
            bytes[0] != 0x5F, bytes[0] != 0x2D
        else {
            throw SupporterNodeError(
                "a login has 1 to 64 lower-case letters, digits, '.', '_' or '-', and starts with a letter or digit",
                kind: .invalid)
        }
    }

    /// Checks a display name: 1 to the wire's name limit in bytes of UTF-8, no control characters, not blank.
    public static func validate(displayName: String) throws(SupporterNodeError) {
        guard (1...WireLimits.nameLength).contains(displayName.utf8.count),
            !displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            !displayName.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            throw SupporterNodeError(
                "a display name has 1 to \(WireLimits.nameLength) bytes, is not blank and has no control characters",
                kind: .invalid)
        }
    }

    /// Checks a new password: 10 to 1,024 bytes.
    public static func validate(password: String) throws(SupporterNodeError) {
        guard (10...1024).contains(password.utf8.count) else {
            throw SupporterNodeError("a password has 10 to 1024 bytes", kind: .invalid)
        }
    }
}
