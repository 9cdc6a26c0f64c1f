package import SupportUtilities
internal import COpenSSL
import Glibc

/// One TCP connection, TLS optional, for a thread that may block (never an event loop, never Swift's cooperative
/// pool): every operation waits with `poll(2)` on a non-blocking socket, at most until an absolute deadline on the
/// monotonic clock, so a slow or silent peer costs a bounded time. For outbound requests made from threads of their
/// own, such as webhook deliveries.
///
/// Not thread-safe: one thread uses it at a time. An operation whose deadline has already passed throws at once, even
/// when it could have finished without waiting, so a peer that trickles bytes cannot stretch a deadline. Timeouts are
/// `connect_timeout` while TCP connects, `handshake_timeout` during the TLS handshake and `deadline_exceeded` in
/// ``read(maxBytes:deadline:)`` and ``write(_:deadline:)``.
///
/// SIGPIPE: plain writes use `send(MSG_NOSIGNAL)`. OpenSSL writes with write(2), which raises SIGPIPE on a connection
/// the peer reset; as on the event loops, the signal is blocked on the writing thread, here only for the duration of
/// each OpenSSL call, and a SIGPIPE that call raised is taken out of the thread's pending signals before the thread's
/// own mask is restored. The caller's signal mask and the process's dispositions are left as they were.
package final class DeadlineSocket {
    /// The address connected to.
    package let peerAddress: SocketAddress
    private var fd: Int32
    private var ssl: OpaquePointer?
    /// Kept alive for as long as the session made from it.
    private let context: TLSContext?
    /// Whether ``close()`` may send close_notify: the handshake completed and no fatal TLS or socket error followed.
    private var canSendCloseNotify = false

    private enum Readiness { case readable, writable }

    /// What one non-blocking attempt did.
    private enum Progress {
        case transferred(Int)
        case endOfStream
        case wouldBlock(Readiness)
    }

    private init(fd: Int32, peerAddress: SocketAddress, context: TLSContext?) {
        self.fd = fd
        self.peerAddress = peerAddress
        self.context = context
    }

    deinit { close() }

    /// Connects to `address` and, with `tls`, completes the TLS handshake, all before `deadline`.
    ///
    /// - Parameters:
    ///   - tls: a client context; its chain and host-name checks and its ALPN rules apply as for ``TLSConnection`` (a
    ///     context whose configuration requires its application protocol refuses a peer that does not agree on it,
    ///     with `alpn_mismatch`). Its `handshakeTimeout` is not used: `deadline` bounds the handshake.
    ///   - serverName: what the server's certificate is verified against (and the SNI, for a name); nil: the
    ///     configuration's `serverName`, else the IP address of `address`. Never unchecked when the context checks
    ///     the chain.
    /// - Throws: `connection_refused`, `host_unreachable` or `socket` from TCP; `connect_timeout` when TCP has not
    ///   connected by `deadline` (at once when it has passed already); `handshake_timeout`; what a failed TLS
    ///   handshake is (`certificate_verification` naming OpenSSL's verify error, `pin_mismatch`, `handshake_failed`,
    ///   `alpn_mismatch`); `blocking_on_event_loop` on an event-loop thread; `invalid_configuration` for a server
    ///   context.
    package static func connect(
        to address: SocketAddress, tls: TLSContext?, serverName: String?, deadline: Deadline
    ) throws(TransportError) -> DeadlineSocket {
        guard !EventLoop.isOnLoopThread else {
            throw TransportError(
                .blockingOnEventLoop,
                "cannot connect to \(address) with a blocking socket on an event-loop thread: it would stall every "
                    + "connection of that loop")
        }
        if let tls, tls.configuration.isServer {
            throw TransportError(
                .invalidConfiguration, "connecting to \(address) needs a client TLS configuration, not a server's")
        }
        guard Deadline.now() < deadline else {
            throw TransportError(.connectTimeout, "connecting to \(address) timed out: the deadline passed before it began")
        }
        let (fd, connected) = try Socket.startConnect(to: address)
        // Owns the descriptor from here: a throw below closes it (deinit).
        let socket = DeadlineSocket(fd: fd, peerAddress: address, context: tls)
        if !connected {
            guard try socket.wait(for: .writable, until: deadline) else {
                throw TransportError(.connectTimeout, "connecting to \(address) timed out")
            }
            let code = Socket.connectResult(fd)
            guard code == 0 else { throw Socket.connectError(code, address) }
        }
        Socket.setNoDelay(fd)
        if let tls {
            try socket.handshake(
                tls, serverName: serverName ?? tls.configuration.serverName ?? address.host, deadline: deadline)
        }
        return socket
    }

    private func handshake(_ context: TLSContext, serverName: String, deadline: Deadline) throws(TransportError) {
        let ssl = try context.makeSession(fd: fd, serverName: serverName)
        self.ssl = ssl
        while true {
            let (result, code, savedErrno) = Self.withoutSIGPIPE { () -> (Int32, Int32, Int32) in
                OpenSSLErrorQueue.clear()
                let result = SSL_do_handshake(ssl)
                let savedErrno = errno
                return (result, result == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, result), savedErrno)
            }
            if result == 1 { break }
            let readiness: Readiness
            switch code {
            case SSL_ERROR_WANT_READ: readiness = .readable
            case SSL_ERROR_WANT_WRITE: readiness = .writable
            default: throw context.handshakeError(ssl, code: code, errno: savedErrno, peer: peerAddress.description)
            }
            guard try wait(for: readiness, until: deadline) else {
                throw TransportError(
                    .handshakeTimeout, "the TLS handshake with \(peerAddress) did not complete before the deadline")
            }
        }
        if let error = context.applicationProtocolError(ssl) { throw error }
        canSendCloseNotify = true
    }

    // MARK: reading

    /// Reads what the peer sent: 1 to `maxBytes` bytes, waiting for them until `deadline`; `[]` at the end of the
    /// stream.
    ///
    /// The end of the stream is the peer's close: a TCP FIN, a TLS close_notify, and also a TCP FIN without
    /// close_notify (an unclean TLS shutdown, which could be a truncation): the protocol above, which knows whether
    /// its message was complete, decides.
    /// - Throws: `deadline_exceeded` when nothing arrived by `deadline` (at once when it has passed already);
    ///   `connection_reset`; `tls` for a TLS error (a bad record); `socket`; `closed` after ``close()``.
    package func read(maxBytes: Int, deadline: Deadline) throws(TransportError) -> [UInt8] {
        precondition(maxBytes > 0, "read(maxBytes:deadline:) needs room for at least one byte")
        guard fd >= 0 else { throw TransportError(.closed, "the connection to \(peerAddress) is closed") }
        guard Deadline.now() < deadline else { throw readTimeout() }
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        while true {
            let attempt = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(TransportError) -> Progress in
                    if let ssl { try readTLS(ssl, into: raw) } else { try readPlain(into: raw) }
                }
            }
            switch try attempt.get() {
            case .transferred(let count):
                buffer.removeSubrange(count...)
                return buffer
            case .endOfStream:
                return []
            case .wouldBlock(let readiness):
                guard try wait(for: readiness, until: deadline) else { throw readTimeout() }
            }
        }
    }

    private func readTimeout() -> TransportError {
        TransportError(.deadlineExceeded, "\(peerAddress) sent nothing more before the deadline")
    }

    private func readPlain(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> Progress {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .endOfStream }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock(.readable)
            case ECONNRESET: throw TransportError(.connectionReset, "\(peerAddress) reset the connection")
            case let code:
                throw TransportError(.socket, "reading from \(peerAddress) failed: \(SystemError.describe(code))")
            }
        }
    }

    private func readTLS(_ ssl: OpaquePointer, into buffer: UnsafeMutableRawBufferPointer) throws(TransportError)
        -> Progress
    {
        var count = 0
        let (code, savedErrno) = Self.withoutSIGPIPE { () -> (Int32, Int32) in
            OpenSSLErrorQueue.clear()
            let ok = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
            let savedErrno = errno
            return (ok == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, 0), savedErrno)
        }
        switch code {
        case SSL_ERROR_NONE:
            return .transferred(count)
        case SSL_ERROR_WANT_READ:
            return .wouldBlock(.readable)
        case SSL_ERROR_WANT_WRITE:
            return .wouldBlock(.writable)
        case SSL_ERROR_ZERO_RETURN:
            return .endOfStream  // the peer's close_notify; ours may still answer it at close
        case SSL_ERROR_SYSCALL:
            canSendCloseNotify = false
            _ = OpenSSLErrorQueue.drain()
            switch savedErrno {
            case 0: return .endOfStream  // a FIN without close_notify, as OpenSSL before 3.0 reports it
            case ECONNRESET, EPIPE: throw TransportError(.connectionReset, "\(peerAddress) reset the connection")
            default:
                throw TransportError(.socket, "reading from \(peerAddress) failed: \(SystemError.describe(savedErrno))")
            }
        default:
            canSendCloseNotify = false
            let (unexpectedEOF, reason) = OpenSSLErrorQueue.drainIsUnexpectedEOF()
            if unexpectedEOF { return .endOfStream }  // a FIN without close_notify (OpenSSL 3)
            throw TransportError(
                .tls, "TLS error on the connection with \(peerAddress): \(reason ?? "unknown")", openSSLReason: reason)
        }
    }

    // MARK: writing

    /// Sends all of `bytes`, waiting for the peer to take them until `deadline`.
    /// - Throws: `deadline_exceeded` when the peer has not taken them all by `deadline` (at once when it has passed
    ///   already; how much was sent is then unknown to the peer's protocol, so the connection is only good for
    ///   closing); `connection_reset` when the peer closed or reset the connection; `tls`; `socket`; `closed` after
    ///   ``close()``.
    package func write(_ bytes: [UInt8], deadline: Deadline) throws(TransportError) {
        guard fd >= 0 else { throw TransportError(.closed, "the connection to \(peerAddress) is closed") }
        guard Deadline.now() < deadline else { throw writeTimeout(sent: 0, of: bytes.count) }
        var sent = 0
        while sent < bytes.count {
            let attempt = bytes.withUnsafeBytes { raw in
                Result { () throws(TransportError) -> Progress in
                    let rest = UnsafeRawBufferPointer(rebasing: raw[sent...])
                    return if let ssl { try writeTLS(ssl, rest) } else { try writePlain(rest) }
                }
            }
            switch try attempt.get() {
            case .transferred(let count):
                sent += count
            case .wouldBlock(let readiness):
                guard try wait(for: readiness, until: deadline) else {
                    throw writeTimeout(sent: sent, of: bytes.count)
                }
            case .endOfStream:
                throw TransportError(.connectionReset, "\(peerAddress) closed the connection")
            }
        }
    }

    private func writeTimeout(sent: Int, of total: Int) -> TransportError {
        TransportError(
            .deadlineExceeded, "\(peerAddress) took \(sent) of \(total) bytes before the deadline")
    }

    private func writePlain(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Progress {
        while true {
            let count = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .transferred(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock(.writable)
            case EPIPE, ECONNRESET:
                throw TransportError(.connectionReset, "\(peerAddress) closed or reset the connection")
            case let code:
                throw TransportError(.socket, "sending to \(peerAddress) failed: \(SystemError.describe(code))")
            }
        }
    }

    private func writeTLS(_ ssl: OpaquePointer, _ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Progress {
        var count = 0
        let (code, savedErrno) = Self.withoutSIGPIPE { () -> (Int32, Int32) in
            OpenSSLErrorQueue.clear()
            let ok = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &count)
            let savedErrno = errno
            return (ok == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, 0), savedErrno)
        }
        switch code {
        case SSL_ERROR_NONE:
            return .transferred(count)
        case SSL_ERROR_WANT_WRITE:
            return .wouldBlock(.writable)
        case SSL_ERROR_WANT_READ:
            return .wouldBlock(.readable)
        case SSL_ERROR_SYSCALL where savedErrno == EPIPE || savedErrno == ECONNRESET:
            canSendCloseNotify = false
            _ = OpenSSLErrorQueue.drain()
            throw TransportError(.connectionReset, "\(peerAddress) closed or reset the connection")
        default:
            canSendCloseNotify = false
            let reason = OpenSSLErrorQueue.drain()
            throw TransportError(
                .tls, "cannot send to \(peerAddress): \(reason ?? SystemError.describe(savedErrno))",
                openSSLReason: reason)
        }
    }

    // MARK: closing

    /// Closes the connection: a TLS close_notify goes out if the socket takes it now (never waited for), the TLS
    /// session is freed and the descriptor closed. Idempotent; `deinit` does it too. Unread bytes make the kernel
    /// answer with a reset, which is what a peer still sending should hear.
    package func close() {
        guard fd >= 0 else { return }
        if let ssl {
            if canSendCloseNotify {
                Self.withoutSIGPIPE {
                    OpenSSLErrorQueue.clear()
                    _ = SSL_shutdown(ssl)
                    OpenSSLErrorQueue.clear()
                }
            }
            SSL_free(ssl)
            self.ssl = nil
        }
        canSendCloseNotify = false
        Glibc.close(fd)
        fd = -1
    }

    // MARK: waiting

    /// Waits until the socket is ready (or in error, or hung up: the next call reports which); false once `deadline`
    /// has passed.
    private func wait(for readiness: Readiness, until deadline: Deadline) throws(TransportError) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(readiness == .readable ? POLLIN : POLLOUT), revents: 0)
        while true {
            let now = Deadline.now()
            guard now < deadline else { return false }
            // Rounded up: a poll that returns nothing has reached the deadline, not a millisecond before it.
            let milliseconds = Int32(clamping: (deadline.since(now).nanosecondsClamped + 999_999) / 1_000_000)
            entry.revents = 0
            let result = poll(&entry, 1, milliseconds)
            if result > 0 { return true }
            if result < 0 {
                let code = errno
                guard code == EINTR else {
                    throw TransportError(.socket, "waiting for \(peerAddress) failed: \(SystemError.describe(code))")
                }
            }
        }
    }

    /// Runs `body` (OpenSSL calls, which write with write(2)) with SIGPIPE blocked on the calling thread; a SIGPIPE it
    /// raised is taken out of the thread's pending signals before the thread's mask is restored (libpq does the same).
    /// errno is as `body` left it.
    private static func withoutSIGPIPE<Result>(_ body: () -> Result) -> Result {
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        var pending = sigset_t()
        sigpending(&pending)
        let wasPending = sigismember(&pending, SIGPIPE) == 1
        let result = body()
        let savedErrno = errno
        if !wasPending {
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var noWait = timespec()
                _ = sigtimedwait(&pipeOnly, nil, &noWait)
            }
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        errno = savedErrno
        return result
    }
}
