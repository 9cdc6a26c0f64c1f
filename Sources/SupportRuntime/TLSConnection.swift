package import SupportUtilities
internal import COpenSSL
import Glibc

/// What a ``TLSConnection`` tells its owner, on the connection's event loop.
package protocol TLSConnectionHandler: AnyObject {
    /// The TLS handshake completed and ALPN agreed.
    func connectionDidBecomeActive(_ connection: TLSConnection)
    /// Decrypted bytes arrived. The buffer is valid only during the call.
    func connection(_ connection: TLSConnection, didRead bytes: UnsafeRawBufferPointer)
    /// The connection is closed and its fd released: `nil` after a clean close_notify exchange, else why.
    func connectionDidClose(_ connection: TLSConnection, error: TransportError?)
    /// The peer's close_notify arrived on an open connection: everything it sent has been read. The handler may still
    /// write, when ``TLSConnection/canWriteAfterPeerCloseNotify``, and close; if it does not close, the connection
    /// answers with its own close_notify and closes cleanly.
    func connectionDidReceiveCloseNotify(_ connection: TLSConnection)
}

extension TLSConnectionHandler {
    package func connectionDidReceiveCloseNotify(_ connection: TLSConnection) {}
}

/// One TLS connection on a non-blocking socket, driven by its event loop. Loop thread only.
///
/// OpenSSL runs directly on the fd (`SSL_set_fd`) rather than on memory BIOs: with a readiness poller the socket BIO
/// already gives non-blocking reads and writes with WANT_READ/WANT_WRITE, and it spares two copies of every byte and
/// the two BIO buffers per connection that would count against the idle-memory budget.
package final class TLSConnection: Selectable {
    package enum State { case connecting, handshaking, open, closing, closed }

    package let loop: EventLoop
    package let context: TLSContext
    package private(set) var fd: Int32
    private var ssl: OpaquePointer?
    package private(set) var state: State
    package var handler: TLSConnectionHandler?
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// Bytes queued for sending beyond which the peer is too slow and the connection closes.
    package let maxBufferedBytes: Int
    private var interest: PollEvents = []
    private var handshakeTimer: LoopTimer?
    private var closeTimer: LoopTimer?
    private var idleTimer: LoopTimer?
    private var closeWhenFlushed = false
    private var lastRead: Deadline
    private let idleTimeout: Duration?
    private let serverName: String?
    package private(set) var peerAddress: SocketAddress?
    private var connectTarget: SocketAddress?
    /// Accepted connections: the place in ``DescriptorBudget/process`` this connection's descriptor holds, given back
    /// when the descriptor is closed.
    package var descriptorPlace: DescriptorBudget.Place?
    /// Accepted connections: told once when the TLS handshake fails or times out (not when we close it ourselves).
    package var onHandshakeFailure: (@Sendable (SocketAddress?, String) -> Void)?
    /// The owner asked to stop reading application data (back-pressure); only honoured while `open`.
    package private(set) var isReadingPaused = false
    /// The peer's close_notify arrived: nothing more can be read, so EPOLLIN is no longer watched.
    package private(set) var receivedCloseNotify = false

    /// A connection over an accepted or connecting socket; call ``start()`` on the loop next.
    package init(
        loop: EventLoop, context: TLSContext, fd: Int32, connecting target: SocketAddress?, serverName: String?,
        maxBufferedBytes: Int, idleTimeout: Duration?
    ) {
        self.loop = loop
        self.lastRead = loop.now
        self.context = context
        self.fd = fd
        self.state = target == nil ? .handshaking : .connecting
        self.connectTarget = target
        self.serverName = serverName
        self.maxBufferedBytes = maxBufferedBytes
        self.idleTimeout = idleTimeout
        self.peerAddress = target ?? SocketAddress.of(fd, peer: true)
    }

    deinit {
        // Normally `finish` released both; this covers a connection dropped before it started.
        if let ssl { SSL_free(ssl) }
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Registers with the loop and begins connecting or handshaking. `connectDeadline` bounds a TCP connect.
    package func start(connectDeadline: Deadline? = nil) {
        loop.preconditionInLoop()
        Socket.setNoDelay(fd)
        handshakeTimer = loop.schedule(at: loop.now + context.configuration.handshakeTimeout) { [weak self] in
            guard let self, self.state == .handshaking || self.state == .connecting else { return }
            let what = self.state == .connecting ? "TCP connect and TLS handshake" : "TLS handshake"
            self.finish(
                TransportError(
                    .handshakeTimeout,
                    "\(what) with \(self.peerDescription) did not complete within \(self.context.configuration.handshakeTimeout)"
                ))
        }
        if state == .connecting {
            if let connectDeadline {
                closeTimer = loop.schedule(at: connectDeadline) { [weak self] in
                    guard let self, self.state == .connecting else { return }
                    self.finish(TransportError(.connectTimeout, "connecting to \(self.peerDescription) timed out"))
                }
            }
            interest = .writable
            guard registerWithLoop() else { return }
            return
        }
        guard makeSSL() else { return }
        interest = .readable
        guard registerWithLoop() else { return }
        if !context.configuration.isServer { handshake() }
    }

    /// Registers the fd; on epoll's refusal closes the connection with that error.
    private func registerWithLoop() -> Bool {
        do {
            try loop.register(fd, events: interest, handler: self)
            isRegistered = true
            return true
        } catch {
            finish(error)
            return false
        }
    }

    private var isRegistered = false

    private var peerDescription: String { peerAddress?.description ?? "the peer" }

    private func makeSSL() -> Bool {
        do {
            ssl = try context.makeSession(fd: fd, serverName: serverName)
        } catch {
            finish(error)
            return false
        }
        return true
    }

    /// Watches for `events`, minus EPOLLIN while reading is paused on an open connection or after the peer's
    /// close_notify (the socket stays readable at EOF: watching it would spin).
    private func setInterest(_ events: PollEvents) {
        let events = isReadingPaused && state == .open || receivedCloseNotify ? events.subtracting(.readable) : events
        guard events != interest, state != .closed else { return }
        interest = events
        do { try loop.modify(fd, events: events) } catch { finish(error) }
    }

    // MARK: back-pressure

    /// Stops reading application data until ``resumeReading()``: EPOLLIN is no longer watched and the read in
    /// progress (if any) stops after the record being handled. Only an open connection pauses; a handshake or a
    /// close in progress keeps reading. Loop thread.
    package func pauseReading() {
        loop.preconditionInLoop()
        guard !isReadingPaused else { return }
        isReadingPaused = true
        setInterest(interest)
    }

    /// Reads again: what OpenSSL or the socket hold is read now, then EPOLLIN is watched again. Loop thread.
    package func resumeReading() {
        loop.preconditionInLoop()
        guard isReadingPaused else { return }
        isReadingPaused = false
        guard state == .open else { return }
        lastRead = loop.now  // the paused time was ours, not the peer's silence
        setInterest(interest.union(.readable))
        if state == .open { readAvailable() }
    }

    // MARK: events

    package func handle(events: PollEvents) {
        switch state {
        case .connecting: finishConnect()
        case .handshaking: handshake()
        case .open where receivedCloseNotify && !events.isDisjoint(with: [.hangUp, .error]):
            // Waiting to flush a last frame after the peer's close_notify, and the peer is gone entirely.
            finish(TransportError(.connectionReset, "\(peerDescription) reset the connection after its close_notify"))
        case .open where isReadingPaused && !events.isDisjoint(with: [.hangUp, .error]):
            // epoll reports hang-up and error even when EPOLLIN is not watched, and keeps reporting them (level
            // triggered): the connection is dead; what the peer sent and we did not read is lost with it.
            finish(
                TransportError(
                    .connectionReset, "\(peerDescription) reset the connection while reading was paused"))
        case .open, .closing:
            if !events.isDisjoint(with: [.readable, .hangUp, .error]) { readAvailable() }
            if state != .closed, events.contains(.writable) { flush() }
        case .closed: break
        }
    }

    private func finishConnect() {
        let code = Socket.connectResult(fd)
        guard code == 0 else {
            finish(Socket.connectError(code, connectTarget ?? peerAddress ?? unspecifiedAddress))
            return
        }
        closeTimer?.cancel()
        closeTimer = nil
        state = .handshaking
        guard makeSSL() else { return }
        setInterest(.readable)
        handshake()
    }

    private var unspecifiedAddress: SocketAddress { SocketAddress(storage: sockaddr_storage(), length: 0) }

    private func handshake() {
        guard let ssl else { return }
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            handshakeTimer?.cancel()
            handshakeTimer = nil
            if let error = context.applicationProtocolError(ssl) {
                finish(error)
                return
            }
            state = .open
            if isReadingPaused { setInterest(interest) }
            armIdleTimer()
            handler?.connectionDidBecomeActive(self)
            guard state == .open else { return }
            if outboundStart < outbound.count { flush() }
            if state == .open { readAvailable() }
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: setInterest(.readable)
        case SSL_ERROR_WANT_WRITE: setInterest([.readable, .writable])
        case let code: finish(handshakeError(code: code, errno: errno))
        }
    }

    private func handshakeError(code: Int32, errno savedErrno: Int32) -> TransportError {
        context.handshakeError(ssl, code: code, errno: savedErrno, peer: peerDescription)
    }

    // MARK: reading

    /// TLS records read per readiness before the loop serves its other connections: a peer that writes as fast as
    /// loopback allows would otherwise keep this loop here for as long as it kept writing. What is left is read on
    /// the loop's next turn (the socket stays readable, and a task covers bytes OpenSSL already holds).
    static let readsPerTurn = 8
    /// Reads on after a full batch when OpenSSL holds bytes the socket's readiness would not report.
    private var continueTimer: LoopTimer?

    private func readAvailable() {
        guard let ssl else { return }
        var reads = 0
        while state == .open && !isReadingPaused && !receivedCloseNotify || state == .closing {
            if reads == Self.readsPerTurn {
                // Due at once, so it runs after the connections ready in this poll: one read batch each.
                if SSL_has_pending(ssl) == 1, continueTimer == nil {
                    continueTimer = loop.schedule(at: loop.now) { [weak self] in
                        self?.continueTimer = nil
                        self?.readAvailable()
                    }
                }
                return
            }
            reads += 1
            OpenSSLErrorQueue.clear()
            var count = 0
            let buffer = loop.readBuffer
            if SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 {
                lastRead = loop.now
                handler?.connection(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                continue
            }
            let code = SSL_get_error(ssl, 0)
            let savedErrno = errno
            switch code {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                setInterest([.readable, .writable])
                return
            case SSL_ERROR_ZERO_RETURN:
                // The peer's close_notify: everything it sent has arrived.
                guard state == .open else {
                    finish(nil)  // the answer to ours
                    return
                }
                // The owner may still have something to say (a GOAWAY for a frame the close cut short, SPEC §3.4):
                // TLS 1.3 allows writing after the peer's close_notify. Then answer with ours and close cleanly.
                receivedCloseNotify = true
                handler?.connectionDidReceiveCloseNotify(self)
                guard state == .open else { return }
                if closeWhenFlushed {
                    // close() waits for the queue to drain, then sends close_notify (or gives up after 5 s).
                    setInterest(interest)
                    return
                }
                _ = SSL_shutdown(ssl)
                finish(nil)
                return
            case SSL_ERROR_SYSCALL:
                _ = OpenSSLErrorQueue.drain()
                if savedErrno == ECONNRESET || savedErrno == EPIPE {
                    finish(TransportError(.connectionReset, "\(peerDescription) reset the connection"))
                } else {
                    finish(
                        TransportError(
                            .uncleanShutdown, "\(peerDescription) closed the connection without TLS close_notify"))
                }
                return
            default:
                let (unexpectedEOF, reason) = OpenSSLErrorQueue.drainIsUnexpectedEOF()
                if unexpectedEOF {
                    finish(
                        TransportError(
                            .uncleanShutdown, "\(peerDescription) closed the connection without TLS close_notify",
                            openSSLReason: reason))
                } else {
                    finish(
                        TransportError(
                            .tls, "TLS error on the connection with \(peerDescription): \(reason ?? "unknown")",
                            openSSLReason: reason))
                }
                return
            }
        }
    }

    // MARK: writing

    /// Bytes queued and not yet handed to the kernel.
    package var bufferedByteCount: Int { outbound.count - outboundStart }

    /// Queues `bytes` for sending. Fails with `closed` after close, or closes with `write_buffer_full` when the peer
    /// reads so slowly that more than ``maxBufferedBytes`` wait.
    package func write(_ bytes: [UInt8]) throws(TransportError) {
        loop.preconditionInLoop()
        guard state == .open || state == .handshaking || state == .connecting, !closeWhenFlushed else {
            throw TransportError(.closed, "the connection is closed; nothing more can be sent")
        }
        if outboundStart == outbound.count, state == .open, let ssl {
            // Fast path: nothing queued; hand the bytes straight to OpenSSL and queue only what is left.
            let written = writeDirect(ssl, bytes)
            guard state == .open else { return }
            if written == bytes.count { return }
            outbound.append(contentsOf: bytes[written...])
        } else {
            outbound.append(contentsOf: bytes)
        }
        if bufferedByteCount > maxBufferedBytes {
            let error = TransportError(
                .writeBufferFull,
                "\(peerDescription) reads too slowly: \(bufferedByteCount) bytes wait to be sent, over the cap of \(maxBufferedBytes)"
            )
            finish(error)
            throw error
        }
        if state == .open { flush() }
    }

    /// Writes as much of `bytes` as the socket takes now; returns the count written.
    private func writeDirect(_ ssl: OpaquePointer, _ bytes: [UInt8]) -> Int {
        var total = 0
        while total < bytes.count {
            OpenSSLErrorQueue.clear()
            var written = 0
            let ok = bytes.withUnsafeBytes { raw in
                SSL_write_ex(ssl, raw.baseAddress! + total, raw.count - total, &written)  // safe: count > total >= 0
            }
            if ok == 1 {
                total += written
                continue
            }
            if !handleWriteError(ssl) { return total }
            return total
        }
        return total
    }

    /// After a failed SSL_write: arranges to retry on readiness (returns true) or closes (returns false).
    private func handleWriteError(_ ssl: OpaquePointer) -> Bool {
        let savedErrno = errno
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_WRITE:
            setInterest([.readable, .writable])
            return true
        case SSL_ERROR_WANT_READ:
            return true
        case SSL_ERROR_SYSCALL where savedErrno == EPIPE || savedErrno == ECONNRESET:
            _ = OpenSSLErrorQueue.drain()
            finish(TransportError(.connectionReset, "\(peerDescription) reset the connection"))
            return false
        default:
            let reason = OpenSSLErrorQueue.drain()
            finish(
                TransportError(
                    .tls, "cannot send to \(peerDescription): \(reason ?? SystemError.describe(savedErrno))",
                    openSSLReason: reason))
            return false
        }
    }

    private func flush() {
        guard let ssl, state == .open || state == .closing else { return }
        while outboundStart < outbound.count {
            OpenSSLErrorQueue.clear()
            var written = 0
            let ok = outbound.withUnsafeBytes { raw in
                SSL_write_ex(ssl, raw.baseAddress! + outboundStart, raw.count - outboundStart, &written)  // safe: count > start
            }
            if ok == 1 {
                outboundStart += written
                continue
            }
            _ = handleWriteError(ssl)
            return
        }
        // Drained: release the buffer so an idle connection keeps none.
        outbound = []
        outboundStart = 0
        if state != .closed { setInterest(.readable) }
        if closeWhenFlushed, state == .open { sendCloseNotify() }
    }

    // MARK: closing

    /// Closes cleanly: queued bytes are sent first, then close_notify; the peer's close_notify (or 2 s) ends it.
    package func close() {
        loop.preconditionInLoop()
        switch state {
        case .connecting, .handshaking:
            finish(TransportError(.closed, "closed before the TLS handshake completed"))
        case .open:
            closeWhenFlushed = true
            if outboundStart == outbound.count {
                sendCloseNotify()
            } else {
                // A peer that never reads must not hold the connection open: give the queue 5 s to drain.
                closeTimer = loop.schedule(at: loop.now + .seconds(5)) { [weak self] in
                    guard let self, self.state == .open else { return }
                    self.finish(
                        TransportError(
                            .writeBufferFull,
                            "\(self.peerDescription) did not read the \(self.bufferedByteCount) bytes queued before close"))
                }
            }
        case .closing, .closed:
            break
        }
    }

    private func sendCloseNotify() {
        guard let ssl else { return }
        state = .closing
        OpenSSLErrorQueue.clear()
        let result = SSL_shutdown(ssl)
        _ = OpenSSLErrorQueue.drain()
        if result == 1 {
            finish(nil)
            return
        }
        closeTimer?.cancel()
        closeTimer = loop.schedule(at: loop.now + .seconds(2)) { [weak self] in
            // The peer never answered our close_notify; what we sent was flushed, so this is still our clean close.
            self?.finish(nil)
        }
        readAvailable()
    }

    /// Closes at once, without close_notify.
    package func abort(_ error: TransportError) { finish(error) }

    /// Closes at once, without waiting for anything from the peer: what is queued and a close_notify go out only if
    /// the socket takes them now (a dead peer's full window drops them), then the socket closes. For a keepalive
    /// timeout (SPEC §7, errata 1.0.1 no. 11): a peer that is slow rather than dead still sees a clean end.
    package func closeImmediately(_ error: TransportError) {
        loop.preconditionInLoop()
        if state == .open, let ssl {
            flush()
            if state == .open, outboundStart == outbound.count {
                state = .closing
                OpenSSLErrorQueue.clear()
                _ = SSL_shutdown(ssl)
                _ = OpenSSLErrorQueue.drain()
            }
        }
        finish(error)
    }

    /// Whether the owner may still write after the peer's close_notify: with TLS 1.3 (RFC 8446 §6.1) the two
    /// directions close independently; TLS 1.2 (RFC 5246 §7.2.1) wants close_notify answered at once.
    package var canWriteAfterPeerCloseNotify: Bool {
        guard let ssl else { return false }
        return SSL_version(ssl) >= rs_TLS1_3_VERSION()
    }

    private func armIdleTimer() {
        guard let idleTimeout else { return }
        idleTimer = loop.schedule(at: lastRead + idleTimeout) { [weak self] in
            guard let self, self.state == .open else { return }
            // Paused reading: the owner holds the peer back; its silence is not idleness.
            if self.isReadingPaused { self.lastRead = loop.now }
            if loop.now.since(self.lastRead) >= idleTimeout {
                self.finish(
                    TransportError(.idleTimeout, "\(self.peerDescription) sent nothing for \(idleTimeout)"))
            } else {
                self.armIdleTimer()
            }
        }
    }

    /// The loop stops: close at once and tell the owner.
    package func loopDidStop() {
        finish(TransportError(.eventLoopShutDown, "the event loop \(loop.name) shut down"))
    }

    private func finish(_ error: TransportError?) {
        guard state != .closed else { return }
        let wasHandshaking = state == .handshaking
        state = .closed
        handshakeTimer?.cancel()
        closeTimer?.cancel()
        idleTimer?.cancel()
        continueTimer?.cancel()
        handshakeTimer = nil
        closeTimer = nil
        idleTimer = nil
        continueTimer = nil
        if isRegistered { loop.unregister(fd) }
        isRegistered = false
        if let ssl { SSL_free(ssl) }
        ssl = nil
        Glibc.close(fd)
        fd = -1
        descriptorPlace = nil
        outbound = []
        outboundStart = 0
        if wasHandshaking, let error, let report = onHandshakeFailure,
            error.kind != .closed, error.kind != .eventLoopShutDown
        {
            report(peerAddress, Self.handshakeFailureReason(error))
        }
        onHandshakeFailure = nil
        let handler = self.handler
        self.handler = nil  // breaks the owner ↔ connection cycle
        handler?.connectionDidClose(self, error: error)
    }

    /// A bounded class of a handshake failure's reason (``handshakeFailureReason(_:)``, whose words are OpenSSL's and
    /// unbounded), for a metric's label: `timeout`, `plaintext_http`, `protocol_version`, `certificate`,
    /// `no_shared_cipher`, `connection_lost` or `other`.
    public static func handshakeFailureClass(_ reason: String) -> String {
        let text = reason.lowercased()
        if text.hasPrefix("timeout") { return "timeout" }
        if text.contains("plaintext http") || text.contains("http request") { return "plaintext_http" }
        if text.contains("version") || text.contains("wrong ssl") || text.contains("packet length") {
            return "protocol_version"
        }
        if text.contains("certificate") || text.contains("unknown ca") { return "certificate" }
        if text.contains("no shared cipher") || text.contains("alpn") || text.contains("no suitable") {
            return "no_shared_cipher"
        }
        if text.contains("eof") || text.contains("reset") || text.contains("closed") || text.contains("broken pipe") {
            return "connection_lost"
        }
        return "other"
    }

    /// Why a handshake failed, in a few words for a log line: OpenSSL's reason when it gave one.
    package static func handshakeFailureReason(_ error: TransportError) -> String {
        if error.kind == .handshakeTimeout { return "timeout: \(error.message)" }
        guard let reason = error.openSSLReason else { return error.message }
        // OpenSSL's words for an HTTP request on a TLS port are "http request": say it plainly.
        if reason.contains("http request") { return "plaintext HTTP instead of TLS (OpenSSL: \(reason))" }
        return reason
    }
}

extension String {
    /// Whether this is an IPv4 or IPv6 literal.
    package var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}
