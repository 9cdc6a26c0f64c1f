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

    /// Nil when a delivery may go to `address` (IP text; an IPv4-mapped IPv6 address counts as its IPv4 address),
    /// else what the address is.
    public func refusal(of address: String) -> String? {
        let canonical = IPAddressText.canonical(address) ?? address
        if allowed.contains(where: { $0.contains(canonical) }) { return nil }
        return Self.refused.first(where: { $0.prefix.contains(canonical) })?.what
    }
}
