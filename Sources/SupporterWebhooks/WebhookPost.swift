import Foundation
public import SupporterModel
public import SupportRuntime
import SupportHTTP
import SupportUtilities

/// One POST of one delivery, blocking, on a sender thread: the host looked up (bounded by the system resolver's own
/// time limits), every address checked against the ``WebhookAddressPolicy`` (only allowed ones are used, so a DNS
/// answer cannot smuggle the metadata address in), then the request within one deadline — connecting to the allowed
/// addresses in turn — and a bounded read of the answer (no redirect is followed: a 3xx is a failed attempt).
public enum WebhookPost {
    /// What one attempt came to.
    public enum Result: Sendable, Equatable {
        /// Answered 2xx.
        case delivered(status: Int)
        /// Answered, but not 2xx: the status and the start of the body (for the delivery log).
        case answered(status: Int, body: String)
        /// No answer: why (lookup, refused address, connect, TLS, timeout, malformed response).
        case failed(String)

        public var isDelivered: Bool { if case .delivered = self { true } else { false } }
        public var status: Int? {
            switch self {
            case .delivered(let status), .answered(let status, _): status
            case .failed: nil
            }
        }
        /// The delivery log's `last_error` (nil when delivered).
        public var error: String? {
            switch self {
            case .delivered: nil
            case .answered(let status, let body):
                body.isEmpty ? "the receiver answered \(status)" : "the receiver answered \(status): \(body)"
            case .failed(let why): why
            }
        }
    }

    /// Sends `body` with `headers` to `url`. `resolve` is the blocking name lookup (the system's, in production).
    public static func send(
        to url: WebhookURL, headers: [(name: String, value: String)], body: [UInt8], settings: WebhookSettings,
        tls: TLSContext,
        resolve: (String, UInt16) throws(TransportError) -> [SocketAddress] = { host, port throws(TransportError) in
            try SocketAddress.resolve(host: host, port: port)
        }
    ) -> Result {
        let addresses: [SocketAddress]
        do { addresses = try resolve(url.host, url.port) } catch {
            return .failed("cannot look up \(url.host): \(error.message)")
        }
        var refusals: [String] = []
        let allowed = addresses.filter { address in
            guard let what = settings.addressPolicy.refusal(of: address.host) else { return true }
            refusals.append("\(address.host) is \(what)")
            return false
        }
        guard !allowed.isEmpty else {
            let list = refusals.isEmpty ? "no address" : refusals.joined(separator: "; ")
            return .failed(
                "refused to deliver to \(url.host): \(list); an operator may allow it with --webhook-allow-address")
        }
        var requestHeaders = headers
        requestHeaders.append(("Content-Type", "application/json"))
        let request = HTTPClientRequest(
            method: "POST", target: url.target, host: url.hostHeader, headers: requestHeaders, body: body)
        // The addresses in the resolver's order, all within one time limit; only a failed connect moves on to the next
        // (once the receiver has the request, trying elsewhere could deliver it twice).
        let deadline = ContinuousClock.now + settings.timeout
        var lastError: HTTPClientError?
        for address in allowed {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            do throws(HTTPClientError) {
                return outcome(
                    try HTTPClient.exchange(
                        request, to: address, tls: url.isTLS ? tls : nil, serverName: url.isTLS ? url.host : nil,
                        timeout: left, maxHeaderBytes: settings.maxResponseHeadBytes,
                        maxBodyBytes: settings.maxResponseBodyBytes))
            } catch {
                lastError = error
                guard error.kind == .connect else { break }
            }
        }
        return .failed(lastError?.description ?? "no time was left to reach \(url.host)")
    }

    /// What an answer means for the delivery.
    private static func outcome(_ response: HTTPClientResponse) -> Result {
        if (200..<300).contains(response.status) { return .delivered(status: response.status) }
        let text = String(decoding: response.bodyPrefix.prefix(300), as: UTF8.self)
        let printable = String(
            String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        return .answered(
            status: response.status,
            body: printable + (response.bodyPrefix.count > 300 || response.isBodyTruncated ? "…" : ""))
    }
}
