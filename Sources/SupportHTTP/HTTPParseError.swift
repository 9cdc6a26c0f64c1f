/// Why a request was refused, with the status to answer it with. The connection closes after that answer.
import SupportUtilities
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status to send: 400, 413, 414, 417, 431, 501 or 505.
    public let status: HTTPStatus
    /// What was wrong, in words a client developer can act on; sent in the JSON error body.
    public let message: String

    /// An error answering `status`, explained by `message`.
    public init(_ status: HTTPStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// `400: a bare LF: …`.
    public var description: String { "\(status.code): \(message)" }
}
