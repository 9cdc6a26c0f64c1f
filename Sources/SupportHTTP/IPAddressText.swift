import Glibc

/// IP addresses as text, in one canonical form, so that the same address always makes the same key (per-address
/// connection caps, back-off, trusted proxies).
public enum IPAddressText {
    /// The canonical text of an IPv4 or IPv6 address (`inet_ntop`'s form; an IPv4-mapped IPv6 address becomes its
    /// IPv4 address), or nil when `text` is not an IP address (names, ports, brackets and zone ids are refused).
    public static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return format(AF_INET, &v4, MemoryLayout<in_addr>.size) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])"
        }
        return format(AF_INET6, &v6, MemoryLayout<in6_addr>.size)
    }

    private static func format(_ family: Int32, _ address: UnsafeRawPointer, _ size: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
