public import Foundation
import SupportUtilities

/// A response: status, header fields and a body held whole in memory (the REST API's answers are small).
public struct HTTPResponse: Sendable, Hashable {
    /// The status code and reason phrase.
    public var status: HTTPStatus
    /// Fields to send. `Content-Length`, `Date`, `Connection` and `Transfer-Encoding` are the server's own and are
    /// replaced when serialized (a handler may still ask to close with `Connection: close`); fields whose name is not a
    /// token or whose value holds CR, LF or another control character are dropped, so no handler can split a response.
    public var headers: HTTPHeaders
    /// The body; dropped for HEAD requests and for 1xx, 204 and 304.
    public var body: [UInt8]
    /// A body written over time instead of ``body`` (Server-Sent Events): sent without `Content-Length`, and the
    /// connection closes when the stream finishes.
    public var stream: HTTPBodyStream?

    /// How long the connection holds this answer before writing it (a tarpit for refusals such as 429: a client that
    /// hammers gets one answer per delay per connection, and costs the server next to nothing meanwhile). While held,
    /// nothing more is read as a request and the connection counts as idle for the fair shares of
    /// ``HTTPServerConfiguration/maxConnections`` (a newcomer may evict it). Nil or zero: written at once.
    public var delay: Duration?

    /// A response from its parts.
    public init(
        status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], stream: HTTPBodyStream? = nil,
        delay: Duration? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.stream = stream
        self.delay = delay
    }

    /// A JSON response from Foundation property-list values (`[String: Any]`, `[Any]`, `String`, numbers, `Bool`,
    /// `NSNull`), serialized by `JSONSerialization` with sorted keys, so equal objects give equal bytes.
    ///
    /// An object `JSONSerialization` cannot encode yields a 500 with a JSON error body instead (never a crash).
    public static func json(_ status: HTTPStatus, _ object: Any, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else {
            return .error(.internalServerError, message: "the server built a response that is not valid JSON")
        }
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: Array(data))
    }

    /// A JSON response from an `Encodable` value, encoded by `JSONEncoder` with sorted keys; a 500 if encoding fails.
    public static func json(_ status: HTTPStatus, encoding value: some Encodable, headers: HTTPHeaders = HTTPHeaders())
        -> HTTPResponse
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return .error(.internalServerError, message: "the server could not encode its response as JSON")
        }
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: Array(data))
    }

    /// The server's error shape: `{"error": {"code": "bad_request", "message": "…", "status": 400}}`; `code` is a
    /// word for programs (``HTTPStatus/errorCode`` unless given).
    public static func error(_ status: HTTPStatus, message: String, code: String? = nil) -> HTTPResponse {
        json(status, encoding: ErrorBody(error: .init(status: status.code, code: code ?? status.errorCode, message: message)))
    }

    /// The error shape's body.
    private struct ErrorBody: Encodable {
        struct Detail: Encodable {
            let status: Int
            let code: String
            let message: String
        }
        let error: Detail
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ status: HTTPStatus, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// Whether the handler asked to close the connection after this response (`Connection: close`).
    public var requestsClose: Bool { headers.tokens(for: "Connection").contains("close") }

    /// The bytes on the wire: status line (always `HTTP/1.1`), the fields, `Date`, `Content-Length` (except for
    /// 1xx, 204 and 304, which carry no body), and `Connection: close` when `keepAlive` is false
    /// (`Connection: keep-alive` for a kept HTTP/1.0 connection). `includeBody: false` answers a HEAD request.
    public func serialized(
        keepAlive: Bool, version: HTTPVersion = .http1_1, includeBody: Bool = true, date: Date = Date()
    ) -> [UInt8] {
        var head = "HTTP/1.1 \(status.code) \(Self.sanitizedReason(status.reasonPhrase))\r\n"
        for field in headers where Self.isSendable(field) {
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "Date: \(Self.imfFixdate(date))\r\n"
        if status.allowsBody, stream == nil { head += "Content-Length: \(body.count)\r\n" }
        if !keepAlive {
            head += "Connection: close\r\n"
        } else if version == .http1_0 {
            head += "Connection: keep-alive\r\n"
        }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if includeBody, status.allowsBody { bytes += body }
        return bytes
    }

    private static let reserved = ["content-length", "date", "connection", "transfer-encoding"]

    private static func isSendable(_ field: HTTPHeaders.Field) -> Bool {
        !field.name.isEmpty && field.name.utf8.allSatisfy(HTTPRequestParser.isTokenByte)
            && !reserved.contains(field.name.lowercasedASCII())
            && field.value.utf8.allSatisfy { $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }
    }

    private static func sanitizedReason(_ reason: String) -> String {
        String(decoding: reason.utf8.filter { $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }, as: UTF8.self)
    }

    /// RFC 9110 §5.6.7 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func imfFixdate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
