/// A webhook endpoint's URL, checked: `https://host[:port]/path?query`, or `http://…` only for a host the operator
/// allows plain HTTP for. No user name or password, no fragment, at most 2,048 bytes; the host is a DNS name, an IPv4
/// address or a bracketed IPv6 address. Where it may resolve to is checked at each delivery (``WebhookAddressPolicy``
/// in SupporterWebhooks): DNS can change after the URL was accepted.
public struct WebhookURL: Sendable, Hashable, CustomStringConvertible {
    /// Why a URL was refused (the StoreError shape).
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public struct Kind: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable { case malformed, plainHTTP }
            private let base: Base
            private init(_ base: Base) { self.base = base }
            /// Not an absolute http(s) URL we accept.
            public static let malformed = Kind(.malformed)
            /// `http://` to a host the operator did not allow plain HTTP for.
            public static let plainHTTP = Kind(.plainHTTP)
            public var description: String { base.rawValue }
        }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    /// The URL as given.
    public let text: String
    /// `https` (TLS) or `http`.
    public let isTLS: Bool
    /// The host as written, lowercased, without brackets for IPv6.
    public let host: String
    public let port: UInt16
    /// The request target: the path (at least `/`) and the query.
    public let target: String

    /// The Host header: the host (bracketed for IPv6), with the port unless it is the scheme's default.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    public var description: String { text }

    /// Checks `text`; `plainHTTPHosts` are the hosts (lowercase) an `http://` URL may name.
    public init(_ text: String, plainHTTPHosts: Set<String> = []) throws(Refusal) {
        func refuse(_ why: String) -> Refusal {
            Refusal(kind: .malformed, message: "the webhook URL '\(Self.shown(text))' \(why)")
        }
        guard text.utf8.count <= 2048 else { throw refuse("is longer than 2,048 bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw refuse("holds a space, a control character or a non-ASCII character (percent-encode it)")
        }
        let lower = text.lowercased()
        let isTLS: Bool
        let rest: Substring
        if lower.hasPrefix("https://") {
            isTLS = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            isTLS = false
            rest = text.dropFirst(7)
        } else {
            throw refuse("is not an https:// URL")
        }
        guard !rest.contains("#") else { throw refuse("has a fragment (#…), which is never sent") }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty || target.hasPrefix("?") { target = "/" + target }
        guard !authority.contains("@") else { throw refuse("names a user or password; put a secret in the path instead") }
        let host: String
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw refuse("has an unclosed [ in its host") }
            host = String(authority[authority.index(after: authority.startIndex)..<close]).lowercased()
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw refuse("has text after its bracketed host") }
                portText = after.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw refuse("has a bracketed host that is not an IPv6 address")
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = String(parts[0]).lowercased()
            if parts.count == 2 { portText = parts[1] }
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            guard !host.isEmpty, host.utf8.count <= 253,
                labels.allSatisfy({ label in
                    !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                        && label.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" }
                })
            else { throw refuse("has no valid host name") }
        }
        var port: UInt16 = isTLS ? 443 : 80
        if let portText {
            guard let given = UInt16(portText), given > 0, portText.allSatisfy(\.isNumber) else {
                throw refuse("has a port that is not 1–65535")
            }
            port = given
        }
        if !isTLS, !plainHTTPHosts.contains(host) {
            throw Refusal(
                kind: .plainHTTP,
                message:
                    "the webhook URL '\(Self.shown(text))' is plain http://; deliveries carry session data and are "
                    + "sent over https:// only, unless the operator allows plain HTTP for the host '\(host)' "
                    + "(--webhook-allow-http \(host))")
        }
        self.text = text
        self.isTLS = isTLS
        self.host = host
        self.port = port
        self.target = target
    }

    /// `text` cut for a message (the URL itself was checked to be printable ASCII, or is being refused for not).
    private static func shown(_ text: String) -> String {
        let printable = String(String.UnicodeScalarView(text.unicodeScalars.prefix(200).map { $0.value > 0x20 && $0.value < 0x7F ? $0 : "?" }))
        return text.unicodeScalars.count > 200 ? printable + "…" : printable
    }
}
