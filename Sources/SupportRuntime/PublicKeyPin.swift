import SupportUtilities
/// A SHA-256 fingerprint of a peer's DER SubjectPublicKeyInfo: what `certs/make-dev-certs.sh` prints.
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let digest: [UInt8]

    /// A pin from its 32 bytes.
    public init(digest: [UInt8]) throws(TransportError) {
        guard digest.count == 32 else {
            throw TransportError(.invalidPin, "a SHA-256 pin has 32 bytes, this one has \(digest.count)")
        }
        self.digest = digest
    }

    /// A pin from text: `sha256/<base64>` or 64 hexadecimal digits (colons allowed).
    public init(_ text: String) throws(TransportError) {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("sha256/") {
            guard let bytes = Base64.decode(String(trimmed.dropFirst("sha256/".count))) else {
                throw TransportError(.invalidPin, "pin '\(text)' is not valid base64 after 'sha256/'")
            }
            try self.init(digest: bytes)
            return
        }
        let hex = trimmed.filter { $0 != ":" }
        guard hex.count == 64, let bytes = Hex.decode(hex) else {
            throw TransportError(
                .invalidPin, "pin '\(text)' is neither 'sha256/<base64>' nor 64 hexadecimal digits")
        }
        try self.init(digest: bytes)
    }

    /// The `sha256/<base64>` form.
    public var description: String { "sha256/" + Base64.encode(digest) }
}

extension String {
    package var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
