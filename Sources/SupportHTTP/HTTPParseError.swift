/// Why a request was refused, with the status to answer it with. The connection closes after that answer.
///
/// A struct over a small kind (the `StoreError` pattern), so new kinds can be added without breaking callers; each
/// kind has one status.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong with the request, coarsely; each kind is answered with one status.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case badRequest = "bad_request", contentTooLarge = "content_too_large", uriTooLong = "uri_too_long"
            case expectationFailed = "expectation_failed"
            case requestHeaderFieldsTooLarge = "request_header_fields_too_large"
            case notImplemented = "not_implemented", httpVersionNotSupported = "http_version_not_supported"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 400: the request breaks HTTP/1.1's syntax (a bare LF, no Host, conflicting Content-Length, …).
        public static let badRequest = Kind(.badRequest)
        /// 413: the body is larger than the server's limit.
        public static let contentTooLarge = Kind(.contentTooLarge)
        /// 414: the request line is longer than the server's limit.
        public static let uriTooLong = Kind(.uriTooLong)
        /// 417: an `Expect` other than `100-continue`.
        public static let expectationFailed = Kind(.expectationFailed)
        /// 431: the header section is larger than the server's limit.
        public static let requestHeaderFieldsTooLarge = Kind(.requestHeaderFieldsTooLarge)
        /// 501: a transfer coding the server does not implement.
        public static let notImplemented = Kind(.notImplemented)
        /// 505: an HTTP version other than 1.1 and 1.0.
        public static let httpVersionNotSupported = Kind(.httpVersionNotSupported)

        /// The kind a refusal with `status` has; a status outside the parser's set counts as ``badRequest``.
        init(status: HTTPStatus) {
            switch status.code {
            case 413: self.init(.contentTooLarge)
            case 414: self.init(.uriTooLong)
            case 417: self.init(.expectationFailed)
            case 431: self.init(.requestHeaderFieldsTooLarge)
            case 501: self.init(.notImplemented)
            case 505: self.init(.httpVersionNotSupported)
            default: self.init(.badRequest)
            }
        }

        /// The status this kind is answered with.
        public var status: HTTPStatus {
            switch base {
            case .badRequest: .badRequest
            case .contentTooLarge: .contentTooLarge
            case .uriTooLong: .uriTooLong
            case .expectationFailed: .expectationFailed
            case .requestHeaderFieldsTooLarge: .requestHeaderFieldsTooLarge
            case .notImplemented: .notImplemented
            case .httpVersionNotSupported: .httpVersionNotSupported
            }
        }

        public var description: String { base.rawValue }
    }

    /// The status to send: 400, 413, 414, 417, 431, 501 or 505.
    public let status: HTTPStatus
    /// What was wrong, in words a client developer can act on; sent in the JSON error body.
    public let message: String
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?

    /// What was wrong, coarsely: the kind of ``status``.
    public var kind: Kind { Kind(status: status) }

    /// An error answering `status`, explained by `message`.
    public init(_ status: HTTPStatus, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.status = status
        self.message = message
        self.underlying = underlying
    }

    /// An error of `kind`, answered with its status, explained by `message`. (Labelled: the kinds share their names
    /// with the statuses.)
    public init(kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.init(kind.status, message, underlying: underlying)
    }

    public static func == (lhs: HTTPParseError, rhs: HTTPParseError) -> Bool {
        lhs.status == rhs.status && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(message)
    }

    /// `400: a bare LF: …`.
    public var description: String { "\(status.code): \(message)" }
}
