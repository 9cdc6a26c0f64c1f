/// Keeps the beginning of a response body, for ``HTTPClient``: body bytes in (after the head), at most `maxBytes` of
/// content kept, and whether the body's end was seen; no I/O.
///
/// The framing follows RFC 9112 §6.3: no body for a HEAD request or a 204 or 304; a `Transfer-Encoding` whose last
/// coding is `chunked` is decoded (the prefix is the decoded content; chunk extensions and trailer fields are
/// skipped); any other `Transfer-Encoding` runs until the connection closes; otherwise `Content-Length`, or until the
/// connection closes. A broken chunked framing ends the prefix there (the body counts as truncated), since the status
/// and head are already known good.
package struct HTTPResponseBodyDecoder: Sendable {
    /// How the body's end is found.
    package enum Framing: Sendable, Hashable {
        /// No body.
        case empty
        /// `Content-Length` bytes.
        case length(Int)
        /// Chunked transfer coding, up to the last (zero-size) chunk.
        case chunked
        /// Everything until the connection closes.
        case untilClose
    }

    private enum ChunkState: Sendable {
        /// Reading a chunk-size line (its bytes so far).
        case size([UInt8])
        /// Inside a chunk's data.
        case data(remaining: Int)
        /// After a chunk's data: its CR LF (the CR seen or not).
        case dataEnd(sawCR: Bool)
    }

    /// The most content bytes kept.
    package let maxBytes: Int
    package let framing: Framing
    /// The body's first bytes (decoded, for chunked), at most ``maxBytes``.
    package private(set) var prefix: [UInt8] = []
    /// The body's end was seen and all of it is in ``prefix``.
    package private(set) var isComplete: Bool
    /// Content beyond ``maxBytes`` arrived: there is more than the prefix.
    private var sawMore = false
    /// The chunked framing is broken: nothing after it is body.
    private var isBroken = false
    /// The connection ended (``finish()``): nothing more can come.
    private var hasEnded = false
    /// `.length`: content bytes still to come.
    private var lengthRemaining = 0
    private var chunk = ChunkState.size([])

    /// A chunk-size line (with extensions) longer than this breaks the framing.
    private static let maxChunkLineBytes = 1024

    /// A decoder for a body framed by `framing`, keeping at most `maxBytes`.
    package init(framing: Framing, maxBytes: Int) {
        self.framing = framing
        self.maxBytes = max(0, maxBytes)
        switch framing {
        case .empty: isComplete = true
        case .length(let length):
            isComplete = length == 0
            lengthRemaining = length
        case .chunked, .untilClose: isComplete = false
        }
    }

    /// How `head`'s body is framed, answering a request with `requestMethod`.
    /// - Throws: ``HTTPClientError/Kind/malformedResponse`` for a `Content-Length` that is not digits, or lists
    ///   different values (RFC 9112 §6.3: the response must be discarded).
    package static func framing(of head: HTTPResponseHeadParser.Head, requestMethod: String) throws(HTTPClientError)
        -> Framing
    {
        if requestMethod == "HEAD" || head.status == 204 || head.status == 304 || head.status < 200 { return .empty }
        let codings = head.headers.filter { HTTPHeaders.namesEqual($0.name, "Transfer-Encoding") }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingASCIIWhitespace().lowercasedASCII() }
        if !codings.isEmpty { return codings.last == "chunked" ? .chunked : .untilClose }
        var length: Int?
        for field in head.headers where HTTPHeaders.namesEqual(field.name, "Content-Length") {
            for item in field.value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = item.trimmingASCIIWhitespace()
                guard !digits.isEmpty, digits.utf8.allSatisfy(HTTPRequestParser.isDigit) else {
                    throw HTTPClientError(
                        .malformedResponse,
                        "the Content-Length '\(HTTPResponseHeadParser.quoted(field.value.utf8))' is not a number")
                }
                // Digits only, so the one failure is overflow: a length longer than any prefix.
                let parsed = Int(digits) ?? .max
                guard length == nil || length == parsed else {
                    throw HTTPClientError(.malformedResponse, "conflicting Content-Length values")
                }
                length = parsed
            }
        }
        return length.map(Framing.length) ?? .untilClose
    }

    /// Whether reading more could add to ``prefix`` or reach the body's end within it.
    package var wantsMore: Bool { !isComplete && !sawMore && !isBroken && !hasEnded && prefix.count < maxBytes }

    /// Whether the body may go on beyond ``prefix`` (its end was not seen within it).
    package var isTruncated: Bool { !isComplete }

    /// Adds body bytes as they arrived on the connection.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        guard !isComplete, !sawMore, !isBroken, !hasEnded else { return }
        switch framing {
        case .empty:
            return
        case .untilClose:
            keep(bytes[...])
        case .length:
            let take = bytes.prefix(lengthRemaining)
            lengthRemaining -= take.count
            keep(take)
            if lengthRemaining == 0, !sawMore { isComplete = true }
        case .chunked:
            appendChunked(bytes[...])
        }
    }

    /// The connection ended: a body running until the close is complete, if all of it was kept; any other body
    /// that has not reached its end stays incomplete.
    package mutating func finish() {
        hasEnded = true
        if framing == .untilClose, !sawMore { isComplete = true }
    }

    private mutating func keep(_ content: some Collection<UInt8>) {
        let room = maxBytes - prefix.count
        prefix.append(contentsOf: content.prefix(room))
        if content.count > room { sawMore = true }
    }

    private mutating func appendChunked(_ bytes: some Collection<UInt8>) {
        var rest = bytes[...]
        while !rest.isEmpty, !isComplete, !sawMore, !isBroken {
            switch chunk {
            case .size(var line):
                guard let lf = rest.firstIndex(of: 0x0A) else {
                    line.append(contentsOf: rest)
                    rest = rest[rest.endIndex...]
                    if line.count > Self.maxChunkLineBytes { isBroken = true }
                    chunk = .size(line)
                    continue
                }
                line.append(contentsOf: rest[..<lf])
                rest = rest[rest.index(after: lf)...]
                guard line.count <= Self.maxChunkLineBytes, let size = Self.chunkSize(line) else {
                    isBroken = true
                    continue
                }
                if size == 0 {
                    isComplete = true  // the last chunk: trailer fields, if any, are not content
                } else {
                    chunk = .data(remaining: size)
                }
            case .data(let remaining):
                let take = rest.prefix(remaining)
                rest = rest[take.endIndex...]
                keep(take)
                chunk = remaining == take.count ? .dataEnd(sawCR: false) : .data(remaining: remaining - take.count)
            case .dataEnd(let sawCR):
                let byte = rest.removeFirst()
                if byte == 0x0A {
                    chunk = .size([])
                } else if byte == 0x0D, !sawCR {
                    chunk = .dataEnd(sawCR: true)
                } else {
                    isBroken = true
                }
            }
        }
    }

    /// The size of a chunk-size line (`1a;ext=x`, a trailing CR allowed), or nil when it is not hexadecimal or
    /// overflows.
    private static func chunkSize(_ line: [UInt8]) -> Int? {
        var digits = line[...]
        if digits.last == 0x0D { digits = digits.dropLast() }
        if let extensions = digits.firstIndex(of: UInt8(ascii: ";")) { digits = digits[..<extensions] }
        while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
        guard !digits.isEmpty else { return nil }
        var size = 0
        for byte in digits {
            let value: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = Int(byte - UInt8(ascii: "A")) + 10
            default: return nil
            }
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            let (sum, carry) = shifted.addingReportingOverflow(value)
            guard !overflow, !carry else { return nil }
            size = sum
        }
        return size
    }
}
