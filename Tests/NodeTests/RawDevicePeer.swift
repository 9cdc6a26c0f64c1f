import COpenSSL
import Foundation
import Glibc
import SupportWire
import DeviceNode
import SampleAppModel
import SupporterNode
import SupportSession
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary

/// A device peer outside our stack, as an attacker or a scripted device would be: a blocking socket bound to a
/// chosen loopback source address, OpenSSL with ALPN `rsup/1` and no certificate check, and frames written and read
/// by hand (``FrameEncoder`` / ``FrameDecoder``). It sees exactly what the node sends: REGISTER_RESULT, GOAWAY and its
/// reason, PONG, the moment the connection closes.
///
/// Not thread-safe: one thread (or one blocking helper at a time) uses a peer.
final class RawDevicePeer: @unchecked Sendable {
    // @unchecked: `ssl`, `decoder`, `received` and `closedAt` are used by one thread at a time (the blocking helper
    // that owns the peer); tests hand a peer from one helper to the next only after the first returned.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    enum Event: Sendable {
        case message(Message)
        case closed
    }

    nonisolated(unsafe) private static let context: OpaquePointer = {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
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
    /// Every message received, in order.
    private(set) var received: [Message] = []
    /// When the connection was seen closed (EOF, reset, close_notify, or a frame that did not decode).
    private(set) var closedAt: ContinuousClock.Instant?
    private var released = false

    /// TCP connect from `source` to 127.0.0.1:`port`, then the TLS handshake. Throws when the node refuses the
    /// connection (it closes it before or during the handshake) or nothing answers within `timeout`.
    init(port: UInt16, from source: String = "127.0.0.1", timeout: Duration = .seconds(10)) throws(Failure) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        Self.setTimeout(fd, timeout)
        var local = Self.address(source, port: 0)
        var remote = Self.address("127.0.0.1", port: port)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected =
            bound == 0
            && withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0
        guard connected, let ssl = SSL_new(Self.context) else {
            let text = String(cString: strerror(errno))
            Glibc.close(fd)
            throw Failure(description: "connect from \(source): \(text)")
        }
        SSL_set_fd(ssl, fd)
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            let error = SSL_get_error(ssl, -1)
            SSL_free(ssl)
            Glibc.close(fd)
            ERR_clear_error()
            throw Failure(description: "TLS handshake ended by the node (SSL error \(error))")
        }
        self.fd = fd
        self.ssl = ssl
        // From now on reads wait at most 20 ms at a time; callers loop until their own deadline.
        Self.setTimeout(fd, .milliseconds(20))
    }

    deinit { close() }

    /// Opens a connection and exchanges HELLO / HELLO_ACK; throws when the node refuses it or answers otherwise.
    static func helloed(
        port: UInt16, from source: String = "127.0.0.1", name: String = "raw-peer", keepaliveMilliseconds: UInt32 = 15_000,
        features: FeatureSet = []
    ) throws(Failure) -> RawDevicePeer {
        let peer = try RawDevicePeer(port: port, from: source)
        peer.send(
            .hello(Hello(role: .device, nodeName: name, features: features, keepaliveMilliseconds: keepaliveMilliseconds)))
        guard case .message(.helloAck) = peer.next(timeout: .seconds(10)) else {
            throw Failure(description: "no HELLO_ACK; received \(peer.received), closed: \(peer.closedAt != nil)")
        }
        return peer
    }

    /// Sends `messages` as frames in one write. False when the connection is gone.
    @discardableResult
    func send(_ messages: Message...) -> Bool { send(messages) }

    @discardableResult
    func send(_ messages: [Message]) -> Bool {
        guard !released, closedAt == nil else { return false }
        var bytes: [UInt8] = []
        for message in messages { try! encoder.encode(message, into: &bytes) }
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
            markClosed()
            return false
        }
        return true
    }

    /// The next message, `.closed` once the connection is gone, or nil when nothing came within `timeout`.
    func next(timeout: Duration) -> Event? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if let message = decoded() { return .message(message) }
            if closedAt != nil { return .closed }
            if clock.now >= deadline { return nil }
            readOnce()
        }
    }

    /// Reads until the connection closes or `timeout` passes; every message on the way is in ``received``.
    /// Returns whether it closed.
    @discardableResult
    func drainUntilClosed(timeout: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if case .closed = next(timeout: deadline - clock.now) { return true }
        }
        return closedAt != nil
    }

    /// Reads what has arrived, without waiting more than one short read.
    func poll() {
        guard closedAt == nil, !released else { return }
        readOnce()
        while decoded() != nil {}
    }

    var isClosed: Bool { closedAt != nil }

    /// The GOAWAY the node sent, if any.
    var goAway: GoAway? {
        received.lazy.compactMap { if case .goAway(let goAway) = $0 { goAway } else { nil } }.first
    }

    /// Every REGISTER_RESULT received, in order.
    var registerResults: [RegisterResult] {
        received.compactMap { if case .registerResult(let result) = $0 { result } else { nil } }
    }

    /// Closes the connection (close_notify, then the socket) if it is still open.
    func close() {
        guard !released else { return }
        released = true
        if closedAt == nil { SSL_shutdown(ssl) }
        SSL_free(ssl)
        Glibc.close(fd)
    }

    // MARK: private

    private func decoded() -> Message? {
        do {
            guard let message = try decoder.nextMessage() else { return nil }
            received.append(message)
            return message
        } catch {
            markClosed()
            return nil
        }
    }

    private func readOnce() {
        guard !released, closedAt == nil else { return }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        ERR_clear_error()
        let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        if count > 0 {
            decoder.append(buffer[0..<Int(count)])
            return
        }
        let error = SSL_get_error(ssl, count)
        // A read that timed out (SO_RCVTIMEO) or only took a TLS 1.3 ticket: nothing yet.
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
        if error == SSL_ERROR_SYSCALL, errno == EAGAIN || errno == EINTR { return }
        ERR_clear_error()
        markClosed()
    }

    private func markClosed() {
        if closedAt == nil { closedAt = ContinuousClock.now }
    }

    private static func setTimeout(_ fd: Int32, _ duration: Duration) {
        let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        var interval = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
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

/// Runs blocking work (raw sockets, a child's pipe) on its own thread, so neither the cooperative pool nor the
/// node's loops wait for it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}
