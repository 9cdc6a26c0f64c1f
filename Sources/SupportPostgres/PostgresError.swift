/// A PostgreSQL operation that failed, in words a person can act on: what was being done, what went wrong, and the
/// server's SQLSTATE when it sent one (e.g. `23505` unique violation, `40001` serialization failure).
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    fileprivate enum Base: Sendable, Hashable {
        case connection, query, closed, invalidData
    }

    /// The kind of failure, for callers that react to it.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate let base: Base
        /// The server cannot be reached, or the connection broke (retry after reconnecting).
        public static let connection = Kind(base: .connection)
        /// The server refused a statement (see ``PostgresError/sqlState``).
        public static let query = Kind(base: .query)
        /// The connection was closed by its owner.
        public static let closed = Kind(base: .closed)
        /// A value did not have the expected form.
        public static let invalidData = Kind(base: .invalidData)

        public var description: String {
            switch base {
            case .connection: "connection"
            case .query: "query"
            case .closed: "closed"
            case .invalidData: "invalid_data"
            }
        }
    }

    public let kind: Kind
    /// What was being done, e.g. "connect to PostgreSQL", "insert audit event".
    public let operation: String
    /// libpq's or the server's message, first line.
    public let message: String
    /// The server's five-character SQLSTATE, when it sent one.
    public let sqlState: String?

    init(_ kind: Kind, operation: String, message: String, sqlState: String? = nil) {
        self.kind = kind
        self.operation = operation
        self.message = message
        self.sqlState = sqlState
    }

    /// A unique or primary-key constraint refused a row (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The transaction must be retried (serialization failure or deadlock).
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    public var description: String {
        "\(operation): \(message)" + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }
}
