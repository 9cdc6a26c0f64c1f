/// A supporter-side command or setup step that cannot be carried out, in words a person can act on.
///
/// A struct over a small kind, so new kinds can be added without breaking callers that switch on ``kind``; the error
/// underneath (a `TransportError`, a `StoreError`, a `RegistryError`) is kept in ``underlying``, not part of equality.
public struct SupporterNodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely: what a REST API answers (``notFound`` 404, ``conflict`` 409, ``busy`` 503, …).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case refused, notFound = "not_found", conflict, invalid, transport, store, forbidden, busy
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        public static let refused = Kind(.refused)
        public static let notFound = Kind(.notFound)
        public static let conflict = Kind(.conflict)
        public static let invalid = Kind(.invalid)
        public static let transport = Kind(.transport)
        public static let store = Kind(.store)
        /// The acting account may not do this (another supporter's code, an admin's task).
        public static let forbidden = Kind(.forbidden)
        /// Too much work waiting; try again shortly.
        public static let busy = Kind(.busy)

        /// The kind named `name` (``description``), as another node of a cluster sent it.
        public init?(named name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    /// What happened, for a person.
    public let message: String
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?
    /// The store refused a new code because one with that text exists (another node drew it at the same time).
    public let isDuplicateCode: Bool

    public init(_ message: String, kind: Kind = .refused) {
        self.init(message, kind: kind, underlying: nil)
    }

    /// An error with the error underneath kept; `isDuplicateCode` for a store's refusal of a code that exists.
    public init(_ message: String, kind: Kind, underlying: (any Error & Sendable)?, isDuplicateCode: Bool = false) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
        self.isDuplicateCode = isDuplicateCode
    }

    public var description: String { message }

    public static func == (lhs: SupporterNodeError, rhs: SupporterNodeError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.isDuplicateCode == rhs.isDuplicateCode
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
        hasher.combine(isDuplicateCode)
    }
}
