import SupportWire
import SupportUtilities

/// A command the registry refuses (no such code, a device is on it, …), in words a person can act on. Nothing changed.
public struct RegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely, so callers can map it (REST: 404, 409, 400).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable { case notFound = "not_found", conflict, invalid }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        public static let notFound = Kind(.notFound)
        public static let conflict = Kind(.conflict)
        public static let invalid = Kind(.invalid)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
