import Testing
@testable import SupportHTTP

@Suite struct HTTPResponseBodyDecoderTests {
    /// Appends `text` in chunks of `chunk` bytes (all at once when nil); `finish()` afterwards when `closes`.
    private func decode(
        _ framing: HTTPResponseBodyDecoder.Framing, _ text: String, maxBytes: Int, chunk: Int? = nil,
        closes: Bool = false
    ) -> HTTPResponseBodyDecoder {
        var decoder = HTTPResponseBodyDecoder(framing: framing, maxBytes: maxBytes)
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + (chunk ?? bytes.count))
            decoder.append(bytes[offset..<end])
            offset = end
        }
        if closes { decoder.finish() }
        return decoder
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let framing: HTTPResponseBodyDecoder.Framing
        let input: String
        let maxBytes: Int
        let closes: Bool
        let prefix: String
        let isComplete: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "no body", framing: .empty, input: "ignored", maxBytes: 10, closes: false, prefix: "",
            isComplete: true),
        Case(
            name: "length within the limit", framing: .length(5), input: "hello and more", maxBytes: 10,
            closes: false, prefix: "hello", isComplete: true),
        Case(
            name: "length exactly the limit", framing: .length(5), input: "hello", maxBytes: 5, closes: false,
            prefix: "hello", isComplete: true),
        Case(
            name: "length over the limit", framing: .length(12), input: "hello world!", maxBytes: 5, closes: false,
            prefix: "hello", isComplete: false),
        Case(
            name: "length cut short by the close", framing: .length(12), input: "hello", maxBytes: 50, closes: true,
            prefix: "hello", isComplete: false),
        Case(
            name: "zero length", framing: .length(0), input: "", maxBytes: 5, closes: false, prefix: "",
            isComplete: true),
        Case(
            name: "until close, all kept", framing: .untilClose, input: "hello", maxBytes: 10, closes: true,
            prefix: "hello", isComplete: true),
        Case(
            name: "until close, not closed yet", framing: .untilClose, input: "hello", maxBytes: 10, closes: false,
            prefix: "hello", isComplete: false),
        Case(
            name: "until close, over the limit", framing: .untilClose, input: "hello world", maxBytes: 5, closes: true,
            prefix: "hello", isComplete: false),
        Case(
            name: "chunked", framing: .chunked, input: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", maxBytes: 50,
            closes: false, prefix: "hello world", isComplete: true),
        Case(
            name: "chunked with extensions, upper-case hex and lone LFs", framing: .chunked,
            input: "5;name=value\r\nhello\nB \t;x\r\n0123456789A\r\n0\n\n", maxBytes: 50, closes: false,
            prefix: "hello0123456789A", isComplete: true),
        Case(
            name: "chunked exactly the limit, then the last chunk", framing: .chunked,
            input: "5\r\nhello\r\n0\r\n\r\n", maxBytes: 5, closes: false, prefix: "hello", isComplete: true),
        Case(
            name: "chunked over the limit", framing: .chunked, input: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            maxBytes: 7, closes: false, prefix: "hello w", isComplete: false),
        Case(
            name: "chunked without its last chunk", framing: .chunked, input: "5\r\nhello\r\n", maxBytes: 50,
            closes: true, prefix: "hello", isComplete: false),
        Case(
            name: "chunked with a size that is not hex", framing: .chunked, input: "5\r\nhello\r\nzz\r\nmore\r\n",
            maxBytes: 50, closes: true, prefix: "hello", isComplete: false),
        Case(
            name: "chunked data not followed by CR LF", framing: .chunked, input: "5\r\nhelloXX\r\n0\r\n\r\n",
            maxBytes: 50, closes: true, prefix: "hello", isComplete: false),
        Case(
            name: "chunked size that overflows", framing: .chunked, input: "fffffffffffffffff\r\nx", maxBytes: 50,
            closes: true, prefix: "", isComplete: false),
    ]

    @Test(arguments: cases)
    func keepsThePrefixAndSeesTheEnd(_ test: Case) {
        for chunk in [nil, 1, 4] as [Int?] {
            let decoder = decode(test.framing, test.input, maxBytes: test.maxBytes, chunk: chunk, closes: test.closes)
            #expect(decoder.prefix == Array(test.prefix.utf8), "chunk \(String(describing: chunk))")
            #expect(decoder.isComplete == test.isComplete, "chunk \(String(describing: chunk))")
            #expect(decoder.isTruncated == !test.isComplete)
            if test.closes { #expect(!decoder.wantsMore) }  // nothing more can come after the close
        }
    }

    @Test func wantsMoreOnlyWhileThePrefixCanGrow() {
        var decoder = HTTPResponseBodyDecoder(framing: .length(100), maxBytes: 10)
        #expect(decoder.wantsMore)
        decoder.append(Array("0123456789".utf8))
        #expect(!decoder.wantsMore)  // the prefix is full: reading more would only be thrown away
        #expect(decoder.isTruncated)
        var chunked = HTTPResponseBodyDecoder(framing: .chunked, maxBytes: 10)
        chunked.append(Array("3\r\nabc\r\n".utf8))
        #expect(chunked.wantsMore)
        chunked.append(Array("zz\r\n".utf8))
        #expect(!chunked.wantsMore)  // broken framing: nothing after it is body
    }

    /// A chunk-size line that never ends breaks the framing instead of growing without bound.
    @Test func anEndlessChunkSizeLineBreaksTheFraming() {
        var decoder = HTTPResponseBodyDecoder(framing: .chunked, maxBytes: 10)
        decoder.append([UInt8](repeating: UInt8(ascii: "0"), count: 2_000))
        #expect(!decoder.wantsMore)
        #expect(decoder.isTruncated)
    }

    private func head(status: Int = 200, _ headers: [(String, String)]) -> HTTPResponseHeadParser.Head {
        HTTPResponseHeadParser.Head(
            version: "HTTP/1.1", status: status, reason: "", headers: headers.map { (name: $0.0, value: $0.1) })
    }

    @Test func framesBodiesAsRFC9112Says() throws {
        typealias Decoder = HTTPResponseBodyDecoder
        #expect(try Decoder.framing(of: head([("Content-Length", "10")]), requestMethod: "HEAD") == .empty)
        #expect(try Decoder.framing(of: head(status: 204, [("Content-Length", "10")]), requestMethod: "POST") == .empty)
        #expect(try Decoder.framing(of: head(status: 304, []), requestMethod: "GET") == .empty)
        #expect(try Decoder.framing(of: head([("Content-Length", "10")]), requestMethod: "POST") == .length(10))
        #expect(try Decoder.framing(of: head([("content-length", " 10 , 10")]), requestMethod: "POST") == .length(10))
        #expect(
            try Decoder.framing(of: head([("Content-Length", "99999999999999999999999")]), requestMethod: "POST")
                == .length(.max))
        #expect(try Decoder.framing(of: head([("Transfer-Encoding", "chunked")]), requestMethod: "POST") == .chunked)
        #expect(
            try Decoder.framing(
                of: head([("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "Chunked"), ("Content-Length", "3")]),
                requestMethod: "POST") == .chunked)
        #expect(try Decoder.framing(of: head([("Transfer-Encoding", "gzip")]), requestMethod: "POST") == .untilClose)
        #expect(try Decoder.framing(of: head([]), requestMethod: "POST") == .untilClose)
    }

    @Test(arguments: [
        ("10, 11", "conflicting Content-Length values"), ("ten", "is not a number"), ("", "is not a number"),
        ("-1", "is not a number"),
    ])
    func refusesAnInvalidContentLength(_ value: String, _ message: String) throws {
        #expect {
            try HTTPResponseBodyDecoder.framing(of: head([("Content-Length", value)]), requestMethod: "POST")
        } throws: { error in
            guard let error = error as? HTTPClientError else { return false }
            return error.kind == .malformedResponse && error.message.contains(message)
        }
    }
}
