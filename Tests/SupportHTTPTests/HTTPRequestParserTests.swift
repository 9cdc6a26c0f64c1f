import Testing
import TestSupport
@testable import SupportHTTP
import SupportRuntime

/// Feeds `bytes` in the given chunk sizes (the rest in one chunk), calling `next()` after each until it needs more.
func parse(_ bytes: [UInt8], chunks: [Int]? = nil, limits: HTTPRequestParser.Limits = .init()) -> [HTTPParseResult] {
    var parser = HTTPRequestParser(limits: limits)
    var results: [HTTPParseResult] = []
    var offset = 0
    var sizes = chunks ?? [bytes.count]
    while offset < bytes.count {
        let size = sizes.isEmpty ? bytes.count - offset : min(sizes.removeFirst(), bytes.count - offset)
        parser.append(bytes[offset..<(offset + size)])
        offset += size
        while true {
            let result = parser.next()
            if case .needMoreData = result { break }
            results.append(result)
            if case .error = result { return results }
        }
    }
    return results
}

func parse(_ text: String, chunks: [Int]? = nil, limits: HTTPRequestParser.Limits = .init()) -> [HTTPParseResult] {
    parse(Array(text.utf8), chunks: chunks, limits: limits)
}

/// The only request in `results`, or nil.
func onlyRequest(_ results: [HTTPParseResult]) -> HTTPRequest? {
    guard results.count == 1, case .request(let request) = results[0] else { return nil }
    return request
}

func errorStatus(_ results: [HTTPParseResult]) -> Int? {
    guard case .error(let error)? = results.last else { return nil }
    return error.status.code
}


@Suite struct HTTPRequestParserTests {
    struct Valid: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let check: @Sendable (HTTPRequest) -> Bool
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        Valid(name: "simple GET", text: "GET / HTTP/1.1\r\nHost: a\r\n\r\n") {
            $0.method == .get && $0.path == "/" && $0.version == .http1_1 && $0.keepAlive && $0.body.isEmpty
                && $0.pathSegments.isEmpty && $0.queryItems.isEmpty
        },
        Valid(
            name: "path and query decoding",
            text: "GET /v1/codes/ab%2Fc?x=1&name=J%C3%BCrgen+M&flag&e=a%3Db HTTP/1.1\r\nHost: a\r\n\r\n"
        ) {
            $0.target == "/v1/codes/ab%2Fc?x=1&name=J%C3%BCrgen+M&flag&e=a%3Db" && $0.path == "/v1/codes/ab/c"
                && $0.pathSegments == ["v1", "codes", "ab/c"]
                && $0.queryItems == [
                    HTTPQueryItem(name: "x", value: "1"), HTTPQueryItem(name: "name", value: "Jürgen M"),
                    HTTPQueryItem(name: "flag", value: ""), HTTPQueryItem(name: "e", value: "a=b"),
                ] && $0.query("name") == "Jürgen M" && $0.query("missing") == nil
        },
        Valid(
            name: "POST with body",
            text: "POST /codes HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
        ) { $0.method == .post && $0.body == Array("{\"a\":1}".utf8) && $0.headers["content-type"] == "application/json" },
        Valid(name: "HTTP/1.0 closes by default, Host optional", text: "GET / HTTP/1.0\r\n\r\n") {
            $0.version == .http1_0 && !$0.keepAlive
        },
        Valid(name: "HTTP/1.0 keep-alive", text: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") {
            $0.version == .http1_0 && $0.keepAlive
        },
        Valid(name: "HTTP/1.1 Connection: close", text: "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n") {
            !$0.keepAlive
        },
        Valid(
            name: "identical Content-Length repeats",
            text: "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\ncontent-length: 3, 3\r\n\r\nabc"
        ) { $0.method == .put && $0.body == Array("abc".utf8) },
        Valid(name: "empty lines before the request are skipped", text: "\r\n\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\n") {
            $0.path == "/a"
        },
        Valid(name: "OWS around values; order and case kept", text: "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t one \t\r\nx-a:two\r\n\r\n") {
            $0.headers["X-A"] == "one" && $0.headers.values(for: "X-a") == ["one", "two"]
                && $0.headers.map(\.name) == ["Host", "X-A", "x-a"]
        },
        Valid(name: "any token method", text: "M-SEARCH /* HTTP/1.1\r\nHost: a\r\n\r\n") {
            $0.method.rawValue == "M-SEARCH" && $0.path == "/*"
        },
        Valid(name: "obs-text in a value", text: "GET / HTTP/1.1\r\nHost: a\r\nX-Name: J\u{00FC}rgen\r\n\r\n") {
            $0.headers["x-name"] == "Jürgen"
        },
        Valid(name: "request line of exactly 8 KiB", text: "GET /\(String(repeating: "a", count: 8192 - 14)) HTTP/1.1\r\nHost: a\r\n\r\n") {
            $0.target.count == 8192 - 13
        },
        Valid(
            name: "exactly 100 fields",
            text: "GET / HTTP/1.1\r\nHost: a\r\n" + (1..<100).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        ) { $0.headers.count == 100 },
        Valid(
            name: "body of exactly 64 KiB",
            text: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65536\r\n\r\n" + String(repeating: "b", count: 65536)
        ) { $0.body.count == 65536 },
        Valid(name: "Expect 100-continue with no body", text: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n") {
            $0.body.isEmpty
        },
    ]

    @Test(arguments: valid)
    func acceptsValidRequests(_ testCase: Valid) throws {
        let request = try #require(onlyRequest(parse(testCase.text)), "\(parse(testCase.text))")
        #expect(testCase.check(request), "\(request)")
    }

    @Test(arguments: valid)
    func validRequestsParseTheSameByteAtATimeAndInRandomSplits(_ testCase: Valid) {
        let bytes = Array(testCase.text.utf8)
        let whole = parse(bytes)
        #expect(parse(bytes, chunks: Array(repeating: 1, count: bytes.count)) == whole)
        var random = SplitMix64(state: UInt64(bytes.count))
        for _ in 0..<20 {
            let chunks = (0..<bytes.count).map { _ in Int.random(in: 1...64, using: &random) }
            #expect(parse(bytes, chunks: chunks) == whole)
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let status: Int
        init(_ name: String, _ text: String, _ status: Int) {
            self.name = name
            self.bytes = Array(text.utf8)
            self.status = status
        }
        var testDescription: String { "\(name) → \(status)" }
    }

    static let host = "Host: a\r\n"
    static let malformed: [Malformed] = [
        Malformed("bare LF line endings", "GET / HTTP/1.1\nHost: a\n\n", 400),
        Malformed("bare LF after a field", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400),
        Malformed("bare LF before the request", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("bare CR in a value", "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
        Malformed("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400),
        Malformed("whitespace before the colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        Malformed("field line without a colon", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400),
        Malformed("empty field name", "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", 400),
        Malformed("control character in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\u{01}c\r\n\r\n", 400),
        Malformed("NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\u{00}c\r\n\r\n", 400),
        Malformed("double space in the request line", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("space in the target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("no version", "GET /\r\nHost: a\r\n\r\n", 400),
        Malformed("lower-case version", "GET / http/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("garbage version", "GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        Malformed("HTTP/0.9", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505),
        Malformed("method not a token", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("absolute-form target", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("asterisk-form target", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("target not starting with /", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("unencoded < in the target", "GET /a<b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("fragment in the target", "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("bad percent escape", "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("truncated percent escape", "GET /a% HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("percent-encoded invalid UTF-8", "GET /%FF HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("percent-encoded NUL in the path", "GET /a%00 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        Malformed("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400),
        Malformed("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        Malformed("Content-Length not digits", "POST / HTTP/1.1\r\n\(host)Content-Length: abc\r\n\r\n", 400),
        Malformed("negative Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", 400),
        Malformed("signed Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: +1\r\n\r\nx", 400),
        Malformed("empty Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: \r\n\r\n", 400),
        Malformed("hex Content-Length", "POST / HTTP/1.1\r\n\(host)Content-Length: 0x10\r\n\r\n", 400),
        Malformed("conflicting Content-Length list", "POST / HTTP/1.1\r\n\(host)Content-Length: 1, 2\r\n\r\nx", 400),
        Malformed(
            "conflicting Content-Length fields",
            "POST / HTTP/1.1\r\n\(host)Content-Length: 1\r\nContent-Length: 2\r\n\r\nx", 400),
        Malformed("Content-Length over the limit", "POST / HTTP/1.1\r\n\(host)Content-Length: 65537\r\n\r\n", 413),
        Malformed(
            "Content-Length overflowing Int",
            "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999999\r\n\r\n", 413),
        Malformed("Transfer-Encoding chunked", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n", 501),
        Malformed(
            "Transfer-Encoding with Content-Length",
            "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        Malformed("unknown expectation", "POST / HTTP/1.1\r\n\(host)Expect: 200-ok\r\nContent-Length: 1\r\n\r\n", 417),
        Malformed("request line of 8 KiB + 1", "GET /\(String(repeating: "a", count: 8192 - 13)) HTTP/1.1\r\n\(host)\r\n", 414),
        Malformed(
            "header section over 16 KiB",
            "GET / HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "b", count: 16 * 1024))\r\n\r\n", 431),
        Malformed(
            "101 fields", "GET / HTTP/1.1\r\n\(host)" + (1...100).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431),
        Malformed("TLS ClientHello bytes", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\r\n\r\n", 400),
        Malformed("plain garbage", "HELLO\r\n\r\n", 400),
    ]

    @Test(arguments: malformed)
    func refusesMalformedRequestsWithTheirStatus(_ testCase: Malformed) {
        let results = parse(testCase.bytes)
        #expect(errorStatus(results) == testCase.status, "\(results)")
    }

    @Test(arguments: malformed)
    func malformedRequestsFailTheSameByteAtATimeAndInRandomSplits(_ testCase: Malformed) {
        let bytes = testCase.bytes
        #expect(errorStatus(parse(bytes, chunks: Array(repeating: 1, count: bytes.count))) == testCase.status)
        var random = SplitMix64(state: UInt64(bytes.count) &* 31)
        for _ in 0..<20 {
            let chunks = (0..<bytes.count).map { _ in Int.random(in: 1...64, using: &random) }
            #expect(errorStatus(parse(bytes, chunks: chunks)) == testCase.status)
        }
    }

    @Test func headerSizeLimitCountsFieldLinesWithTheirCRLF() {
        // Field lines of exactly 16 KiB in total (CR LF included) pass; one byte more is refused.
        let line = "X-Big: " + String(repeating: "b", count: 16 * 1024 - 2 - 7 - "Host: a\r\n".utf8.count)
        let exact = "GET / HTTP/1.1\r\nHost: a\r\n\(line)\r\n\r\n"
        #expect(onlyRequest(parse(exact)) != nil)
        let over = "GET / HTTP/1.1\r\nHost: a\r\n\(line)b\r\n\r\n"
        #expect(errorStatus(parse(over)) == 431)
        #expect(errorStatus(parse(over, chunks: Array(repeating: 1, count: over.utf8.count))) == 431)
    }

    @Test func overlongRequestLineIsRefusedWithoutWaitingForItsEnd() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET /".utf8) + Array(repeating: UInt8(ascii: "a"), count: 8188))  // 8193: may end in CR
        #expect(parser.next() == .needMoreData)
        parser.append(Array(repeating: UInt8(ascii: "a"), count: 10))
        guard case .error(let error) = parser.next() else {
            Issue.record("expected 414")
            return
        }
        #expect(error.status.code == 414)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func oversizedHeaderSectionIsRefusedWithoutWaitingForItsEnd() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\nX-Big: ".utf8))
        parser.append(Array(repeating: UInt8(ascii: "b"), count: 16 * 1024))
        guard case .error(let error) = parser.next() else {
            Issue.record("expected 431")
            return
        }
        #expect(error.status.code == 431)
    }

    @Test func configuredBodyLimitAnswers413() {
        let limits = HTTPRequestParser.Limits(maxBodyBytes: 10)
        #expect(errorStatus(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", limits: limits)) == 413)
        #expect(onlyRequest(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits)) != nil)
    }

    @Test func anUploadRouteTakesALargerBodyAndOnlyItDoes() {
        let upload = HTTPRequestParser.LargeBodyRoute(
            method: .post, pathPrefix: "/api/v1/sessions/", pathSuffix: "/files", maxBytes: 20)
        let limits = HTTPRequestParser.Limits(maxBodyBytes: 10, largeBodies: [upload])
        let body = String(repeating: "x", count: 20)
        let head = { (line: String, length: Int) in "\(line) HTTP/1.1\r\nHost: a\r\nContent-Length: \(length)\r\n\r\n" }
        #expect(onlyRequest(parse(head("POST /api/v1/sessions/123/files", 20) + body, limits: limits))?.body.count == 20)
        #expect(onlyRequest(parse(head("POST /api/v1/sessions/123/files?name=a", 20) + body, limits: limits)) != nil)
        // Over its own limit, another method, another path, or nothing between the prefix and the suffix: 413.
        #expect(errorStatus(parse(head("POST /api/v1/sessions/123/files", 21), limits: limits)) == 413)
        #expect(errorStatus(parse(head("PUT /api/v1/sessions/123/files", 11), limits: limits)) == 413)
        #expect(errorStatus(parse(head("POST /api/v1/sessions/123/chat", 11), limits: limits)) == 413)
        #expect(errorStatus(parse(head("POST /api/v1/sessions//files", 11), limits: limits)) == 413)
        #expect(errorStatus(parse(head("POST /api/v1/sessions/1/x/files", 11), limits: limits)) == 413)
        if case .error(let error) = parse(head("POST /api/v1/sessions/123/files", 21), limits: limits).last {
            #expect(error.message == "the body is larger than 20 bytes")
        }
        var parser = HTTPRequestParser(limits: limits)
        parser.append(Array(head("POST /api/v1/sessions/1/files", 20).utf8))
        #expect(parser.next() == .needMoreData)
        #expect(parser.pendingBodyLength == 20)
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let text =
            "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"
            + "GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        for chunks in [nil, Array(repeating: 1, count: text.utf8.count)] {
            let paths = parse(text, chunks: chunks).compactMap { result -> String? in
                if case .request(let request) = result { request.path } else { nil }
            }
            #expect(paths == ["/1", "/2", "/3"])
        }
    }

    @Test func expectContinueIsReportedOnceBeforeTheBody() {
        var parser = HTTPRequestParser()
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(parser.next() == .expectContinue)
        #expect(parser.next() == .needMoreData)
        #expect(parser.phase == .body)
        parser.append(Array("ok".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Array("ok".utf8))
        #expect(parser.phase == .idle)
    }

    @Test func expectContinueIsIgnoredForHTTP10() {
        let results = parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
        #expect(onlyRequest(results)?.body == Array("ok".utf8))
    }

    @Test func phaseFollowsTheRequest() {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        parser.append(Array("POST / HT".utf8))
        #expect(parser.next() == .needMoreData)
        #expect(parser.phase == .head)
        parser.append(Array("TP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\na".utf8))
        #expect(parser.next() == .needMoreData)
        #expect(parser.phase == .body)
        parser.append(Array("bc".utf8))
        if case .request = parser.next() {} else { Issue.record("expected a request") }
        #expect(parser.phase == .idle)
        #expect(parser.next() == .needMoreData)
    }

    @Test func errorsAreSticky() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET / HTTP/1.1\nHost: a\n\n".utf8))
        let first = parser.next()
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(parser.next() == first)
        if case .error(let error) = first { #expect(error.status == .badRequest) } else { Issue.record("no error") }
    }

    @Test func randomBytesNeverCrashAndEndInAKnownStatus() {
        var random = SplitMix64(state: 7)
        let allowed: Set<Int> = [400, 413, 414, 417, 431, 501, 505]
        for _ in 0..<300 {
            var bytes = Array("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody".utf8)
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
            let results = parse(bytes, chunks: (0..<bytes.count).map { _ in Int.random(in: 1...8, using: &random) })
            if let status = errorStatus(results) { #expect(allowed.contains(status)) }
        }
    }
}
