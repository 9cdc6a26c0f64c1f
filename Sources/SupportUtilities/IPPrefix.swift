/// An IP network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`), or one address (`192.0.2.7`, a /32 or /128):
/// who may read a node's metrics.
public struct IPPrefix: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    private let network: [UInt8]
    public let length: Int

    /// Nil when `text` is neither an address nor `address/length` with a length the family allows.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = IPAddressText.bytes(String(parts[0])) else { return nil }
        let length: Int
        if parts.count == 2 {
            guard let given = Int(parts[1]), parts[1].allSatisfy(\.isASCII), (0...bytes.count * 8).contains(given)
            else { return nil }
            length = given
        } else {
            length = bytes.count * 8
        }
        self.length = length
        network = Self.masked(bytes, length)
    }

    /// Whether `address` (text) is in this network; false for text that is not an address.
    public func contains(_ address: String) -> Bool {
        guard let bytes = IPAddressText.bytes(address), bytes.count == network.count else { return false }
        return Self.masked(bytes, length) == network
    }

    public var description: String {
        let address = network.count == 4
            ? network.map(String.init).joined(separator: ".")
            : IPAddressText.canonical(Self.v6Text(network)) ?? "?"
        return "\(address)/\(length)"
    }

    /// Loopback, IPv4 and IPv6: who may read metrics when nothing else is configured.
    public static let loopback: [IPPrefix] = [IPPrefix("127.0.0.0/8")!, IPPrefix("::1/128")!]

    private static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & ~(UInt8(0xFF) >> bits)
        }
    }

    private static func v6Text(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }
}
