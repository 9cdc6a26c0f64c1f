public import SupportUtilities

/// Where deliveries may go once a host name is resolved: never to a link-local, cloud-metadata, loopback, unspecified
/// or multicast address (a webhook URL must not reach the node's own host or its cloud's metadata service, SSRF),
/// unless the operator allows a prefix for it (`--webhook-allow-address`). Private networks (10/8, 172.16/12,
/// 192.168/16, fc00::/7) are allowed: helpdesks often run inside them.
public struct WebhookAddressPolicy: Sendable, Hashable {
    /// Refused unless allowed.
    public static let refused: [(prefix: IPPrefix, what: String)] = [
        ("169.254.169.254/32", "a cloud metadata service's address"),
        ("fd00:ec2::254/128", "a cloud metadata service's address"),
        ("100.100.100.200/32", "a cloud metadata service's address"),
        ("169.254.0.0/16", "a link-local address"),
        ("fe80::/10", "a link-local address"),
        ("127.0.0.0/8", "a loopback address (this host)"),
        ("::1/128", "a loopback address (this host)"),
        ("0.0.0.0/8", "an unspecified address"),
        ("::/128", "an unspecified address"),
        ("224.0.0.0/4", "a multicast address"),
        ("ff00::/8", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
    ].map { (IPPrefix($0.0)!, $0.1) }  // safe: literals above

    /// Prefixes the operator allows although they are refused by default.
    public var allowed: [IPPrefix]

    public init(allowed: [IPPrefix] = []) { self.allowed = allowed }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.allowed == rhs.allowed }
    public func hash(into hasher: inout Hasher) { hasher.combine(allowed) }

    /// Nil when a delivery may go to `address` (IP text), else what the address is. An IPv6 address that carries an
    /// IPv4 address — IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002::/16`) or
    /// IPv4-compatible (`::a.b.c.d`) — is judged by that IPv4 address too, so `64:ff9b::a9fe:a9fe` does not reach
    /// the metadata service.
    public func refusal(of address: String) -> String? {
        let canonical = IPAddressText.canonical(address) ?? address
        if allowed.contains(where: { $0.contains(canonical) }) { return nil }
        if let what = Self.refused.first(where: { $0.prefix.contains(canonical) })?.what { return what }
        guard let embedded = Self.embeddedIPv4(canonical) else { return nil }
        if allowed.contains(where: { $0.contains(embedded) }) { return nil }
        return Self.refused.first(where: { $0.prefix.contains(embedded) }).map { "\($0.what) (inside \(canonical))" }
    }

    private static let nat64 = [IPPrefix("64:ff9b::/96")!, IPPrefix("64:ff9b:1::/48")!]  // safe: literals
    private static let sixToFour = IPPrefix("2002::/16")!  // safe: literal
    private static let compatible = IPPrefix("::/96")!  // safe: literal

    /// The IPv4 address inside an IPv6 address of the forms above, as text; nil otherwise.
    static func embeddedIPv4(_ address: String) -> String? {
        guard address.contains(":"), let bytes = IPAddressText.bytes(address), bytes.count == 16 else { return nil }
        let four: ArraySlice<UInt8>
        if nat64.contains(where: { $0.contains(address) }) || compatible.contains(address) {
            four = bytes[12..<16]
        } else if sixToFour.contains(address) {
            four = bytes[2..<6]
        } else {
            return nil
        }
        return four.map(String.init).joined(separator: ".")
    }
}
