import COpenSSL
import Foundation
import Glibc
import SupportWire
import SupportLink
import SupportRuntime
import SupportUtilities
import TestSupport
import SupportVocabulary

// Importing COpenSSL into this test target makes the compiler attribute <sys/socket.h>'s declarations to it in the
// files compiled with this one: every file here that uses socket constants (SOCK_STREAM, RLIMIT_NOFILE) imports it too.

/// A TLS client outside our stack: a blocking socket and OpenSSL with the ALPN list a test chooses (or none), no
/// certificate check, bytes written and read by hand. It sees exactly how the other side ends the connection: a TLS
/// close_notify, a bare TCP EOF, or a reset.
///
/// Not thread-safe: one blocking helper at a time uses a peer.
final class RawTLSPeer: @unchecked Sendable {
    // @unchecked: `ssl`, `received` and `end` are used by one thread at a time (the test's blocking helper).
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// How the other side ended the connection.
    enum End: Equatable, Sendable {
        case closeNotify
        /// TCP EOF without close_notify.
        case eof
        case reset
        case error(String)
    }

    let fd: Int32
    private let ssl: OpaquePointer
    private let context: OpaquePointer
    /// Every byte received, in order.
    private(set) var received: [UInt8] = []
    private(set) var end: End?

    /// TCP connect to 127.0.0.1:`port`, then the TLS handshake offering `alpn` (nil: no ALPN extension at all).
    /// Throws with OpenSSL's reasons when the handshake fails.
    init(port: UInt16, alpn: [String]? = ["rsup/1"]) throws(Failure) {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw Failure(description: "SSL_CTX_new") }
        SSL_CTX_set_verify(context, rs_SSL_VERIFY_none(), nil)
        if let alpn {
            let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            _ = SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count))
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        Self.setTimeout(fd, .seconds(10))
        guard fd >= 0, connected == 0, let ssl = SSL_new(context) else {
            let text = String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            SSL_CTX_free(context)
            throw Failure(description: "connect: \(text)")
        }
        SSL_set_fd(ssl, fd)
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            let reasons = Self.drainErrors()
            SSL_free(ssl)
            SSL_CTX_free(context)
            Glibc.close(fd)
            throw Failure(description: "TLS handshake failed: \(reasons)")
        }
        self.fd = fd
        self.ssl = ssl
        self.context = context
        // Reads wait at most 20 ms at a time; callers loop until their own deadline.
        Self.setTimeout(fd, .milliseconds(20))
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
        Glibc.close(fd)
    }

    /// The ALPN protocol the server selected, if any.
    var selectedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Writes `bytes` through TLS. False when the connection is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
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
            ERR_clear_error()
            return false
        }
        return true
    }

    /// Sends `messages` as frames, in one write.
    @discardableResult
    func send(_ messages: Message...) -> Bool { send((try? frames(messages)) ?? []) }

    /// Sends our close_notify (and nothing more after it); reading goes on.
    func sendCloseNotify() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Reads until the other side ends the connection or `timeout` passes; returns how it ended, nil on timeout.
    func readUntilEnd(timeout: Duration) -> End? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while end == nil, clock.now < deadline { readOnce() }
        return end
    }

    /// Reads until `messages` holds at least `count` messages, the connection ends, or `timeout` passes.
    func readMessages(_ count: Int, timeout: Duration) -> [Message] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while messages.count < count, end == nil, clock.now < deadline { readOnce() }
        return messages
    }

    /// The complete frames received so far, decoded (a trailing partial frame is left out).
    var messages: [Message] {
        var decoder = FrameDecoder(maxPayloadLength: WireLimits.largestMaxFrameSize)
        decoder.append(received)
        var messages: [Message] = []
        while let message = try? decoder.nextMessage() { messages.append(message) }
        return messages
    }

    private func readOnce() {
        guard end == nil else { return }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        ERR_clear_error()
        let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        if count > 0 {
            received += buffer[0..<Int(count)]
            return
        }
        let savedErrno = errno
        let error = SSL_get_error(ssl, count)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return
        case SSL_ERROR_ZERO_RETURN:
            end = .closeNotify
        case SSL_ERROR_SYSCALL where savedErrno == EAGAIN || savedErrno == EWOULDBLOCK || savedErrno == EINTR:
            return
        case SSL_ERROR_SYSCALL where savedErrno == ECONNRESET:
            end = .reset
        case SSL_ERROR_SYSCALL:
            end = .eof
        default:
            let reasons = Self.drainErrors()
            end = reasons.contains("unexpected eof") ? .eof : .error(reasons)
        }
        ERR_clear_error()
    }

    private static func drainErrors() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) { reasons.append(String(cString: reason)) }
        }
        return reasons.joined(separator: "; ")
    }

    private static func setTimeout(_ fd: Int32, _ duration: Duration) {
        let microseconds =
            duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        var interval = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// Runs blocking work on its own thread, so neither the cooperative pool nor the loops wait for it.
func blockingWork<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
