import Foundation
import SupportHTTP
import SupportUtilities

/// Who a request comes from, for back-off and the audit trail (SPEC §13).
///
/// `X-Forwarded-For` is ignored unless the direct peer is one of the configured trusted proxies: anyone can send the
/// header, so believing it from anyone would let a client pick the address its failures count against. When the peer
/// is a trusted proxy, the client is the right-most address of the `X-Forwarded-For` list (all its fields, in order)
/// that is not itself a trusted proxy: each proxy appends the address it received the request from, so the entries
/// to the right of the first untrusted one were written by proxies we trust, and everything to its left was written
/// by someone we cannot check. If every entry is a trusted proxy, the left-most one is the client. If that entry is
/// not an IP address, or the header is absent, the peer itself is the client.
public struct ClientAddressResolver: Sendable, Hashable {
    /// Canonical addresses of the trusted proxies.
    public let trustedProxies: Set<String>

    /// Nil when an entry of `trustedProxies` is not an IP address.
    public init?(trustedProxies: [String]) {
        var canonical: Set<String> = []
        for proxy in trustedProxies {
            guard let address = IPAddressText.canonical(proxy) else { return nil }
            canonical.insert(address)
        }
        self.trustedProxies = canonical
    }

    /// The client address of a request from `peer` (the TCP peer's address) with these `X-Forwarded-For` values.
    public func clientAddress(peer: String?, forwardedFor: [String]) -> String {
        guard let peer else { return "unknown" }
        let direct = IPAddressText.canonical(peer) ?? peer
        guard trustedProxies.contains(direct) else { return direct }
        let entries = forwardedFor.flatMap { $0.split(separator: ",") }.map { entry in
            String(entry).trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { return direct }
        for entry in entries.reversed() {
            guard let address = IPAddressText.canonical(entry) else { return direct }
            if !trustedProxies.contains(address) { return address }
        }
        return IPAddressText.canonical(entries[0]) ?? direct
    }
}
