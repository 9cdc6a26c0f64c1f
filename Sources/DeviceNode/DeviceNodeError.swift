import SupportRuntime
import SupportSession
import SupportWire
/// Why the device node refused a request at once, without contacting the supporter node.
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers.
public struct DeviceNodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case alreadyJoined = "already_joined", invalidSessionCode = "invalid_session_code"
            case invalidConfiguration = "invalid_configuration", unavailable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A code is already joined: leave it first.
        public static let alreadyJoined = Kind(.alreadyJoined)
        /// The code is empty or longer than 64 bytes.
        public static let invalidSessionCode = Kind(.invalidSessionCode)
        /// The configuration cannot work.
        public static let invalidConfiguration = Kind(.invalidConfiguration)
        /// The system refused what the SDK needs to run (a thread, a descriptor); try again later.
        public static let unavailable = Kind(.unavailable)

        /// The kind's name in logs, e.g. `already_joined`.
        public var description: String { base.rawValue }
    }

    /// What was wrong.
    public let kind: Kind
    /// What to change.
    public let message: String
    /// The error underneath, when there is one (a certificate file the TLS layer could not use, …). Not part of
    /// equality.
    public let underlying: (any Error & Sendable)?

    init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: DeviceNodeError, rhs: DeviceNodeError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
    }

    /// What to change: the message.
    public var description: String { message }
}
