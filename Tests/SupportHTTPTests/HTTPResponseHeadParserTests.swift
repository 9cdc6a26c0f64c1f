import Testing
@testable import SupportHTTP

/// What feeding a response head to the parser gave: the head or the error, and the bytes after the head.
struct ParsedHead {
    var head: HTTPResponseHeadParser.Head?
    var error: HTTPClientError?
    var rest: [UInt8] = []
    /// Feeds stopped before the head was complete or failed.
    var needsMore = false
}

/// Feeds `text` in chunks of `chunk` bytes (all at once when nil), calling `next()` after each.
func parseResponseHead(_ text: String, chunk: Int? = nil, maxHeadBytes: Int = 16_384) -> ParsedHead {
    let bytes = Array(text.utf8)
    var parser = HTTPResponseHeadParser(maxHeadBytes: maxHeadBytes)
    var offset = 0
    repeat {
        let end = min(bytes.count, offset + (chunk ?? bytes.count))
        parser.append(bytes[offset..<end])
        offset = end
        switch parser.next() {
        case .needMoreData: continue
        case .head(let head): return ParsedHead(head: head, rest: parser.takeRemainingBytes())
        case .failed(let error): return ParsedHead(error: error)
        }
    } while offset < bytes.count
    return ParsedHead(needsMore: true)
}

@Suite struct HTTPResponseHeadParserTests {
    struct Valid: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let version: String
        let status: Int
        let reason: String
        let headers: [String]
        let rest: String
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        Valid(
            name: "200 with headers and body", text: "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: b\r\n\r\nbody",
            version: "HTTP/1.1", status: 200, reason: "OK", headers: ["Content-Length=4", "X-A=b"], rest: "body"),
        Valid(
            name: "HTTP/1.0 and a reason with spaces", text: "HTTP/1.0 404 Not Found Here\r\n\r\n",
            version: "HTTP/1.0", status: 404, reason: "Not Found Here", headers: [], rest: ""),
        Valid(
            name: "no reason, no space", text: "HTTP/1.1 204\r\n\r\n", version: "HTTP/1.1", status: 204,
            reason: "", headers: [], rest: ""),
        Valid(
            name: "empty reason after the space", text: "HTTP/1.1 503 \r\n\r\n", version: "HTTP/1.1",
            status: 503, reason: "", headers: [], rest: ""),
        Valid(
            name: "OWS around values, empty value, repeated names, order kept",
            text: "HTTP/1.1 200 OK\r\nA:  x y \t\r\nEmpty:\r\nA:z\r\n\r\n", version: "HTTP/1.1", status: 200,
            reason: "OK", headers: ["A=x y", "Empty=", "A=z"], rest: ""),
        Valid(
            name: "lone LF line ends", text: "HTTP/1.1 200 OK\nA: b\n\nrest", version: "HTTP/1.1", status: 200,
            reason: "OK", headers: ["A=b"], rest: "rest"),
        Valid(
            name: "interim responses skipped",
            text: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                + "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nLocation: /x\r\n\r\n{}",
            version: "HTTP/1.1", status: 201, reason: "Created", headers: ["Location=/x"], rest: "{}"),
        Valid(
            name: "empty lines before the status line", text: "\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", version: "HTTP/1.1",
            status: 200, reason: "OK", headers: [], rest: ""),
    ]

    @Test(arguments: valid)
    func parsesValidHeads(_ valid: Valid) throws {
        for chunk in [nil, 1, 2, 7] as [Int?] {
            let parsed = parseResponseHead(valid.text, chunk: chunk)
            let head = try #require(parsed.head, "chunk \(String(describing: chunk)): \(String(describing: parsed.error))")
            #expect(head.version == valid.version)
            #expect(head.status == valid.status)
            #expect(head.reason == valid.reason)
            #expect(head.headers.map { "\($0.name)=\($0.value)" } == valid.headers)
            // Fed in pieces, the parser may not have been given all of the body's bytes yet.
            #expect(valid.rest.utf8.starts(with: parsed.rest))
            if chunk == nil { #expect(parsed.rest == Array(valid.rest.utf8)) }
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let message: String
        var testDescription: String { name }
    }

    static let malformed: [Malformed] = [
        Malformed(name: "not HTTP", text: "FOO\r\n\r\n", message: "the status line 'FOO' is not HTTP/1.x NNN"),
        Malformed(name: "HTTP/2", text: "HTTP/2 200 OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "HTTP/1.2", text: "HTTP/1.2 200 OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "lower-case version", text: "http/1.1 200 OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "two-digit code", text: "HTTP/1.1 20 OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "four-digit code", text: "HTTP/1.1 2000 OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "no space before the reason", text: "HTTP/1.1 200OK\r\n\r\n", message: "is not HTTP/1.x NNN"),
        Malformed(name: "code below 100", text: "HTTP/1.1 099 X\r\n\r\n", message: "the status code 99 is outside"),
        Malformed(name: "code above 599", text: "HTTP/1.1 600 X\r\n\r\n", message: "the status code 600 is outside"),
        Malformed(
            name: "unasked upgrade", text: "HTTP/1.1 101 Switching Protocols\r\n\r\n", message: "101 Switching Protocols"),
        Malformed(name: "control byte in the reason", text: "HTTP/1.1 200 O\u{1}K\r\n\r\n", message: "reason phrase"),
        Malformed(name: "bare CR", text: "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", message: "a bare CR"),
        Malformed(name: "header without colon", text: "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", message: "has no ':'"),
        Malformed(
            name: "space before colon", text: "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", message: "is not a token"),
        Malformed(
            name: "obs-fold", text: "HTTP/1.1 200 OK\r\nA: b\r\n  continued\r\n\r\n", message: "obsolete line folding"),
        Malformed(
            name: "NUL in a value", text: "HTTP/1.1 200 OK\r\nA: b\u{0}c\r\n\r\n",
            message: "the value of the header 'A' holds a control byte"),
        Malformed(
            name: "malformed final after interim", text: "HTTP/1.1 100 Continue\r\n\r\nFOO\r\n\r\n",
            message: "the status line 'FOO'"),
    ]

    @Test(arguments: malformed)
    func refusesMalformedHeads(_ malformed: Malformed) throws {
        for chunk in [nil, 1] as [Int?] {
            let error = try #require(parseResponseHead(malformed.text, chunk: chunk).error)
            #expect(error.kind == .malformedResponse)
            #expect(error.message.contains(malformed.message), "\(error.message)")
        }
    }

    @Test func quotesUnprintableBytesOfABadStatusLine() throws {
        let error = try #require(parseResponseHead("\u{7F}ELF\u{2}\r\n").error)
        #expect(error.message == "the status line '\\x7FELF\\x02' is not HTTP/1.x NNN")
    }

    /// The limit counts every byte of the head, line ends included: a head of exactly the limit passes, one byte more
    /// fails, however it is fed.
    @Test func enforcesTheHeadLimitToTheByte() throws {
        let text = "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"
        let headBytes = 25
        for chunk in [nil, 1, 3] as [Int?] {
            #expect(parseResponseHead(text, chunk: chunk, maxHeadBytes: headBytes).head?.status == 200)
            let error = try #require(parseResponseHead(text, chunk: chunk, maxHeadBytes: headBytes - 1).error)
            #expect(error.kind == .headersTooLarge)
            #expect(error.message.contains("\(headBytes - 1) bytes"))
        }
    }

    @Test func interimResponsesCountTowardTheLimit() throws {
        let interim = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 40)  // 1,040 bytes
        let text = interim + "HTTP/1.1 200 OK\r\n\r\n"
        #expect(parseResponseHead(text, maxHeadBytes: 2_000).head?.status == 200)
        let error = try #require(parseResponseHead(text, maxHeadBytes: 1_000).error)
        #expect(error.kind == .headersTooLarge)
    }

    /// A line that never ends fails as soon as it cannot fit, not when (if ever) its LF comes.
    @Test func anEndlessLineFailsOnceItCannotFit() throws {
        var parser = HTTPResponseHeadParser(maxHeadBytes: 100)
        parser.append(Array("HTTP/1.1 200 OK\r\nX-Long: ".utf8))
        guard case .needMoreData = parser.next() else {
            Issue.record("a short partial line must wait for more")
            return
        }
        parser.append([UInt8](repeating: UInt8(ascii: "a"), count: 1_000))
        guard case .failed(let error) = parser.next() else {
            Issue.record("a partial line over the limit must fail")
            return
        }
        #expect(error.kind == .headersTooLarge)
    }

    @Test func reportsWhetherTheStatusLineArrived() {
        var parser = HTTPResponseHeadParser(maxHeadBytes: 1_000)
        parser.append(Array("HTTP/1.1 200".utf8))
        _ = parser.next()
        #expect(!parser.hasStatusLine)
        parser.append(Array(" OK\r\nA: ".utf8))
        _ = parser.next()
        #expect(parser.hasStatusLine)
    }

    @Test func aFailureIsSticky() throws {
        var parser = HTTPResponseHeadParser(maxHeadBytes: 1_000)
        parser.append(Array("FOO\r\n".utf8))
        guard case .failed(let first) = parser.next() else {
            Issue.record("FOO must fail")
            return
        }
        parser.append(Array("HTTP/1.1 200 OK\r\n\r\n".utf8))
        guard case .failed(let second) = parser.next() else {
            Issue.record("a failed parser must stay failed")
            return
        }
        #expect(first == second)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func waitsWhileTheHeadIsIncomplete() {
        let parsed = parseResponseHead("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: b\r\n", chunk: 1)
        #expect(parsed.needsMore)
    }
}
