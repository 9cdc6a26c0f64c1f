import SupportUtilities

/// What ``HTTPRequestParser/next()`` found.
public enum HTTPParseResult: Sendable, Hashable {
    /// The bytes so far do not finish a request; append more.
    case needMoreData
    /// The head asked for `Expect: 100-continue` and the body has not started: send `100 Continue` (or a final
    /// status), then call ``HTTPRequestParser/next()`` again. Reported once per request.
    case expectContinue
    /// A complete request; call ``HTTPRequestParser/next()`` again for a pipelined one.
    case request(HTTPRequest)
    /// The request is malformed or over a limit; answer with the error's status and close. Sticky: every later
    /// call returns the same error.
    case error(HTTPParseError)
}

/// A strict, incremental HTTP/1.1 request parser: bytes in, requests out; no I/O, no clock.
///
/// Feed bytes in any chunking with ``append(_:)``, then call ``next()`` until it says ``HTTPParseResult/needMoreData``.
/// Accepted: a request line `method SP origin-form SP HTTP/1.1|HTTP/1.0` (empty lines before it are skipped, as RFC
/// 9112 §2.2 allows), field lines ending in CR LF (bare LF, bare CR and obs-fold are refused), and a body framed by
/// `Content-Length`. `Transfer-Encoding` (chunked bodies) is not supported and answers 501.
public struct HTTPRequestParser: Sendable {
    /// Size limits; each answers its own status when exceeded.
    public struct Limits: Sendable, Hashable {
        /// The request line without its CR LF; longer → 414.
        public var maxRequestLineBytes: Int
        /// The field lines with their CR LFs, without the final empty line; larger → 431.
        public var maxHeaderBytes: Int
        /// Field lines; more → 431.
        public var maxHeaderCount: Int
        /// `Content-Length`; larger → 413 (sent before the body is read).
        public var maxBodyBytes: Int
        /// Requests that may carry more than ``maxBodyBytes`` (an upload), each up to its own limit.
        public var largeBodies: [LargeBodyRoute]

        /// Limits, each defaulting to the server's.
        public init(
            maxRequestLineBytes: Int = 8 * 1024, maxHeaderBytes: Int = 16 * 1024, maxHeaderCount: Int = 100,
            maxBodyBytes: Int = 64 * 1024, largeBodies: [LargeBodyRoute] = []
        ) {
            self.maxRequestLineBytes = maxRequestLineBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxBodyBytes = maxBodyBytes
            self.largeBodies = largeBodies
        }

        /// The most body bytes a request of `method` on `path` may carry.
        public func bodyLimit(method: HTTPMethod, path: String) -> Int {
            largeBodies.first { $0.matches(method: method, path: path) }?.maxBytes ?? maxBodyBytes
        }
    }

    /// Requests whose bodies may be larger than the server's limit: `method` on a path that starts with `pathPrefix`
    /// and ends with `pathSuffix` with one path segment between (`/api/v1/sessions/` + code + `/files`), up to
    /// `maxBytes`.
    public struct LargeBodyRoute: Sendable, Hashable {
        public var method: HTTPMethod
        public var pathPrefix: String
        public var pathSuffix: String
        public var maxBytes: Int

        public init(method: HTTPMethod, pathPrefix: String, pathSuffix: String, maxBytes: Int) {
            self.method = method
            self.pathPrefix = pathPrefix
            self.pathSuffix = pathSuffix
            self.maxBytes = maxBytes
        }

        func matches(method: HTTPMethod, path: String) -> Bool {
            guard method == self.method, path.utf8.count > pathPrefix.utf8.count + pathSuffix.utf8.count,
                path.hasPrefix(pathPrefix), path.hasSuffix(pathSuffix)
            else { return false }
            let middle = path.utf8.dropFirst(pathPrefix.utf8.count).dropLast(pathSuffix.utf8.count)
            return !middle.contains(UInt8(ascii: "/"))
        }
    }

    /// How far the parser is into the current request (for the connection's timers).
    public enum Phase: Sendable, Hashable {
        /// Between requests: nothing of the next one has arrived.
        case idle
        /// Some of the request line or header section has arrived.
        case head
        /// The head is complete; the body is arriving.
        case body
    }

    private struct Head {
        var method: HTTPMethod
        var target: String
        var parts: RequestTarget.Parts
        var version: HTTPVersion
        var headers = HTTPHeaders()
        var headerBytes = 0
    }

    private enum State {
        case requestLine
        case headers(Head)
        case body(Head, length: Int, continuePending: Bool)
        case failed(HTTPParseError)
    }

    private enum Line {
        case needMore
        case line(Range<Int>)
        case failed(HTTPParseError)
    }

    /// The limits this parser enforces.
    public let limits: Limits
    private var buffer: [UInt8] = []
    /// Index of the first byte not yet consumed.
    private var start = 0
    /// Where the search for the current line's LF resumes, so each byte is scanned once.
    private var scanFrom = 0
    private var state = State.requestLine

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// A parser waiting for the first request.
    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Bytes received and not yet returned as part of a request.
    public var bufferedByteCount: Int { buffer.count - start }

    /// How far into the current request the parser is.
    /// The `Content-Length` of the body arriving now, if one is.
    public var pendingBodyLength: Int? {
        if case .body(_, let length, _) = state { length } else { nil }
    }

    public var phase: Phase {
        switch state {
        case .requestLine: bufferedByteCount == 0 ? .idle : .head
        case .headers, .failed: .head
        case .body: .body
        }
    }

    /// Adds received bytes (dropped once the parser has failed).
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if case .failed = state { return }
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes (dropped once the parser has failed).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if case .failed = state { return }
        buffer.append(contentsOf: bytes)
    }

    /// Parses as far as the bytes allow.
    public mutating func next() -> HTTPParseResult {
        let result = step()
        if case .error = result { return result }
        if start > 0 {
            buffer.removeSubrange(0..<start)
            scanFrom -= start
            start = 0
        }
        return result
    }

    private mutating func step() -> HTTPParseResult {
        while true {
            switch state {
            case .failed(let error):
                return .error(error)

            case .requestLine:
                // Empty lines before a request are skipped (RFC 9112 §2.2); a bare LF is still refused.
                while bufferedByteCount > 0, buffer[start] == Self.cr || buffer[start] == Self.lf {
                    guard buffer[start] == Self.cr else { return fail(.badRequest, "a bare LF: lines must end with CR LF") }
                    guard bufferedByteCount >= 2 else { return .needMoreData }
                    guard buffer[start + 1] == Self.lf else { return fail(.badRequest, "a bare CR in the request") }
                    start += 2
                }
                switch nextLine(limit: limits.maxRequestLineBytes) {
                case .needMore:
                    if bufferedByteCount > limits.maxRequestLineBytes + 1 { return requestLineTooLong() }
                    return .needMoreData
                case .failed(let error):
                    return fail(error)
                case .line(let range):
                    guard range.count <= limits.maxRequestLineBytes else { return requestLineTooLong() }
                    switch parseRequestLine(buffer[range]) {
                    case .failure(let error): return fail(error)
                    case .success(let head): state = .headers(head)
                    }
                }

            case .headers(var head):
                let remaining = limits.maxHeaderBytes - head.headerBytes
                switch nextLine(limit: nil) {
                case .needMore:
                    // A lone CR may be the final empty line; anything longer than the budget cannot fit.
                    let pending = bufferedByteCount
                    if pending > remaining, !(pending == 1 && buffer[start] == Self.cr) { return headersTooLarge() }
                    return .needMoreData
                case .failed(let error):
                    return fail(error)
                case .line(let range):
                    if range.isEmpty {
                        if let result = finishHead(head) { return result }
                        continue
                    }
                    guard range.count + 2 <= remaining else { return headersTooLarge() }
                    head.headerBytes += range.count + 2
                    switch parseField(buffer[range]) {
                    case .failure(let error): return fail(error)
                    case .success(let field): head.headers.add(name: field.name, value: field.value)
                    }
                    guard head.headers.count <= limits.maxHeaderCount else {
                        return fail(
                            .requestHeaderFieldsTooLarge,
                            "more than \(limits.maxHeaderCount) header fields")
                    }
                    state = .headers(head)
                }

            case .body(let head, let length, let continuePending):
                if continuePending, bufferedByteCount == 0 {
                    state = .body(head, length: length, continuePending: false)
                    return .expectContinue
                }
                guard bufferedByteCount >= length else { return .needMoreData }
                let body = Array(buffer[start..<(start + length)])
                start += length
                state = .requestLine
                return .request(makeRequest(head, body: body))
            }
        }
    }

    /// The next CR LF-terminated line (without the CR LF), consuming it.
    private mutating func nextLine(limit: Int?) -> Line {
        scanFrom = max(scanFrom, start)
        guard let lf = buffer[scanFrom...].firstIndex(of: Self.lf) else {
            scanFrom = buffer.count
            return .needMore
        }
        guard lf > start, buffer[lf - 1] == Self.cr else {
            return .failed(HTTPParseError(.badRequest, "a bare LF: lines must end with CR LF"))
        }
        let range = start..<(lf - 1)
        start = lf + 1
        scanFrom = start
        return .line(range)
    }

    private func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<Head, HTTPParseError> {
        let space = UInt8(ascii: " ")
        guard let firstSpace = line.firstIndex(of: space),
            let secondSpace = line[(firstSpace + 1)...].firstIndex(of: space)
        else { return .failure(HTTPParseError(.badRequest, "the request line is not 'method target version'")) }
        let method = line[line.startIndex..<firstSpace]
        let target = line[(firstSpace + 1)..<secondSpace]
        let version = line[(secondSpace + 1)...]
        guard !method.isEmpty, method.allSatisfy(Self.isTokenByte) else {
            return .failure(HTTPParseError(.badRequest, "the method is not a token"))
        }
        let parsedVersion: HTTPVersion
        if version.elementsEqual("HTTP/1.1".utf8) {
            parsedVersion = .http1_1
        } else if version.elementsEqual("HTTP/1.0".utf8) {
            parsedVersion = .http1_0
        } else if version.count == 8, version.starts(with: "HTTP/".utf8),
            Self.isDigit(version[version.startIndex + 5]), version[version.startIndex + 6] == UInt8(ascii: "."),
            Self.isDigit(version[version.startIndex + 7])
        {
            return .failure(HTTPParseError(.httpVersionNotSupported, "only HTTP/1.1 and HTTP/1.0 are supported"))
        } else {
            return .failure(HTTPParseError(.badRequest, "the request line ends in an invalid HTTP version"))
        }
        switch RequestTarget.parse(target) {
        case .failure(let error):
            return .failure(error)
        case .success(let parts):
            return .success(
                Head(
                    method: HTTPMethod(rawValue: String(decoding: method, as: UTF8.self)),
                    target: String(decoding: target, as: UTF8.self), parts: parts, version: parsedVersion))
        }
    }

    private func parseField(_ line: ArraySlice<UInt8>) -> Result<HTTPHeaders.Field, HTTPParseError> {
        guard let first = line.first, first != 0x20, first != 0x09 else {
            return .failure(HTTPParseError(.badRequest, "obsolete line folding (a field line starting with whitespace) is not accepted"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(HTTPParseError(.badRequest, "a header line has no ':'"))
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else {
            return .failure(HTTPParseError(.badRequest, "a header field name is not a token (no whitespace before ':')"))
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) else {
            return .failure(HTTPParseError(.badRequest, "a header field value holds a control character"))
        }
        return .success(
            HTTPHeaders.Field(
                name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }

    /// Checks the head as a whole; returns a result to hand out, or nil to continue with the body.
    private mutating func finishHead(_ head: Head) -> HTTPParseResult? {
        let hosts = head.headers.values(for: "Host")
        if head.version == .http1_1, hosts.isEmpty { return fail(.badRequest, "an HTTP/1.1 request needs a Host header") }
        if hosts.count > 1 { return fail(.badRequest, "more than one Host header") }
        if head.headers.contains("Transfer-Encoding") {
            return fail(
                .notImplemented,
                "Transfer-Encoding (chunked bodies) is not supported; send the body with Content-Length")
        }
        var length = 0
        let lengths = head.headers.values(for: "Content-Length")
        if !lengths.isEmpty {
            var seen: Int?
            for value in lengths {
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let digits = item.trimmingASCIIWhitespace()
                    guard !digits.isEmpty, digits.utf8.allSatisfy(Self.isDigit) else {
                        return fail(.badRequest, "Content-Length must be digits only")
                    }
                    // Digits only, so the one failure is overflow: a length no limit could allow.
                    guard let parsed = Int(digits) else { return bodyTooLarge(limits.maxBodyBytes) }
                    guard seen == nil || seen == parsed else {
                        return fail(.badRequest, "conflicting Content-Length values")
                    }
                    seen = parsed
                }
            }
            length = seen ?? 0
        }
        let allowed = limits.bodyLimit(method: head.method, path: head.parts.path)
        guard length <= allowed else { return bodyTooLarge(allowed) }
        var continuePending = false
        if head.version == .http1_1, let expect = head.headers["Expect"] {
            // RFC 9110 §10.1.1: an HTTP/1.0 request's expectation is ignored.
            guard expect.lowercasedASCII() == "100-continue" else {
                return fail(.expectationFailed, "only 'Expect: 100-continue' is supported")
            }
            continuePending = length > 0
        }
        if length == 0 {
            state = .requestLine
            return .request(makeRequest(head, body: []))
        }
        state = .body(head, length: length, continuePending: continuePending)
        return nil
    }

    private func makeRequest(_ head: Head, body: [UInt8]) -> HTTPRequest {
        let connection = head.headers.tokens(for: "Connection")
        let keepAlive =
            head.version == .http1_1 ? !connection.contains("close") : connection.contains("keep-alive")
        return HTTPRequest(
            method: head.method, target: head.target, path: head.parts.path, pathSegments: head.parts.segments,
            queryItems: head.parts.queryItems, version: head.version, headers: head.headers, body: body,
            keepAlive: keepAlive)
    }

    private mutating func requestLineTooLong() -> HTTPParseResult {
        fail(.uriTooLong, "the request line is longer than \(limits.maxRequestLineBytes) bytes")
    }

    private mutating func headersTooLarge() -> HTTPParseResult {
        fail(.requestHeaderFieldsTooLarge, "the header section is larger than \(limits.maxHeaderBytes) bytes")
    }

    private mutating func bodyTooLarge(_ allowed: Int) -> HTTPParseResult {
        fail(.contentTooLarge, "the body is larger than \(allowed) bytes")
    }

    private mutating func fail(_ status: HTTPStatus, _ message: String) -> HTTPParseResult {
        fail(HTTPParseError(status, message))
    }

    private mutating func fail(_ error: HTTPParseError) -> HTTPParseResult {
        state = .failed(error)
        buffer = []
        start = 0
        scanFrom = 0
        return .error(error)
    }

    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// RFC 9110 tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
