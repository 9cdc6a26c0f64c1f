import SupportUtilities

/// An HTTP request method: any RFC 9110 token; the common ones are named.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method exactly as sent (methods are case-sensitive).
    public let rawValue: String
    /// A method from its token (not validated here; the parser accepts only tokens).
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The method token.
    public var description: String { rawValue }

    /// `GET`.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`.
    public static let options = HTTPMethod(rawValue: "OPTIONS")
}

/// The protocol versions this server speaks.
public enum HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    /// HTTP/1.0: the connection closes after each response unless the request says `Connection: keep-alive`.
    case http1_0
    /// HTTP/1.1: the connection stays open unless either side says `Connection: close`.
    case http1_1

    /// `HTTP/1.0` or `HTTP/1.1`.
    public var description: String {
        switch self {
        case .http1_0: "HTTP/1.0"
        case .http1_1: "HTTP/1.1"
        }
    }
}

/// A status code with its reason phrase.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The three-digit code.
    public let code: Int
    /// The reason phrase sent after the code (informational only; clients ignore it).
    public let reasonPhrase: String

    /// A status with an explicit reason phrase.
    public init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    /// A status with the standard reason phrase for `code` (or "Unknown").
    public init(code: Int) {
        self.code = code
        self.reasonPhrase = HTTPStatus.standardReasons[code] ?? "Unknown"
    }

    /// `404` reads as ``HTTPStatus/init(code:)``.
    public init(integerLiteral value: Int) { self.init(code: value) }

    /// `404 Not Found`.
    public var description: String { "\(code) \(reasonPhrase)" }

    /// Whether a response with this status may carry a body (not 1xx, 204 or 304).
    /// A snake_case word for the status, used as the `code` of JSON error bodies.
    public var errorCode: String {
        switch code {
        case 400: "bad_request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 408: "request_timeout"
        case 409: "conflict"
        case 410: "gone"
        case 411: "length_required"
        case 413: "payload_too_large"
        case 414: "uri_too_long"
        case 415: "unsupported_media_type"
        case 417: "expectation_failed"
        case 422: "unprocessable"
        case 429: "too_many_requests"
        case 431: "header_fields_too_large"
        case 501: "not_implemented"
        case 503: "service_unavailable"
        case 505: "http_version_not_supported"
        default: code >= 500 ? "internal_error" : "error"
        }
    }

    public var allowsBody: Bool { !(100..<200).contains(code) && code != 204 && code != 304 }

    /// 100.
    public static let `continue` = HTTPStatus(code: 100)
    /// 200.
    public static let ok = HTTPStatus(code: 200)
    /// 201.
    public static let created = HTTPStatus(code: 201)
    /// 202.
    public static let accepted = HTTPStatus(code: 202)
    /// 204.
    public static let noContent = HTTPStatus(code: 204)
    /// 400.
    public static let badRequest = HTTPStatus(code: 400)
    /// 401.
    public static let unauthorized = HTTPStatus(code: 401)
    /// 403.
    public static let forbidden = HTTPStatus(code: 403)
    /// 404.
    public static let notFound = HTTPStatus(code: 404)
    /// 405.
    public static let methodNotAllowed = HTTPStatus(code: 405)
    /// 408.
    public static let requestTimeout = HTTPStatus(code: 408)
    /// 409.
    public static let conflict = HTTPStatus(code: 409)
    /// 410.
    public static let gone = HTTPStatus(code: 410)
    /// 413.
    public static let contentTooLarge = HTTPStatus(code: 413)
    /// 414.
    public static let uriTooLong = HTTPStatus(code: 414)
    /// 415.
    public static let unsupportedMediaType = HTTPStatus(code: 415)
    /// 417.
    public static let expectationFailed = HTTPStatus(code: 417)
    /// 422.
    public static let unprocessableContent = HTTPStatus(code: 422)
    /// 429.
    public static let tooManyRequests = HTTPStatus(code: 429)
    /// 431.
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431)
    /// 500.
    public static let internalServerError = HTTPStatus(code: 500)
    /// 501.
    public static let notImplemented = HTTPStatus(code: 501)
    /// 503.
    public static let serviceUnavailable = HTTPStatus(code: 503)
    /// 505.
    public static let httpVersionNotSupported = HTTPStatus(code: 505)

    static let standardReasons: [Int: String] = [
        100: "Continue", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 301: "Moved Permanently",
        302: "Found", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
        404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict",
        410: "Gone", 411: "Length Required", 413: "Content Too Large", 414: "URI Too Long",
        415: "Unsupported Media Type", 417: "Expectation Failed", 422: "Unprocessable Content",
        429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
        501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
        505: "HTTP Version Not Supported",
    ]
}

/// Header fields in the order received (or added); names compare case-insensitively, as RFC 9110 says.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field line.
    public struct Field: Sendable, Hashable {
        /// The name as sent.
        public var name: String
        /// The value, without leading or trailing whitespace.
        public var value: String
        /// A field (validated only when a response is serialized).
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field] = []

    /// No fields.
    public init() {}
    /// Fields in the given order (names may repeat).
    public init(_ fields: [(String, String)]) { self.fields = fields.map { Field(name: $0.0, value: $0.1) } }
    /// `["Content-Type": "text/plain"]`; order kept.
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Field lines, repeats counted.
    public var count: Int { fields.count }
    /// Whether there is no field.
    public var isEmpty: Bool { fields.isEmpty }
    /// The fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The first value of the field `name` (any case), or nil.
    public subscript(name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Every value of the field `name` (any case), in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// Whether a field `name` (any case) is present.
    public func contains(_ name: String) -> Bool { fields.contains { Self.namesEqual($0.name, name) } }

    /// The comma-separated tokens of every `name` field, lowercased and trimmed (for `Connection`, …).
    public func tokens(for name: String) -> [String] {
        values(for: name).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingASCIIWhitespace().lowercasedASCII()
        }.filter { !$0.isEmpty }
    }

    /// Appends a field (keeps existing ones of the same name).
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Removes every `name` field, then appends one.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every `name` field.
    public mutating func remove(name: String) { fields.removeAll { Self.namesEqual($0.name, name) } }

    static func namesEqual(_ lhs: String, _ rhs: String) -> Bool {
        let a = lhs.utf8
        let b = rhs.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { asciiLower($0) == asciiLower($1) }
    }
}

@inline(__always) func asciiLower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

extension StringProtocol {
    func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        var lower = 0
        var upper = bytes.count
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return String(decoding: bytes[lower..<upper], as: UTF8.self)
    }

    func lowercasedASCII() -> String { String(decoding: utf8.map(asciiLower), as: UTF8.self) }
}
