/// A command a session machine or its message channel refused in its current state; nothing was sent or queued.
/// The supporter's and the device's machines and the message channel share it (`Refusal` in each).
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers;
/// ``message`` says what to do instead.
public struct SessionRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the command was refused, coarsely.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case wrongState = "wrong_state", reconnecting, denied, invalidArgument = "invalid_argument"
            case limitReached = "limit_reached", full
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The current state does not allow the command (no code online, a request already pending, no session).
        public static let wrongState = Kind(.wrongState)
        /// The link is being re-established (SPEC §15.5): try again shortly.
        public static let reconnecting = Kind(.reconnecting)
        /// A rule denies the feature, or the feature the command needs is not granted.
        public static let denied = Kind(.denied)
        /// A value would not encode within the wire's limits (a text, a name, a descriptor).
        public static let invalidArgument = Kind(.invalidArgument)
        /// A limit is reached: a queue is full, or the ids of this connection or session are used up.
        public static let limitReached = Kind(.limitReached)
        /// A window or queue that drains as the peer acknowledges is full for now: the same command may succeed
        /// shortly (16 messages unacknowledged, 4 files being sent, 64 messages queued).
        public static let full = Kind(.full)

        public var description: String { base.rawValue }
    }

    /// Why the command was refused, coarsely.
    public let kind: Kind
    /// What was refused and what to do instead, e.g. `a request is already pending for this code`.
    public let message: String
    /// The error underneath, when there is one (the channel's refusal of a message). Not part of equality.
    public let underlying: (any Error & Sendable)?

    init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: SessionRefusal, rhs: SessionRefusal) -> Bool { lhs.kind == rhs.kind && lhs.message == rhs.message }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
    }

    /// The message.
    public var description: String { message }
}
