public import Foundation
import SupportUtilities

/// What the store knows of one API token, for listing, revoking and naming the acting token in the audit trail.
/// Never the token, nor its digest.
public struct APITokenRecord: Sendable, Hashable, Identifiable {
    /// A short public id (12 lower-case hexadecimal digits), random, unique in the store: safe to log and show.
    /// Random rather than taken from the digest, so showing it reveals nothing about the token.
    public var id: String
    public var scope: APITokenScope
    /// What the token is for, as given when it was added.
    public var label: String?
    public var createdAt: Date
    /// When it was revoked; nil while it is valid. A revoked token is never accepted again.
    public var revokedAt: Date?

    public init(id: String, scope: APITokenScope, label: String? = nil, createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.scope = scope
        self.label = label
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }

    /// A new random id: 6 random bytes in hexadecimal.
    package static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<6).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
