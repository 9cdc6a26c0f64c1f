public import SupportHTTP
import SupportUtilities
public import SupporterModel

/// A request the REST API refuses: the status, a message a person can act on, and what the answer's headers need
/// (`Retry-After` for 429, `Allow` for 405, `WWW-Authenticate` for 401). Nothing was changed.
///
/// A struct over a small kind, like `StoreError`, so new kinds can be added without breaking callers.
public struct RESTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely; each kind has one HTTP status.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case badRequest = "bad_request", unauthorized, forbidden, notFound = "not_found"
            case methodNotAllowed = "method_not_allowed", conflict, gone, unprocessable
            case tooManyRequests = "too_many_requests", unavailable, internalError = "internal_error"
            case duplicateHeader = "duplicate_header"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 400: the body is not a JSON object, or a query parameter is malformed.
        public static let badRequest = Kind(.badRequest)
        /// 400: a header field that must appear at most once (``BrowserSecurity/singleFields``) appears more than once;
        /// ``RESTError/header`` names it. The body's `code` stays `bad_request` (one word per status).
        public static let duplicateHeader = Kind(.duplicateHeader)
        /// 401: no bearer token, or an unknown one.
        public static let unauthorized = Kind(.unauthorized)
        /// 403: a valid token that may not use the API (a device token).
        public static let forbidden = Kind(.forbidden)
        /// 404: no such resource or session code.
        public static let notFound = Kind(.notFound)
        /// 405: the path has no such method.
        public static let methodNotAllowed = Kind(.methodNotAllowed)
        /// 409: the change conflicts with the code's state.
        public static let conflict = Kind(.conflict)
        /// It existed and is no longer kept (a file past its retention).
        public static let gone = Kind(.gone)
        /// 422: a JSON object the request schema does not allow.
        public static let unprocessable = Kind(.unprocessable)
        /// 429: too many unknown tokens from this client address.
        public static let tooManyRequests = Kind(.tooManyRequests)
        /// 503: the node is shutting down.
        public static let unavailable = Kind(.unavailable)
        /// 500: the node failed (its store, most likely).
        public static let internalError = Kind(.internalError)

        /// The HTTP status of this kind.
        public var status: HTTPStatus {
            switch base {
            case .badRequest, .duplicateHeader: .badRequest
            case .unauthorized: .unauthorized
            case .forbidden: .forbidden
            case .notFound: .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .conflict: .conflict
            case .gone: .gone
            case .unprocessable: .unprocessableContent
            case .tooManyRequests: .tooManyRequests
            case .unavailable: .serviceUnavailable
            case .internalError: .internalServerError
            }
        }

        public var description: String { base.rawValue }
    }

    /// What went wrong, coarsely.
    public var kind: Kind
    /// What to tell the client; names the member or parameter at fault.
    public var message: String
    /// For ``Kind/tooManyRequests``: how long the client must wait.
    public var retryAfter: Duration?
    /// For ``Kind/methodNotAllowed``: the methods the path has, e.g. `GET, POST`.
    public var allowedMethods: String?
    /// For ``Kind/duplicateHeader``: the header field sent more than once, as this API spells it (`Origin`).
    public var header: String?
    /// How long the connection holds the answer before writing it (``HTTPResponse/delay``): a refused sign-in's 429
    /// is held 1 s, so that a flood costs the node one cheap answer per second per connection.
    public var delay: Duration?
    /// The error underneath, when there is one (the node's error a refusal was made from). Not part of equality, and
    /// never shown to the client.
    public var underlying: (any Error & Sendable)?

    public init(
        _ kind: Kind, _ message: String, retryAfter: Duration? = nil, allowedMethods: String? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = kind
        self.message = message
        self.retryAfter = retryAfter
        self.allowedMethods = allowedMethods
        self.underlying = underlying
    }

    public static func == (lhs: RESTError, rhs: RESTError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.retryAfter == rhs.retryAfter
            && lhs.allowedMethods == rhs.allowedMethods && lhs.header == rhs.header && lhs.delay == rhs.delay
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
        hasher.combine(retryAfter)
        hasher.combine(allowedMethods)
        hasher.combine(header)
        hasher.combine(delay)
    }

    /// 400 ``Kind/duplicateHeader`` for `name`.
    static func duplicateHeader(_ name: String) -> RESTError {
        var error = RESTError(
            .duplicateHeader, "the request has more than one \(name) header; send it once (a proxy may read another)")
        error.header = name
        return error
    }

    /// 422 with `message`.
    static func unprocessable(_ message: String) -> RESTError { RESTError(.unprocessable, message) }

    /// The node's refusal as the API shows it: 404, 409, 422, else 500.
    public init(_ error: SupporterNodeError) {
        switch error.kind {
        case .notFound: self.init(.notFound, error.description, underlying: error)
        case .conflict: self.init(.conflict, error.description, underlying: error)
        case .invalid: self.init(.unprocessable, error.description, underlying: error)
        case .forbidden: self.init(.forbidden, error.description, underlying: error)
        case .busy: self.init(.unavailable, error.description, retryAfter: .seconds(1), underlying: error)
        default: self.init(.internalError, error.description, underlying: error)
        }
    }

    /// `error` as the API answers it: a ``RESTError`` as it is, a node's error by its kind, anything else a 500.
    init(any error: any Error) {
        switch error {
        case let error as RESTError: self = error
        case let error as SupporterNodeError: self.init(error)
        default: self.init(.internalError, "\(error)")
        }
    }

    /// The answer: the error body of protocol/openapi.yaml and the headers this kind needs.
    public var response: HTTPResponse {
        var response = HTTPResponse.api(
            kind.status, encoding: APIErrorBody(status: kind.status.code, code: kind.status.errorCode, message: message))
        if kind == .unauthorized { response.headers.replaceOrAdd(name: "WWW-Authenticate", value: #"Bearer realm="rsup""#) }
        if let retryAfter { response.headers.replaceOrAdd(name: "Retry-After", value: "\(Self.seconds(retryAfter))") }
        if let allowedMethods { response.headers.replaceOrAdd(name: "Allow", value: allowedMethods) }
        response.delay = delay
        return response
    }

    /// Whole seconds to wait, rounded up, at least 1 (`Retry-After` has no fractions).
    static func seconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds + (attoseconds > 0 ? 1 : 0))
    }

    public var description: String { "\(kind.status.code) \(kind): \(message)" }
}
