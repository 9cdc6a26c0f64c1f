#if canImport(Glibc)
import Glibc
#endif
import COpenSSL
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupporterNode
import SupporterREST
import SupportPostgres

/// The `abuse` group's device peer: a blocking socket bound to a chosen loopback source address, OpenSSL (ALPN
/// `rsup/1`, no certificate check) and frames written and read by hand — what an attacker script would be, and lean
/// enough to open thousands. One thread uses a peer at a time.
final class AbuseRawPeer: @unchecked Sendable {
    // @unchecked: one thread at a time uses a peer — the attack's thread that set it up hands it to exactly one
    // background thread and never touches it again.
    nonisolated(unsafe) private static let context: OpaquePointer = {
        _ = signal(SIGPIPE, SIG_IGN)
        let context = SSL_CTX_new(TLS_client_method())!
        SSL_CTX_set_verify(context, rs_SSL_VERIFY_none(), nil)
        let alpn: [UInt8] = [6] + Array("rsup/1".utf8)
        _ = SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count))
        return context
    }()

    let fd: Int32
    private let ssl: OpaquePointer
    private var decoder = FrameDecoder()
    private let encoder = FrameEncoder()
    private(set) var isClosed = false
    private var released = false

    /// TCP connect from `source` to 127.0.0.1:`port` and the TLS handshake; nil when the node closes the connection
    /// first (refused) or anything fails.
    init?(port: UInt16, from source: String) {
        guard let fd = AbuseRawPeer.tcpConnect(port: port, from: source) else { return nil }
        AbuseRawPeer.setTimeout(fd, milliseconds: 10_000)
        guard let ssl = SSL_new(AbuseRawPeer.context) else {
            close(fd)
            return nil
        }
        SSL_set_fd(ssl, fd)
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            ERR_clear_error()
            SSL_free(ssl)
            close(fd)
            return nil
        }
        self.fd = fd
        self.ssl = ssl
        AbuseRawPeer.setTimeout(fd, milliseconds: 20)
    }

    deinit { shut() }

    /// A plain TCP connection from `source` to 127.0.0.1:`port` (TCP_NODELAY), or nil.
    static func tcpConnect(port: UInt16, from source: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var local = address(source, port: 0)
        var remote = address("127.0.0.1", port: port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        let connected =
            bound == 0
            && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
                == 0
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// HELLO, then waits for HELLO_ACK; false when the node answered otherwise or closed.
    func hello(name: String, extensions: ProtocolExtensions = .none) -> Bool {
        let hello = Hello(role: .device, nodeName: name, features: extensions.announcement, keepaliveMilliseconds: 120_000)
        guard send([.hello(hello)]) else { return false }
        if case .helloAck = next(timeoutMilliseconds: 10_000) { return true }
        return false
    }

    @discardableResult
    func send(_ messages: [Message]) -> Bool {
        guard !isClosed else { return false }
        var bytes: [UInt8] = []
        for message in messages { try? encoder.encode(message, into: &bytes) }
        var sent = 0
        while sent < bytes.count {
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + sent, Int32($0.count - sent)) }
            if count > 0 {
                sent += Int(count)
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ { continue }
            isClosed = true
            return false
        }
        return true
    }

    /// The next message; nil when the connection closed or nothing came within the timeout.
    func next(timeoutMilliseconds: Int) -> Message? {
        let deadline = ContinuousClock.now + .milliseconds(timeoutMilliseconds)
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            do {
                if let message = try decoder.nextMessage() { return message }
            } catch {
                isClosed = true
                return nil
            }
            if isClosed { return nil }
            ERR_clear_error()
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 {
                decoder.append(buffer[0..<Int(count)])
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE {
                // A read timed out (SO_RCVTIMEO, 20 ms) or only took a TLS 1.3 ticket.
                if ContinuousClock.now >= deadline { return nil }
                continue
            }
            ERR_clear_error()
            isClosed = true
        }
    }

    /// Whether the node closed the connection (a non-blocking look).
    func pollClosed() -> Bool {
        guard !isClosed else { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, 0) > 0 { _ = next(timeoutMilliseconds: 0) }
        return isClosed
    }

    /// close_notify and close.
    func shut() {
        guard !released else { return }
        released = true
        if !isClosed { SSL_shutdown(ssl) }
        SSL_free(ssl)
        close(fd)
    }

    static func setTimeout(_ fd: Int32, milliseconds: Int) {
        var interval = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func address(_ host: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = port.bigEndian
        return address
    }
}
