import Glibc

/// IP addresses as text, in one canonical form, so that the same address always makes the same key (per-address
/// connection caps, back-off, trusted proxies).
public enum IPAddressText {
    /// The canonical text of an IPv4 or IPv6 address (`inet_ntop`'s form; an IPv4-mapped IPv6 address becomes its
    /// IPv4 address), or nil when `text` is not an IP address (names, ports, brackets and zone ids are refused).
    public static func canonical(_ text: String) -> String? {
        switch parse(text) {
        case .v4(var address): format(AF_INET, &address, MemoryLayout<in_addr>.size)
        case .v6(var address): format(AF_INET6, &address, MemoryLayout<in6_addr>.size)
        case nil: nil
        }
    }

    /// The key an address's limits count against (SPEC §13.1, "source address"): an IPv4 address itself (an
    /// IPv4-mapped IPv6 address counts as its IPv4 address); for IPv6, the /64 prefix it is in, written
    /// `2001:db8:1:2::/64`. One host or subscriber is normally given a whole /64 and can send from any address in it,
    /// so a key per IPv6 address would let one peer multiply every per-address cap and back-off by 2⁶⁴. Text that is
    /// not an IP address (`unknown`) is its own key.
    public static func sourceKey(_ text: String) -> String {
        switch parse(text) {
        case .v4(var address): return format(AF_INET, &address, MemoryLayout<in_addr>.size) ?? text
        case .v6(var address):
            withUnsafeMutableBytes(of: &address) { bytes in
                for index in 8..<16 { bytes[index] = 0 }
            }
            return (format(AF_INET6, &address, MemoryLayout<in6_addr>.size) ?? text) + "/64"
        case nil: return text
        }
    }

    private enum Parsed {
        case v4(in_addr)
        case v6(in6_addr)
    }

    /// The address's bytes (4 for IPv4, an IPv4-mapped IPv6 address included; 16 for IPv6), or nil.
    public static func bytes(_ text: String) -> [UInt8]? {
        switch parse(text) {
        case .v4(let address): withUnsafeBytes(of: address) { Array($0) }
        case .v6(let address): withUnsafeBytes(of: address) { Array($0) }
        case nil: nil
        }
    }

    private static func parse(_ text: String) -> Parsed? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return .v4(v4) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes[12..<16]) }
            return .v4(v4)
        }
        return .v6(v6)
    }

    private static func format(_ family: Int32, _ address: UnsafeRawPointer, _ size: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
