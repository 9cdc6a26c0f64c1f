/// Hashing a password failed: OpenSSL refused the parameters or ran out of memory.
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers.
public struct PasswordHashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidParameters = "invalid_parameters", openSSL = "openssl"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The scrypt parameters are out of the range this build accepts (see ``PasswordHash/Parameters``).
        public static let invalidParameters = Kind(.invalidParameters)
        /// OpenSSL's scrypt failed (most likely out of memory).
        public static let openSSL = Kind(.openSSL)

        public var description: String { base.rawValue }
    }

    /// What went wrong, coarsely.
    public var kind: Kind
    /// What happened, in words a person can act on.
    public var message: String
    /// The error underneath, when there is one. Not part of equality.
    public var underlying: (any Error & Sendable)?

    package init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: PasswordHashError, rhs: PasswordHashError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
    }

    /// The message, e.g. `scrypt failed in OpenSSL (out of memory?)`.
    public var description: String { message }
}
