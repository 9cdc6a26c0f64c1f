import SupportSession
import SupportWire
/// Why the session refused an app's command (nothing was sent): the message says what to change.
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers.
public struct DeviceSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the command was refused, coarsely.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case sessionOver = "session_over", refused, shutDown = "shut_down"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The session is over (ended, left, or released by the app): join again for a new one.
        public static let sessionOver = Kind(.sessionOver)
        /// The session's state or the wire's limits do not allow the command (``DeviceSessionError/underlying`` is
        /// the session machine's refusal).
        public static let refused = Kind(.refused)
        /// The device node is shut down.
        public static let shutDown = Kind(.shutDown)

        public var description: String { base.rawValue }
    }

    /// Why the command was refused, coarsely.
    public let kind: Kind
    /// What was refused and what to change.
    public let message: String
    /// The error underneath, when there is one (the session machine's refusal). Not part of equality.
    public let underlying: (any Error & Sendable)?

    init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: DeviceSessionError, rhs: DeviceSessionError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
    }

    /// What was refused and what to change: the message.
    public var description: String { message }
}
