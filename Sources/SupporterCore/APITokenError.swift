import SupportWire
import SupportUtilities

/// Why a string cannot be an API token (see ``APITokenStore/validate(_:)``).
///
/// A struct over a small kind, so new kinds can be added without breaking callers that switch on ``kind``.
public struct APITokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the token.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case tooShort, invalidCharacter
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Shorter than ``APITokenStore/minimumTokenLength``: too easy to guess.
        public static let tooShort = Kind(.tooShort)
        /// Holds a space, a control character or a non-ASCII character (often a copy-and-paste accident).
        public static let invalidCharacter = Kind(.invalidCharacter)

        public var description: String { base.rawValue }
    }

    public var kind: Kind
    /// What is wrong and what to do, for people. Never contains the token.
    public var message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
