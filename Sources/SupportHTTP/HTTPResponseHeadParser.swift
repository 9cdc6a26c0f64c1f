/// A strict, incremental parser of an HTTP/1.x response's head, for ``HTTPClient``: bytes in, the final response's
/// status line and header fields out; no I/O, no clock.
///
/// Feed bytes in any chunking with ``append(_:)``, then call ``next()`` until it returns something other than
/// ``Step/needMoreData``. Accepted: a status line `HTTP/1.1` or `HTTP/1.0`, SP, a three-digit code 100–599, and an
/// optional SP and reason phrase; field lines `name ":" OWS value OWS` whose name is a token. Lines end in CR LF or
/// a lone LF (RFC 9112 §2.2 allows a recipient to accept it); a bare CR, obs-fold (a field line starting with
/// whitespace), control bytes in a value or the reason, and a 101 (this client never asks for an upgrade) are
/// refused. Interim responses (100, 102, 103, …) are skipped, any number of them; empty lines before a status line are
/// skipped too. Every byte of the head, interim responses and line ends included, counts toward one limit. A failure
/// is sticky: every later call returns it.
package struct HTTPResponseHeadParser: Sendable {
    /// A final response's head.
    package struct Head: Sendable {
        /// `HTTP/1.1` or `HTTP/1.0`.
        package var version: String
        package var status: Int
        package var reason: String
        package var headers: [(name: String, value: String)]
    }

    /// What ``next()`` found.
    package enum Step: Sendable {
        /// The bytes so far do not finish the head; append more.
        case needMoreData
        /// The final response's head; the bytes after it are the body's (``takeRemainingBytes()``).
        case head(Head)
        /// The head is malformed (``HTTPClientError/Kind/malformedResponse``) or too large
        /// (``HTTPClientError/Kind/headersTooLarge``).
        case failed(HTTPClientError)
    }

    private enum State {
        case statusLine
        case fields(Head)
        case finished(Head)
        case failed(HTTPClientError)
    }

    /// The most bytes the head may take, interim responses included.
    package let maxHeadBytes: Int
    private var buffer: [UInt8] = []
    /// Index of the first byte not yet consumed.
    private var start = 0
    /// Where the search for the current line's LF resumes, so each byte is scanned once.
    private var scanFrom = 0
    /// Head bytes consumed so far, over every response.
    private var consumed = 0
    private var state = State.statusLine

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// A parser for a head of at most `maxHeadBytes` bytes.
    package init(maxHeadBytes: Int) { self.maxHeadBytes = maxHeadBytes }

    /// Adds received bytes (dropped once the parser has failed).
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if case .failed = state { return }
        buffer.append(contentsOf: bytes)
    }

    /// Whether the status line of the response being read has arrived: a timeout then interrupted its header fields,
    /// not the wait for the status.
    package var hasStatusLine: Bool {
        switch state {
        case .statusLine, .failed: false
        case .fields, .finished: true
        }
    }

    /// Bytes received and not consumed as part of the head.
    package var bufferedByteCount: Int { buffer.count - start }

    /// The bytes after the head (the body's beginning), taken out of the parser.
    package mutating func takeRemainingBytes() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer = []
        start = 0
        scanFrom = 0
        return rest
    }

    /// Parses as far as the bytes allow.
    package mutating func next() -> Step {
        while true {
            switch state {
            case .failed(let error):
                return .failed(error)
            case .finished(let head):
                return .head(head)
            case .statusLine:
                guard let line = nextLine() else { return waitForMore() }
                if line.isEmpty { continue }
                switch parseStatusLine(buffer[line]) {
                case .failure(let error): return fail(error)
                case .success(let head): state = .fields(head)
                }
            case .fields(var head):
                guard let line = nextLine() else { return waitForMore() }
                if line.isEmpty {
                    // Interim responses are skipped; the next status line follows.
                    state = head.status < 200 ? .statusLine : .finished(head)
                    continue
                }
                switch parseField(buffer[line]) {
                case .failure(let error): return fail(error)
                case .success(let field): head.headers.append(field)
                }
                state = .fields(head)
            }
        }
    }

    /// The next line's content (without its line end), consuming it; nil when no whole line is buffered, or when the
    /// parser failed (too large, a bare CR).
    private mutating func nextLine() -> Range<Int>? {
        scanFrom = max(scanFrom, start)
        guard let lf = buffer[scanFrom...].firstIndex(of: Self.lf) else {
            scanFrom = buffer.count
            return nil
        }
        let length = lf + 1 - start
        guard consumed + length <= maxHeadBytes else {
            _ = fail(tooLarge)
            return nil
        }
        let end = lf > start && buffer[lf - 1] == Self.cr ? lf - 1 : lf
        guard !buffer[start..<end].contains(Self.cr) else {
            _ = fail(HTTPClientError(.malformedResponse, "a bare CR in the response head"))
            return nil
        }
        let range = start..<end
        consumed += length
        start = lf + 1
        scanFrom = start
        return range
    }

    /// No whole line is buffered: fails when the line so far can no longer fit (its LF is still to come).
    private mutating func waitForMore() -> Step {
        if case .failed(let error) = state { return .failed(error) }
        if consumed + bufferedByteCount >= maxHeadBytes { return fail(tooLarge) }
        if start > 0 {
            buffer.removeSubrange(0..<start)
            scanFrom -= start
            start = 0
        }
        return .needMoreData
    }

    private var tooLarge: HTTPClientError {
        HTTPClientError(
            .headersTooLarge,
            "the status line and header fields (interim responses included) are larger than \(maxHeadBytes) bytes")
    }

    private func parseStatusLine(_ line: ArraySlice<UInt8>) -> Result<Head, HTTPClientError> {
        let malformed = HTTPClientError(
            .malformedResponse, "the status line '\(Self.quoted(line))' is not HTTP/1.x NNN")
        // "HTTP/1.1 200" at least; then nothing, or SP and the reason.
        guard line.count >= 12, line.starts(with: "HTTP/1.".utf8) else { return .failure(malformed) }
        let base = line.startIndex
        let minor = line[base + 7]
        guard minor == UInt8(ascii: "0") || minor == UInt8(ascii: "1"), line[base + 8] == UInt8(ascii: " ") else {
            return .failure(malformed)
        }
        let digits = line[(base + 9)..<(base + 12)]
        guard digits.allSatisfy(HTTPRequestParser.isDigit) else { return .failure(malformed) }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        var reason = line[(base + 12)...]
        if let first = reason.first {
            guard first == UInt8(ascii: " ") else { return .failure(malformed) }
            reason = reason.dropFirst()
        }
        guard (100...599).contains(status) else {
            return .failure(HTTPClientError(.malformedResponse, "the status code \(status) is outside 100–599"))
        }
        guard status != 101 else {
            return .failure(
                HTTPClientError(
                    .malformedResponse, "101 Switching Protocols, but the request asked for no protocol upgrade"))
        }
        guard reason.allSatisfy(Self.isFieldByte) else {
            return .failure(HTTPClientError(.malformedResponse, "the reason phrase holds a control byte"))
        }
        return .success(
            Head(
                version: minor == UInt8(ascii: "1") ? "HTTP/1.1" : "HTTP/1.0", status: status,
                reason: String(decoding: reason, as: UTF8.self), headers: []))
    }

    private func parseField(_ line: ArraySlice<UInt8>) -> Result<(name: String, value: String), HTTPClientError> {
        guard let first = line.first, first != 0x20, first != 0x09 else {
            return .failure(
                HTTPClientError(
                    .malformedResponse, "obsolete line folding (a header line starting with whitespace) is not accepted"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(HTTPClientError(.malformedResponse, "the header line '\(Self.quoted(line))' has no ':'"))
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(HTTPRequestParser.isTokenByte) else {
            return .failure(
                HTTPClientError(
                    .malformedResponse,
                    "the header name '\(Self.quoted(name))' is not a token (no whitespace before ':')"))
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        let nameText = String(decoding: name, as: UTF8.self)
        guard value.allSatisfy(Self.isFieldByte) else {
            return .failure(
                HTTPClientError(.malformedResponse, "the value of the header '\(nameText)' holds a control byte"))
        }
        return .success((nameText, String(decoding: value, as: UTF8.self)))
    }

    private mutating func fail(_ error: HTTPClientError) -> Step {
        state = .failed(error)
        buffer = []
        start = 0
        scanFrom = 0
        return .failed(error)
    }

    /// HTAB, SP, VCHAR and obs-text: what a field value or reason phrase may hold.
    private static func isFieldByte(_ byte: UInt8) -> Bool { byte == 0x09 || byte >= 0x20 && byte != 0x7F }

    /// `bytes` for an error message: printable ASCII as is, anything else as `\xNN`, at most 60 bytes.
    static func quoted(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        for byte in bytes.prefix(60) {
            if (0x20...0x7E).contains(byte) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return bytes.count > 60 ? text + "…" : text
    }
}
