public import SupportRuntime
import SupportUtilities
import Synchronization
public import SupportWire
import SupportVocabulary

/// What a ``FramedLink`` tells its owner. Every call comes on the link's event loop, in order, one at a time.
public protocol FramedLinkDelegate: AnyObject, Sendable {
    /// HELLO / HELLO_ACK exchanged; session frames may flow.
    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters)
    /// A session frame (types `0x10`–`0x18`) arrived. Connection frames (PING, GOAWAY, …) are handled by the link.
    func link(_ link: FramedLink, didReceive message: Message)
    /// The link closed; no other call follows.
    ///
    /// Called exactly once for every link a ``TLSListener`` accepted and whose `onLink` returned true, whatever ends it:
    /// a failed or timed-out TLS handshake, no HELLO in time, a GOAWAY, a local close, or the loop shutting down
    /// (reason `.transport` with kind `event_loop_shut_down`). An owner may count unauthenticated connections with it.
    /// For a dialed link it is not called when the link never opened: ``TLSDialer`` reports that error instead.
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason)
}

/// Frames of the shared framing module over one TLS connection: HELLO exchange, keepalive, GOAWAY, ordered delivery.
///
/// Closing semantics: frames sent before ``close(reason:text:)`` are flushed and arrive before the peer learns of the
/// close (GOAWAY, then TLS close_notify); after close, ``send(_:)`` throws a `closed` error.
///
/// Back-pressure: ``pauseReading()`` stops reading from the peer until ``resumeReading()``; see there.
public final class FramedLink: @unchecked Sendable {
    // @unchecked: `machine`, `decoder`, `encoder`, `tickTimer`, `closeReason`, `closeRequested`, `openWaiter`,
    // `readingPaused` and `parametersValue` are touched only on `loop`'s thread (every entry point hops there first);
    // `isClosed` and `peerMaxFrameSize` are atomics and `delegateBox` a Mutex, read from any thread.
    public let loop: EventLoop
    let connection: TLSConnection
    private var machine: LinkStateMachine
    private var decoder: FrameDecoder
    private var encoder = FrameEncoder()
    private var tickTimer: LoopTimer?
    private var tickAt: Deadline?
    private var closeReason: LinkCloseReason?
    private var transportError: TransportError?
    private var parametersValue: LinkParameters?
    /// Told once: open (nil) or closed before opening (the reason). Used by the dialer.
    var openWaiter: ((LinkCloseReason?) -> Void)?
    private let isClosedFlag = Atomic<Bool>(false)
    /// The peer's announced maximum payload once open (the wire's default before), for checks off the loop.
    private let peerMaxFrameSize = Atomic<Int>(WireLimits.defaultMaxFrameSize)
    /// Loop-confined: close() ran on the loop (or the link closed); frames queued after that are dropped.
    private var closeRequested = false
    /// Loop-confined: the owner paused reading; no frame is delivered until it resumes.
    private var readingPaused = false
    /// Frames delivered to the owner before the link lets the loop serve its other connections (SPEC §13.1): a peer
    /// pipelining thousands of small frames in one TLS record would otherwise hold its loop for all of them.
    static let framesPerTurn = 64
    /// Loop-confined: frames delivered since the link last gave the loop back; at ``framesPerTurn`` delivery and
    /// reading pause until a timer due at once (after the loop's other ready connections) resumes them.
    private var deliveredSinceYield = 0
    private var yielding = false
    private var yieldTimer: LoopTimer?
    private let transportClosedFlag = Atomic<Bool>(false)
    private let delegateBox = Mutex<WeakDelegate>(WeakDelegate())

    private struct WeakDelegate { weak var value: FramedLinkDelegate? }

    /// The owner. Weak: a link never keeps its owner alive; the open connection keeps the link alive.
    public var delegate: FramedLinkDelegate? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// The peer's address.
    public let peerAddress: SocketAddress?

    init(connection: TLSConnection, settings: LinkSettings, isInitiator: Bool) {
        self.loop = connection.loop
        self.connection = connection
        self.peerAddress = connection.peerAddress
        self.machine = LinkStateMachine(settings: settings, isInitiator: isInitiator, now: connection.loop.now)
        // What HELLO announces: the setting clamped to the wire's range (SPEC §5.1), so that the decoder never
        // refuses a frame the peer was told it may send.
        let range = WireLimits.maxFrameSizeRange
        self.decoder = FrameDecoder(
            maxPayloadLength: min(max(settings.maxFrameSize, Int(range.lowerBound)), Int(range.upperBound)))
        connection.handler = self
    }

    /// Whether the TLS connection under the link is fully closed and its descriptor released.
    public var isTransportClosed: Bool { transportClosedFlag.load(ordering: .acquiring) }

    /// Whether the link is closed or closing: sends fail from then on.
    public var isClosed: Bool { isClosedFlag.load(ordering: .acquiring) }

    /// How the TLS connection under the link ended, once it has (loop thread; set before
    /// ``FramedLinkDelegate/linkDidClose(_:reason:)``): nil for a clean end (close_notify exchanged, or our own close
    /// completed), else the transport's error, e.g. `unclean_shutdown` when the peer dropped TCP without close_notify,
    /// even after a GOAWAY.
    public var transportCloseError: TransportError? {
        loop.preconditionInLoop()
        return transportError
    }

    /// What HELLO settled, once open. Loop thread only.
    public var parameters: LinkParameters? {
        loop.preconditionInLoop()
        return parametersValue
    }

    /// Sends `message`. From any thread; frames are sent in the order of calls from one thread.
    ///
    /// Throws `closed` after close, and a ``WireError`` wrapped as `protocol_violation` when the message breaks a wire
    /// limit (a name over 64 bytes, …). A slow peer that lets too much pile up is disconnected (`write_buffer_full`).
    public func send(_ message: Message) throws(TransportError) {
        guard !isClosed else { throw TransportError(.closed, "the link is closed; nothing more can be sent") }
        if loop.inLoop {
            try sendOnLoop(message)
        } else {
            // Check the message against the wire's limits and the peer's announced maximum here, so the caller
            // hears of a bad value at once: on the loop the error would have nobody to go to.
            do {
                _ = try FrameEncoder(maxPayloadLength: peerMaxFrameSize.load(ordering: .relaxed)).encode(message)
            } catch {
                throw TransportError(.protocolViolation, "cannot send \(message.frameType.specName): \(error)")
            }
            // Not `sendOnLoop`: a close() called after this send sets `isClosed` at once, yet this frame was sent
            // before the close and must still go out before the GOAWAY (which is queued behind it).
            let accepted = loop.execute { [self] in
                guard !self.closeRequested else { return }
                try? self.write(message)
            }
            guard accepted else {
                throw TransportError(.eventLoopShutDown, "the link's event loop is shut down; nothing can be sent")
            }
        }
    }

    // MARK: back-pressure

    /// Stops reading from the peer until ``resumeReading()``: for an owner that cannot keep up (a full queue of its
    /// own). From any thread.
    ///
    /// Exactly what happens:
    /// - On the link's loop (for example inside ``FramedLinkDelegate/link(_:didReceive:)``) it takes effect at once: no
    ///   further frame is delivered after the current call returns, even frames already decoded from the bytes of the
    ///   same read; they wait in the link's decoder (at most one read of 64 KiB plus one frame).
    /// - From another thread it takes effect when the loop runs the request: frames the loop delivers before that
    ///   moment are still delivered.
    /// - Then the socket is no longer polled for input (EPOLLIN is off), so the peer's bytes stay in the kernel and,
    ///   once its buffers fill, the peer's writes stall: a peer built on this stack disconnects a reader that stays
    ///   paused long enough for over `maxBufferedBytes` to pile up (`write_buffer_full`).
    /// - Keepalive: while paused the link does not count the peer's silence (it cannot hear the peer) and sends a PING
    ///   every keepalive interval, so that the peer keeps hearing from it. After resuming, the peer has two intervals
    ///   to be heard again.
    /// - Pausing before the link opens holds back HELLO as well; the HELLO timeout still runs.
    /// - Sending is not affected. A connection reset while paused closes the link (`connection_reset`); a clean close
    ///   by the peer is noticed after resuming.
    public func pauseReading() {
        if loop.inLoop {
            pauseOnLoop()
        } else {
            loop.execute { [self] in self.pauseOnLoop() }
        }
    }

    /// Reads again after ``pauseReading()``: frames held in the decoder are delivered first, in order, then what the
    /// socket holds. From any thread; on another thread it takes effect when the loop runs the request.
    public func resumeReading() {
        if loop.inLoop {
            resumeOnLoop()
        } else {
            loop.execute { [self] in self.resumeOnLoop() }
        }
    }

    private func pauseOnLoop() {
        guard !readingPaused, closeReason == nil else { return }
        readingPaused = true
        connection.pauseReading()
        machine.readingPaused(now: loop.now)
        rearmTick()
    }

    private func resumeOnLoop() {
        guard readingPaused else { return }
        readingPaused = false
        machine.readingResumed(now: loop.now)
        rearmTick()
        guard closeReason == nil else { return }
        deliverDecoded(now: loop.now)
        // The owner may have paused again while frames were delivered (or the turn's budget ran out).
        if !readingPaused, !yielding { connection.resumeReading() }
    }

    /// The turn's frames are used up: hold delivery and reading until the loop has served the others.
    private func yieldTurn() {
        yielding = true
        connection.pauseReading()
        yieldTimer = loop.schedule(at: loop.now) { [weak self] in
            guard let self else { return }
            self.yieldTimer = nil
            self.yielding = false
            self.deliveredSinceYield = 0
            guard self.closeReason == nil else { return }
            self.deliverDecoded(now: self.loop.now)
            if !self.readingPaused, !self.yielding { self.connection.resumeReading() }
        }
    }

    private func sendOnLoop(_ message: Message) throws(TransportError) {
        guard !isClosed else { throw TransportError(.closed, "the link is closed; nothing more can be sent") }
        try write(message)
    }

    private func write(_ message: Message) throws(TransportError) {
        let bytes: [UInt8]
        do { bytes = try encoder.encode(message) } catch {
            throw TransportError(.protocolViolation, "cannot send \(message.frameType.specName): \(error)")
        }
        try connection.write(bytes)
    }

    /// Closes the link: GOAWAY with `reason`, queued frames flushed, then TLS close_notify. From any thread.
    public func close(reason: ReasonCode = .normalClose, text: String? = nil, resumeElsewhere: Bool = false) {
        isClosedFlag.store(true, ordering: .releasing)
        loop.execute { [self] in
            self.closeRequested = true
            self.perform(self.machine.close(reason: reason, text: text, resumeElsewhere: resumeElsewhere))
        }
    }

    /// Starts the TLS connection. Loop thread; the delegate is set by then.
    func start(connectDeadline: Deadline? = nil) {
        connection.start(connectDeadline: connectDeadline)
    }

    /// The dial's deadline passed before HELLO_ACK (TCP, TLS and HELLO together): a node that accepts TCP but never
    /// finishes its handshake counts as unreachable, like one that refuses (the dialer's waiter gets `error`). Nothing
    /// once the link is open. On the loop.
    func abortOpening(_ error: TransportError) {
        loop.preconditionInLoop()
        guard openWaiter != nil, !isClosed else { return }
        connection.closeImmediately(error)
    }

    // MARK: actions

    private func perform(_ actions: [LinkStateMachine.Action]) {
        for action in actions {
            switch action {
            case .send(let message):
                do { try write(message) } catch {
                    if case .goAway(var goAway) = message, goAway.text != nil {
                        goAway.text = nil  // a text the wire refuses must not stop the GOAWAY itself
                        try? write(.goAway(goAway))
                    }
                }
            case .open(let parameters):
                parametersValue = parameters
                encoder.maxPayloadLength = parameters.peerMaxFrameSize
                peerMaxFrameSize.store(parameters.peerMaxFrameSize, ordering: .relaxed)
                // The delegate first, then the dialer: when connect returns, linkDidOpen has been delivered.
                delegate?.linkDidOpen(self, parameters: parameters)
                let waiter = openWaiter
                openWaiter = nil
                waiter?(nil)
            case .deliver(let message):
                delegate?.link(self, didReceive: message)
            case .close(let reason):
                isClosedFlag.store(true, ordering: .releasing)
                closeRequested = true
                if closeReason == nil { closeReason = reason }
                if case .keepaliveTimeout = reason {
                    // The peer is dead: it will answer no close_notify, so do not wait for one. The GOAWAY just
                    // written and our close_notify still leave if the socket takes them now (SPEC §7, errata 1.0.1
                    // no. 11).
                    connection.closeImmediately(TransportError(.idleTimeout, "keepalive timeout"))
                } else {
                    connection.close()
                }
            }
        }
        rearmTick()
    }

    private func rearmTick() {
        guard let next = machine.nextDeadline else {
            tickTimer?.cancel()
            tickTimer = nil
            tickAt = nil
            return
        }
        // A deadline that moved later needs no new timer: the armed one fires early and re-arms.
        if let tickAt, tickTimer != nil, tickAt <= next { return }
        tickTimer?.cancel()
        tickAt = next
        tickTimer = loop.schedule(at: next) { [weak self] in
            guard let self else { return }
            self.tickTimer = nil
            self.tickAt = nil
            self.perform(self.machine.tick(now: loop.now))
        }
    }
}

extension FramedLink: TLSConnectionHandler {
    package func connectionDidBecomeActive(_ connection: TLSConnection) {
        perform(machine.tlsEstablished(now: loop.now))
    }

    package func connection(_ connection: TLSConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard closeReason == nil else { return }
        decoder.append(bytes)
        deliverDecoded(now: loop.now)
    }

    /// Hands every complete frame in the decoder to the machine, until the link closes or the owner pauses reading.
    private func deliverDecoded(now: Deadline) {
        do {
            while closeReason == nil, !readingPaused, !yielding, let message = try decoder.nextMessage() {
                perform(machine.received(message, now: now))
                deliveredSinceYield += 1
                if deliveredSinceYield >= Self.framesPerTurn, closeReason == nil { yieldTurn() }
            }
        } catch {
            perform(machine.decodingFailed(error))
        }
    }

    /// The peer closed TLS cleanly. A frame it left incomplete is `truncated_header` or `truncated_payload` (SPEC
    /// §3.4): like any decoding error it gets GOAWAY `malformed_frame`, written after the peer's close_notify where
    /// TLS allows it (errata 1.0.1 no. 1), and then our close_notify.
    package func connectionDidReceiveCloseNotify(_ connection: TLSConnection) {
        // While reading is paused nothing is read, so the close_notify cannot have overtaken frames held back here.
        guard closeReason == nil, !readingPaused, !yielding else { return }
        do { try decoder.finish() } catch {
            perform(machine.decodingFailed(error, canSendGoAway: connection.canWriteAfterPeerCloseNotify))
        }
    }

    package func connectionDidClose(_ connection: TLSConnection, error: TransportError?) {
        isClosedFlag.store(true, ordering: .releasing)
        transportError = error
        transportClosedFlag.store(true, ordering: .releasing)
        machine.transportClosed()
        tickTimer?.cancel()
        tickTimer = nil
        yieldTimer?.cancel()
        yieldTimer = nil
        let reason =
            closeReason
            ?? .transport(error ?? TransportError(.closed, "the peer closed the connection without GOAWAY"))
        let wasOpen = parametersValue != nil
        if let waiter = openWaiter {
            openWaiter = nil
            waiter(reason)
            return
        }
        if wasOpen || delegate != nil { delegate?.linkDidClose(self, reason: reason) }
    }
}
