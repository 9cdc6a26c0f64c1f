extension MessageChannel {
    /// A send the channel refused; nothing was queued.
    ///
    /// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers;
    /// ``message`` says what to do instead.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// Why the command was refused, coarsely.
        public struct Kind: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable {
                case denied, invalidArgument = "invalid_argument", limitReached = "limit_reached"
            }
            private let base: Base
            private init(_ base: Base) { self.base = base }

            /// The feature the message's kind needs is not granted.
            public static let denied = Kind(.denied)
            /// The message would not encode within the wire's limits (a text, a content type, a file name or size).
            public static let invalidArgument = Kind(.invalidArgument)
            /// A limit is reached: the queue is full, files are already being sent, or message ids are used up.
            public static let limitReached = Kind(.limitReached)

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

        public static func == (lhs: Refusal, rhs: Refusal) -> Bool { lhs.kind == rhs.kind && lhs.message == rhs.message }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(kind)
            hasher.combine(message)
        }

        /// The message.
        public var description: String { message }
    }
}
