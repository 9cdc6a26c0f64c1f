package import SupportRuntime

/// Why an outbound HTTP exchange (``HTTPClient``) failed: what was wrong, with which receiver, and the transport's
/// error underneath when there is one.
///
/// A struct over a small kind (the `StoreError` pattern), so kinds can be added without breaking callers that switch
/// on ``kind``.
package struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, coarsely, for callers that react differently (retry later, give up, tell an operator).
    package struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connect, tls, timeout
            case invalidRequest = "invalid_request", malformedResponse = "malformed_response"
            case headersTooLarge = "headers_too_large", closedEarly = "closed_early"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No TCP connection: refused (nothing listens), unreachable, or the system's own connect timeout (see
        /// ``HTTPClientError/underlying``). Nothing was sent.
        package static let connect = Kind(.connect)
        /// The TLS handshake failed: the certificate was refused (the message names why, e.g. "unable to get local
        /// issuer certificate" or "hostname mismatch"), no common version or suite, or a TLS error later on.
        package static let tls = Kind(.tls)
        /// The exchange did not complete within its time; ``HTTPClientError/phase`` says where it was.
        package static let timeout = Kind(.timeout)
        /// The request cannot be sent as given (a CR, LF or NUL in a header, a header the client sets itself, a TLS
        /// context an HTTP client cannot use); nothing was sent, no connection made.
        package static let invalidRequest = Kind(.invalidRequest)
        /// The response is not HTTP/1.x: a bad status line, a bad header line, an invalid Content-Length.
        package static let malformedResponse = Kind(.malformedResponse)
        /// The status line and header fields (interim 1xx responses included) are larger than the limit.
        package static let headersTooLarge = Kind(.headersTooLarge)
        /// The connection ended (closed or reset) before a complete status line and header fields arrived.
        package static let closedEarly = Kind(.closedEarly)

        package var description: String { base.rawValue }

        /// How a message of this kind begins, naming `receiver`.
        fileprivate func headline(_ receiver: String) -> String {
            switch base {
            case .connect: "cannot connect to \(receiver)"
            case .tls: "TLS with \(receiver) failed"
            case .timeout: "\(receiver) did not answer in time"
            case .invalidRequest: "the request for \(receiver) was not sent"
            case .malformedResponse: "\(receiver) sent a malformed response"
            case .headersTooLarge: "the response head from \(receiver) is too large"
            case .closedEarly: "\(receiver) closed the connection early"
            }
        }
    }

    /// Where an exchange was when its time ran out.
    package enum Phase: String, Hashable, Sendable, CustomStringConvertible {
        case connecting = "connecting"
        case tlsHandshake = "TLS handshake"
        case sending = "sending the request"
        case waitingForStatusLine = "waiting for the status line"
        case readingHeaders = "reading the headers"

        package var description: String { rawValue }

        /// The phase in a sentence: "the time ran out …".
        var clause: String {
            switch self {
            case .connecting: "while connecting"
            case .tlsHandshake: "during the TLS handshake"
            case .sending: "while sending the request"
            case .waitingForStatusLine: "waiting for the status line"
            case .readingHeaders: "while reading the headers"
            }
        }
    }

    /// What went wrong, coarsely.
    package var kind: Kind
    /// What was wrong, in words a person can act on.
    package var message: String
    /// The receiver, when the error concerns one (nil for a parser used alone).
    package var address: SocketAddress?
    /// For ``Kind/timeout``: where the exchange was.
    package var phase: Phase?
    /// The transport's error, when the failure came from the connection. Not part of equality.
    package var underlying: TransportError?

    package init(
        _ kind: Kind, _ message: String, address: SocketAddress? = nil, phase: Phase? = nil,
        underlying: TransportError? = nil
    ) {
        self.kind = kind
        self.message = message
        self.address = address
        self.phase = phase
        self.underlying = underlying
    }

    package static func == (lhs: HTTPClientError, rhs: HTTPClientError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.address == rhs.address && lhs.phase == rhs.phase
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(message)
        hasher.combine(address)
        hasher.combine(phase)
    }

    /// `127.0.0.1:8443 sent a malformed response: the status line 'FOO' is not HTTP/1.x NNN`.
    package var description: String {
        kind.headline(address?.description ?? "the receiver") + ": " + message
    }
}
