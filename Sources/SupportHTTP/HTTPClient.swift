package import SupportRuntime
import SupportUtilities

/// A blocking HTTP/1.1 client, plain or over TLS, for one request per connection (webhook deliveries), on threads
/// that may block: never an event loop (refused there), never Swift's cooperative pool.
///
/// A slow or hostile receiver costs bounded time and memory. One deadline, `timeout` after the call, covers connecting,
/// the TLS handshake, sending and reading. At most `maxHeaderBytes + maxBodyBytes` bytes are ever read from the socket,
/// in reads of at most ``readBufferSize``; then the connection is closed, whatever the receiver still sends (a
/// receiver still writing then sees a reset).
package enum HTTPClient {
    /// The largest single read from the socket.
    package static let readBufferSize = 16_384

    /// TLS settings for this client: trust `trustRoots` (nil: the system's CAs) and/or pinned keys, and offer ALPN
    /// `http/1.1` without requiring it (most HTTP servers select no ALPN protocol).
    package static func makeTLSConfiguration(
        trustRoots: PEMSource? = nil, pinnedPublicKeys: [PublicKeyPin] = []
    ) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration(trustRoots: trustRoots, pinnedPublicKeys: pinnedPublicKeys)
        tls.applicationProtocol = "http/1.1"
        tls.requiresApplicationProtocol = false
        return tls
    }

    /// Sends `request` to `address` and reads the answer, blocking the calling thread for at most `timeout`.
    ///
    /// The final response is returned whatever its status; interim 1xx responses are skipped. Of the body at most
    /// `maxBodyBytes` are kept (``HTTPClientResponse/bodyPrefix``): for a chunked body the decoded content, read from at
    /// most `maxBodyBytes` bytes of chunked framing, so a body of many tiny chunks yields a shorter prefix. Reading the
    /// body stops at `maxBodyBytes`, at the body's end, when the connection ends or breaks, or when the deadline
    /// passes; the response is returned all the same, with ``HTTPClientResponse/isBodyTruncated`` set unless the
    /// body's end was seen.
    ///
    /// - Parameters:
    ///   - tls: a client context made from ``makeTLSConfiguration(trustRoots:pinnedPublicKeys:)`` (one that
    ///     requires its ALPN protocol is refused as ``HTTPClientError/Kind/invalidRequest``); nil for plain HTTP.
    ///   - serverName: the name the certificate must hold (sent as SNI); nil: the context's `serverName`, else the IP
    ///     address of `address`.
    ///   - timeout: for the whole exchange.
    ///   - maxHeaderBytes: the most bytes of status lines and header fields, interim responses included.
    ///   - maxBodyBytes: the most body bytes read and kept.
    /// - Throws: ``HTTPClientError`` naming `address`: ``HTTPClientError/Kind/connect``, ``HTTPClientError/Kind/tls``,
    ///   ``HTTPClientError/Kind/timeout`` (with the phase it interrupted), ``HTTPClientError/Kind/invalidRequest``
    ///   (before any connection), ``HTTPClientError/Kind/malformedResponse``,
    ///   ``HTTPClientError/Kind/headersTooLarge`` or ``HTTPClientError/Kind/closedEarly``.
    package static func exchange(
        _ request: HTTPClientRequest, to address: SocketAddress, tls: TLSContext?, serverName: String?,
        timeout: Duration, maxHeaderBytes: Int = 16_384, maxBodyBytes: Int = 4_096
    ) throws(HTTPClientError) -> HTTPClientResponse {
        let bytes: [UInt8]
        do throws(HTTPClientError) {
            guard maxHeaderBytes > 0, maxBodyBytes >= 0 else {
                throw HTTPClientError(
                    .invalidRequest, "maxHeaderBytes must be positive and maxBodyBytes not negative")
            }
            if let tls { try check(tls) }
            bytes = try request.serialized()
        } catch {
            throw error.about(address)
        }
        let deadline = Deadline.now() + timeout
        let socket: DeadlineSocket
        do {
            socket = try DeadlineSocket.connect(to: address, tls: tls, serverName: serverName, deadline: deadline)
        } catch {
            throw connectFailure(error, to: address, deadline: deadline, timeout: timeout)
        }
        defer { socket.close() }
        do {
            try socket.write(bytes, deadline: deadline)
        } catch {
            throw exchangeFailure(error, phase: .sending, address: address, timeout: timeout)
        }
        let (budget, overflow) = maxHeaderBytes.addingReportingOverflow(maxBodyBytes)
        var reader = Reader(socket: socket, deadline: deadline, remaining: overflow ? .max : budget)
        let (head, rest) = try readHead(
            from: &reader, address: address, timeout: timeout, maxHeaderBytes: maxHeaderBytes)
        let framing: HTTPResponseBodyDecoder.Framing
        do {
            framing = try HTTPResponseBodyDecoder.framing(of: head, requestMethod: request.method)
        } catch {
            throw error.about(address)
        }
        var body = HTTPResponseBodyDecoder(framing: framing, maxBytes: maxBodyBytes)
        body.append(rest)
        while body.wantsMore, reader.remaining > 0 {
            // The status is known: a body cut short by the deadline or a broken connection is reported as truncated.
            guard let chunk = try? reader.read() else { break }
            guard !chunk.isEmpty else {
                body.finish()
                break
            }
            body.append(chunk)
        }
        return HTTPClientResponse(
            status: head.status, reason: head.reason, headers: head.headers, bodyPrefix: body.prefix,
            isBodyTruncated: body.isTruncated)
    }

    /// Reads until the final response's head is complete; returns it with the bytes that followed it.
    private static func readHead(
        from reader: inout Reader, address: SocketAddress, timeout: Duration, maxHeaderBytes: Int
    ) throws(HTTPClientError) -> (HTTPResponseHeadParser.Head, [UInt8]) {
        var parser = HTTPResponseHeadParser(maxHeadBytes: maxHeaderBytes)
        var received = 0
        while true {
            switch parser.next() {
            case .head(let head):
                return (head, parser.takeRemainingBytes())
            case .failed(let error):
                throw error.about(address)
            case .needMoreData:
                let phase: HTTPClientError.Phase = parser.hasStatusLine ? .readingHeaders : .waitingForStatusLine
                guard reader.remaining > 0 else {
                    // Unreachable while the parser's own limit is the smaller one; kept so reading never goes beyond.
                    throw HTTPClientError(
                        .headersTooLarge, "the response head is larger than \(maxHeaderBytes) bytes", address: address)
                }
                let chunk: [UInt8]
                do {
                    chunk = try reader.read()
                } catch {
                    throw exchangeFailure(error, phase: phase, address: address, timeout: timeout)
                }
                guard !chunk.isEmpty else {
                    throw HTTPClientError(
                        .closedEarly,
                        received == 0
                            ? "it closed the connection without answering"
                            : "it closed the connection after \(received) bytes, before a complete status line and "
                                + "header fields",
                        address: address)
                }
                received += chunk.count
                parser.append(chunk)
            }
        }
    }

    /// The socket's reads within one byte budget for the whole exchange.
    private struct Reader {
        let socket: DeadlineSocket
        let deadline: Deadline
        /// Bytes that may still be read.
        var remaining: Int

        mutating func read() throws(TransportError) -> [UInt8] {
            let bytes = try socket.read(maxBytes: min(HTTPClient.readBufferSize, remaining), deadline: deadline)
            remaining -= bytes.count
            return bytes
        }
    }

    /// Refuses a context an HTTP client cannot use.
    private static func check(_ tls: TLSContext) throws(HTTPClientError) {
        let configuration = tls.configuration
        guard !configuration.isServer, configuration.applicationProtocol == "http/1.1",
            !configuration.requiresApplicationProtocol
        else {
            throw HTTPClientError(
                .invalidRequest,
                "an HTTP client needs a client TLS configuration with applicationProtocol \"http/1.1\" and "
                    + "requiresApplicationProtocol false (HTTPClient.makeTLSConfiguration does this)")
        }
    }

    /// A failure to connect or to complete the TLS handshake.
    private static func connectFailure(
        _ error: TransportError, to address: SocketAddress, deadline: Deadline, timeout: Duration
    ) -> HTTPClientError {
        switch error.kind {
        case .handshakeTimeout:
            return timedOut(.tlsHandshake, address: address, timeout: timeout, underlying: error)
        case .connectTimeout where Deadline.now() >= deadline:
            return timedOut(.connecting, address: address, timeout: timeout, underlying: error)
        case .handshakeFailed, .certificateVerification, .pinMismatch, .alpnMismatch, .tls:
            return HTTPClientError(.tls, error.description, address: address, underlying: error)
        case .blockingOnEventLoop, .invalidConfiguration:
            return HTTPClientError(.invalidRequest, error.message, address: address, underlying: error)
        case .connectionRefused:
            return HTTPClientError(
                .connect, "nothing listens there (connection refused)", address: address, underlying: error)
        case .hostUnreachable:
            return HTTPClientError(
                .connect, "the address is unreachable; check it and the network", address: address,
                underlying: error)
        case .connectTimeout:
            return HTTPClientError(
                .connect, "the system gave up connecting (connection timed out)", address: address,
                underlying: error)
        default:
            return HTTPClientError(.connect, error.message, address: address, underlying: error)
        }
    }

    /// A failure while sending or reading the head.
    private static func exchangeFailure(
        _ error: TransportError, phase: HTTPClientError.Phase, address: SocketAddress, timeout: Duration
    ) -> HTTPClientError {
        switch error.kind {
        case .deadlineExceeded:
            return timedOut(phase, address: address, timeout: timeout, underlying: error)
        case .tls:
            return HTTPClientError(.tls, error.description, address: address, underlying: error)
        default:
            let when = phase == .sending ? "while the request was being sent" : "before a complete response head"
            return HTTPClientError(
                .closedEarly, "the connection ended \(when): \(error.message)", address: address, underlying: error)
        }
    }

    private static func timedOut(
        _ phase: HTTPClientError.Phase, address: SocketAddress, timeout: Duration, underlying: TransportError
    ) -> HTTPClientError {
        HTTPClientError(
            .timeout, "the exchange did not complete within \(timeout): the time ran out \(phase.clause)",
            address: address, phase: phase, underlying: underlying)
    }
}

extension HTTPClientError {
    /// The same error, naming `address`.
    fileprivate func about(_ address: SocketAddress) -> HTTPClientError {
        var copy = self
        copy.address = address
        return copy
    }
}
