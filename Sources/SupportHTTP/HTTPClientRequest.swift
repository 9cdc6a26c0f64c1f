/// An outbound HTTP/1.1 request, as ``HTTPClient`` sends it: one request per connection, closed after the answer.
package struct HTTPClientRequest: Sendable {
    /// The method, a token (`POST`).
    package var method: String
    /// The request target as it goes on the wire: path and query, already percent-encoded (`/hooks/42?x=1`).
    package var target: String
    /// The `Host` header's value: the receiver's name, with its port when it is not the scheme's default.
    package var host: String
    /// Further header fields, in order. `Host`, `Content-Length`, `Transfer-Encoding` and `Connection` are the
    /// client's own and refused here.
    package var headers: [(name: String, value: String)]
    /// The content, sent with `Content-Length`.
    package var body: [UInt8]

    package init(
        method: String = "POST", target: String, host: String, headers: [(name: String, value: String)] = [],
        body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        self.host = host
        self.headers = headers
        self.body = body
    }

    /// The request as HTTP/1.1 bytes: the request line, `Host`, the caller's header fields, `Content-Length` (left out
    /// only for a GET or HEAD without content, RFC 9110 §8.6), `Connection: close`, an empty line and the body.
    ///
    /// - Throws: ``HTTPClientError/Kind/invalidRequest`` for a method that is not a token, a target or host that is
    ///   empty or holds a space, control or non-ASCII byte, a header name that is not a token or is one the client
    ///   sets, and a header value holding CR, LF or NUL (which would split or cut the request).
    package func serialized() throws(HTTPClientError) -> [UInt8] {
        guard !method.isEmpty, method.utf8.allSatisfy(HTTPRequestParser.isTokenByte) else {
            throw Self.invalid("the method '\(method)' is not an HTTP token")
        }
        guard !target.isEmpty, target.utf8.allSatisfy(Self.isVisibleASCII) else {
            throw Self.invalid("the target must be a non-empty, percent-encoded path without spaces or control bytes")
        }
        guard !host.isEmpty, host.utf8.allSatisfy(Self.isVisibleASCII) else {
            throw Self.invalid("the Host value must be a non-empty name or address without spaces or control bytes")
        }
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(HTTPRequestParser.isTokenByte) else {
                throw Self.invalid("the header name '\(name)' is not an HTTP token")
            }
            guard !Self.ownHeaders.contains(name.lowercasedASCII()) else {
                throw Self.invalid("the header '\(name)' is set by the client itself")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw Self.invalid("the value of the header '\(name)' holds CR, LF or NUL, which would split the request")
            }
        }
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || (method != "GET" && method != "HEAD") { text += "Content-Length: \(body.count)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8) + body
    }

    /// Header fields the client writes itself (lower case).
    private static let ownHeaders: Set<String> = ["host", "content-length", "transfer-encoding", "connection"]

    private static func isVisibleASCII(_ byte: UInt8) -> Bool { (0x21...0x7E).contains(byte) }

    private static func invalid(_ message: String) -> HTTPClientError { HTTPClientError(.invalidRequest, message) }
}
