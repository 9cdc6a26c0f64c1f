import SupportRuntime
import SupportUtilities

/// One HTTP/1.1 connection over a ``TLSStream``: parse, hand one request at a time to the handler, write its
/// answer, keep alive or close; with header, body, idle and handler timers.
final class HTTPConnection: TLSStreamDelegate, @unchecked Sendable {
    // @unchecked: every `var` is read and written only on `loop`: the stream calls its delegate there, `start` runs in
    // the listener's `onStream` (on the stream's loop), timers fire there, and the handler's answer and `shutdown`
    // reach it through `loop.execute`. The `let`s are Sendable or immutable after init.
    let stream: TLSStream
    let loop: EventLoop
    private let configuration: HTTPServerConfiguration
    private let handler: HTTPServer.Handler
    private let registry: HTTPConnectionRegistry

    private enum TimerKind { case header, body, idle }

    /// The request being answered: its handler task and what the answer's framing depends on.
    private struct InFlight {
        let id: UInt64
        let task: Task<Void, Never>
        let keepAlive: Bool
        let version: HTTPVersion
        let isHead: Bool
    }

    private var parser: HTTPRequestParser
    private var readTimer: LoopTimer?
    private var readTimerKind: TimerKind?
    private var handlerTimer: LoopTimer?
    private var inFlight: InFlight?
    private var nextRequestID: UInt64 = 0
    /// An answer with `Connection: close` was written (or is due); nothing more is read.
    private var closing = false
    /// The client pipelined more than one request's worth while a handler ran: close after its answer.
    private var closeAfterResponse = false
    private var closed = false
    /// The body being streamed (Server-Sent Events): nothing more is read or answered on this connection.
    private var bodyStream: HTTPBodyStream?
    /// Bytes that may wait, unparsed, behind the request being answered.
    private let maxPipelinedBytes: Int
    /// What the registry was last told: in the middle of a request or its answer (not evictable).
    private var markedBusy = false
    /// The request whose answer is held (``HTTPResponse/delay``), and its timer.
    private var holding: UInt64?
    private var holdTimer: LoopTimer?
    /// The server's large-body slot this connection holds (an upload arriving or being answered).
    private var largeBodySlot: LargeBodySlot?
    private var holdsLargeBody: Bool { largeBodySlot != nil }

    init(
        stream: TLSStream, configuration: HTTPServerConfiguration, handler: @escaping HTTPServer.Handler,
        registry: HTTPConnectionRegistry
    ) {
        self.stream = stream
        self.loop = stream.loop
        self.configuration = configuration
        self.handler = handler
        self.registry = registry
        self.parser = HTTPRequestParser(limits: configuration.limits)
        let limits = configuration.limits
        self.maxPipelinedBytes = limits.maxRequestLineBytes + limits.maxHeaderBytes + limits.maxBodyBytes + 4096
    }

    /// Arms the first request's header timer (from connection start, the TLS handshake included).
    func start() {
        loop.preconditionInLoop()
        arm(.header)
    }

    /// Closes from the server's `close()`; any thread.
    func shutdown() {
        loop.execute { [self] in
            guard !self.closed else { return }
            self.closing = true
            self.inFlight?.task.cancel()
            self.inFlight = nil
            self.cancelTimers()
            self.stream.close()
        }
    }

    /// Evicted by the registry to make room (fair shares): it no longer counts. Closes at once unless it started a
    /// request meanwhile (the registry chose it idle); then once that request is answered. Any thread.
    func evict() {
        loop.execute { [self] in
            guard !self.closed, !self.closing else { return }
            if self.holding == nil, self.inFlight != nil || self.parser.phase == .body {
                self.closeAfterResponse = true
                return
            }
            self.closing = true
            self.cancelTimers()
            self.bodyStream?.connectionClosed()
            self.bodyStream = nil
            self.stream.close()
        }
    }

    /// Tells the registry whether this connection is busy, when that changed.
    private func setBusy(_ busy: Bool) {
        guard busy != markedBusy else { return }
        markedBusy = busy
        registry.setBusy(self, busy)
    }

    // MARK: TLSStreamDelegate (loop)

    func streamDidBecomeActive(_ stream: TLSStream) {}

    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !closing, !closed else { return }
        if inFlight != nil {
            // One request at a time: later ones wait in the parser, within a bound.
            guard parser.bufferedByteCount + bytes.count <= maxPipelinedBytes else {
                closeAfterResponse = true
                return
            }
            if !closeAfterResponse { parser.append(bytes) }
            return
        }
        parser.append(bytes)
        processInput()
    }

    func streamDidClose(_ stream: TLSStream, error: TransportError?) {
        releaseLargeBody()
        closed = true
        closing = true
        cancelTimers()
        inFlight?.task.cancel()
        inFlight = nil
        bodyStream?.connectionClosed()
        bodyStream = nil
        registry.remove(self)
    }

    // MARK: requests

    private func processInput() {
        while inFlight == nil, !closing, !closed {
            switch parser.next() {
            case .needMoreData:
                switch parser.phase {
                case .idle: break  // the connection-start header timer or the idle timer keeps running
                case .head: if readTimerKind != .header { arm(.header) }
                case .body:
                    setBusy(true)
                    guard takeLargeBodySlotIfNeeded(parser.pendingBodyLength ?? 0) else { return }
                    if readTimerKind != .body { arm(.body) }
                }
                return
            case .expectContinue:
                // An upload takes its slot before the client is told to send its body.
                guard takeLargeBodySlotIfNeeded(parser.pendingBodyLength ?? 0) else { return }
                write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            case .request(var request):
                guard takeLargeBodySlotIfNeeded(request.body.count) else { return }
                request.peerAddress = stream.peerAddress
                dispatch(request)
                return
            case .error(let error):
                respondAndClose(.error(error.status, message: error.message))
                return
            }
        }
    }

    private func dispatch(_ request: HTTPRequest) {
        setBusy(true)
        cancelReadTimer()
        nextRequestID &+= 1
        let id = nextRequestID
        let handler = self.handler
        let loop = self.loop
        let task = Task { [self] in
            let response = await handler(request)
            loop.execute { self.answer(id, response) }
        }
        inFlight = InFlight(
            id: id, task: task, keepAlive: request.keepAlive, version: request.version, isHead: request.method == .head)
        let timeout = configuration.handlerTimeout
        handlerTimer = loop.schedule(at: loop.now + timeout) { [weak self] in
            guard let self, let current = self.inFlight, current.id == id else { return }
            current.task.cancel()
            self.inFlight = nil
            self.handlerTimer = nil
            self.respondAndClose(
                .error(.serviceUnavailable, message: "the server did not answer within \(timeout)"),
                version: current.version, isHead: current.isHead)
        }
    }

    /// The handler's answer, on the loop.
    private func answer(_ id: UInt64, _ handlerResponse: HTTPResponse) {
        guard !closed, let current = inFlight, current.id == id else { return }  // timed out or closed meanwhile
        if let delay = handlerResponse.delay, delay > .zero, !closing {
            // Held: evictable meanwhile; the handler's time is over.
            handlerTimer?.cancel()
            handlerTimer = nil
            holding = id
            setBusy(false)
            var held = handlerResponse
            held.delay = nil
            holdTimer = loop.schedule(at: loop.now + delay) { [weak self] in
                guard let self, self.holding == id else { return }
                self.holding = nil
                self.holdTimer = nil
                self.setBusy(true)
                self.answer(id, held)
            }
            return
        }
        let response = withConfiguredHeaders(handlerResponse)
        inFlight = nil
        releaseLargeBody()
        handlerTimer?.cancel()
        handlerTimer = nil
        if let body = response.stream, !current.isHead, response.status.allowsBody {
            startStreaming(response, body, version: current.version)
            return
        }
        let keepAlive = current.keepAlive && !closeAfterResponse && !closing && !response.requestsClose
        write(response.serialized(keepAlive: keepAlive, version: current.version, includeBody: !current.isHead))
        guard keepAlive else {
            closing = true
            stream.close()
            return
        }
        setBusy(false)
        arm(.idle)
        processInput()
    }

    /// Writes the head of a streamed answer, then each piece of its body as it comes; closes when it ends.
    private func startStreaming(_ response: HTTPResponse, _ body: HTTPBodyStream, version: HTTPVersion) {
        closing = true  // nothing more is read as a request
        cancelReadTimer()
        bodyStream = body
        write(response.serialized(keepAlive: false, version: version, includeBody: false))
        let loop = self.loop
        body.attach { [weak self] piece in
            guard let connection = self else { return }
            loop.execute { connection.deliver(piece) }
        }
    }

    private func deliver(_ piece: HTTPBodyStream.Piece) {
        guard !closed, let body = bodyStream else { return }
        switch piece {
        case .bytes(let bytes):
            write(bytes)
            body.written(bytes.count)
        case .end:
            bodyStream = nil
            body.connectionClosed()
            stream.close()
        case .drop:
            bodyStream = nil
            body.connectionClosed()
            stream.abort()
        }
    }

    /// `response` with ``HTTPServerConfiguration/headersOnEveryAnswer`` it does not set itself.
    private func withConfiguredHeaders(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        for field in configuration.headersOnEveryAnswer where !response.headers.contains(field.name) {
            response.headers.add(name: field.name, value: field.value)
        }
        return response
    }

    private func respondAndClose(_ response: HTTPResponse, version: HTTPVersion = .http1_1, isHead: Bool = false) {
        let response = withConfiguredHeaders(response)
        closing = true
        cancelTimers()
        write(response.serialized(keepAlive: false, version: version, includeBody: !isHead))
        stream.close()
    }

    private func write(_ bytes: [UInt8]) {
        // A failure means the stream is closed (or closing for a too-slow reader); streamDidClose follows.
        try? stream.write(bytes)
    }

    // MARK: large bodies

    /// A body over the server's limit (an upload route's) needs one of the server's few slots: taken here, or the
    /// request is answered 503 and the connection closed. True when the request may go on.
    private func takeLargeBodySlotIfNeeded(_ length: Int) -> Bool {
        guard length > configuration.limits.maxBodyBytes, !holdsLargeBody else { return true }
        guard let slot = registry.acquireLargeBody(self) else {
            var refusal = HTTPResponse.error(
                .serviceUnavailable,
                message: "too many uploads are in progress on this server or from this address; try again shortly")
            refusal.headers.replaceOrAdd(name: "Retry-After", value: "2")
            respondAndClose(refusal)
            return false
        }
        largeBodySlot = slot
        return true
    }

    private func releaseLargeBody() {
        guard let slot = largeBodySlot else { return }
        largeBodySlot = nil
        registry.releaseLargeBody(slot)
    }

    // MARK: timers

    private func arm(_ kind: TimerKind) {
        readTimer?.cancel()
        let timeout =
            switch kind {
            case .header: configuration.headerTimeout
            case .body: holdsLargeBody ? configuration.largeBodyTimeout : configuration.bodyTimeout
            case .idle: configuration.idleTimeout
            }
        readTimerKind = kind
        readTimer = loop.schedule(at: loop.now + timeout) { [weak self] in self?.readTimerFired(kind) }
    }

    private func readTimerFired(_ kind: TimerKind) {
        guard !closing, !closed, inFlight == nil else { return }
        readTimer = nil
        readTimerKind = nil
        if parser.phase == .idle {
            closing = true
            stream.close()
        } else {
            let what = kind == .body ? "body" : "header section"
            respondAndClose(.error(.requestTimeout, message: "the request's \(what) did not arrive in time"))
        }
    }

    private func cancelReadTimer() {
        readTimer?.cancel()
        readTimer = nil
        readTimerKind = nil
    }

    private func cancelTimers() {
        cancelReadTimer()
        handlerTimer?.cancel()
        handlerTimer = nil
        holdTimer?.cancel()
        holdTimer = nil
        holding = nil
    }
}
