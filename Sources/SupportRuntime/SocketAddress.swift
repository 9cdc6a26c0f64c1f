internal import CLinuxShims
import SupportUtilities
internal import COpenSSL
import Glibc

/// An IPv4 or IPv6 address with a port, as the kernel wants it.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool { lhs.description == rhs.description }
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }

    public var family: Int32 { Int32(storage.ss_family) }

    /// The IP address alone, e.g. `127.0.0.1` or `::1`.
    public var host: String {
        var copy = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: UInt8.self, capacity: MemoryLayout<sockaddr_storage>.size) { raw in
                if family == AF_INET {
                    let address = UnsafeRawPointer(raw).assumingMemoryBound(to: sockaddr_in.self)
                    var inner = address.pointee.sin_addr
                    inet_ntop(AF_INET, &inner, &text, socklen_t(text.count))
                } else {
                    let address = UnsafeRawPointer(raw).assumingMemoryBound(to: sockaddr_in6.self)
                    var inner = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &inner, &text, socklen_t(text.count))
                }
                return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
    }

    public var port: UInt16 {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            UnsafeRawPointer(pointer).withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        }
    }

    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Resolves `host` (name or literal) and `port` on the calling thread.
    ///
    /// Blocks in `getaddrinfo` for a name: on an event-loop thread that is refused with `blocking_on_event_loop`. From
    /// async code use ``NameResolver/resolve(host:port:)``, which runs the lookup on threads of its own. IP literals
    /// (and, with `passive`, the empty host: any address) never block.
    public static func resolve(host: String, port: UInt16, passive: Bool = false) throws(TransportError) -> [SocketAddress] {
        if let literal = literal(host: host, port: port) { return [literal] }
        guard !EventLoop.isOnLoopThread || (passive && host.isEmpty) else {
            throw TransportError(
                .blockingOnEventLoop,
                "cannot look up '\(host)' on an event-loop thread: getaddrinfo blocks; use NameResolver or an IP address")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw TransportError(
                .nameResolution, "cannot resolve '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { destination in
                    destination.copyMemory(
                        from: UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                }
                addresses.append(SocketAddress(storage: storage, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }

    /// An IPv4 or IPv6 literal as an address, without asking the resolver.
    package static func literal(host: String, port: UInt16) -> SocketAddress? {
        var storage = sockaddr_storage()
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = v4
            withUnsafeMutableBytes(of: &storage) { destination in
                withUnsafeBytes(of: &address) { destination.copyMemory(from: $0) }
            }
            return SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = v6
            withUnsafeMutableBytes(of: &storage) { destination in
                withUnsafeBytes(of: &address) { destination.copyMemory(from: $0) }
            }
            return SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
        return nil
    }

    /// The local or peer address of a socket.
    package static func of(_ fd: Int32, peer: Bool) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
            }
        }
        return status == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
