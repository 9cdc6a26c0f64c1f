/// A PostgreSQL operation that failed, in words a person can act on: what was being done, what went wrong, and the
/// server's SQLSTATE when it sent one (e.g. `23505` unique violation, `40001` serialization failure).
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, for callers that react to it. A struct over a private enum (the `StoreError` pattern), so
    /// kinds can be added without breaking callers.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connection, query, closed, invalidData = "invalid_data"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The server cannot be reached, or the connection broke (retry after reconnecting).
        public static let connection = Kind(.connection)
        /// The server refused a statement (see ``PostgresError/sqlState``).
        public static let query = Kind(.query)
        /// The connection was closed by its owner.
        public static let closed = Kind(.closed)
        /// A value did not have the expected form.
        public static let invalidData = Kind(.invalidData)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    /// What was being done, e.g. "connect to PostgreSQL", "insert audit event".
    public let operation: String
    /// libpq's or the server's message, first line.
    public let message: String
    /// The server's five-character SQLSTATE, when it sent one.
    public let sqlState: String?
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?

    init(
        _ kind: Kind, operation: String, message: String, sqlState: String? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.message = message
        self.sqlState = sqlState
        self.underlying = underlying
    }

    public static func == (lhs: PostgresError, rhs: PostgresError) -> Bool {
        lhs.kind == rhs.kind && lhs.operation == rhs.operation && lhs.message == rhs.message
            && lhs.sqlState == rhs.sqlState
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(operation)
        hasher.combine(message)
        hasher.combine(sqlState)
    }

    /// A unique or primary-key constraint refused a row (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The transaction must be retried (serialization failure or deadlock).
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    public var description: String {
        "\(operation): \(message)" + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }
}
