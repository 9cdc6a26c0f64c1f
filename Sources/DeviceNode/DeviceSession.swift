import Dispatch
import Synchronization
import SupportSession
import SupportTransport

/// One joined session code on the device: from connecting, through waiting and a request, to the session's end.
///
/// Leave with ``leave()`` at any time. Dropping the last reference leaves too. After the session ends (ended by
/// either side, failed, or left) it is over: join again with a new ``DeviceNode/connect(toSessionCode:delegate:)``.
public final class DeviceSession: @unchecked Sendable {
    // @unchecked: `machine`, `link`, `promptTimer`, `phase` and `handedOverCallID` are read and written only on
    // `node.loop` (every entry point hops there with `loop.execute`); `joined` and `delegateBox` are synchronized.
    public let code: String
    let node: DeviceNode
    private let queue: DispatchQueue
    private var machine: DeviceSessionMachine
    private var link: FramedLink?
    private var promptTimer: LoopTimer?
    private var phase: Phase = .connecting
    /// Over, and the event stream waits for the link's linkDidClose before finishing.
    private var streamWaitsForClose = false
    /// The link's delegate. The session owns it; it points back weakly, so the link never keeps the session alive.
    private var forwarder: LinkForwarder?
    private let joined = Atomic<Bool>(true)
    private let delegateBox: Mutex<WeakDelegate>
    private let continuation: AsyncStream<DeviceSessionEvent>.Continuation
    /// Every event of this session, in order; finishes when the session is over and its connection closed: the
    /// goodbye (SESSION_END, GOAWAY, TLS close_notify) has left, so a program may exit as soon as the stream ends.
    public let events: AsyncStream<DeviceSessionEvent>

    private enum Phase { case connecting, attached, over }
    private struct WeakDelegate { weak var value: DeviceSessionDelegate? }

    init(node: DeviceNode, code: String, delegate: DeviceSessionDelegate?) {
        self.node = node
        self.code = code
        self.queue = node.configuration.delegateQueue ?? DispatchQueue(label: "rsup.device-session")
        self.machine = DeviceSessionMachine(
            capabilities: node.configuration.capabilities, promptTimeout: node.configuration.promptTimeout)
        self.delegateBox = Mutex(WeakDelegate(value: delegate))
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    deinit {
        // The app dropped the session: leave, so the connection does not outlive it.
        if let link, !link.isClosed {
            try? link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
            link.close(reason: .normalClose)
        }
        continuation.finish()
    }

    /// The delegate; weak, like every delegate.
    public var delegate: DeviceSessionDelegate? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// Whether the code is still joined (connecting, waiting, prompt shown, or active).
    public var isJoined: Bool { joined.load(ordering: .acquiring) }

    private var logger: NodeLogger { node.configuration.logger }

    // MARK: start

    func start(handedOverCallID: String?) {
        let configuration = node.configuration
        var settings = LinkSettings(role: .device, nodeName: configuration.deviceName)
        settings.keepaliveInterval = configuration.keepaliveInterval
        let context = node.context
        let loop = node.loop
        let forwarder = LinkForwarder(session: self)
        self.forwarder = forwarder
        let code = self.code
        loop.execute { [weak self] in
            if let handedOverCallID { _ = self?.machine.setCallID(handedOverCallID) }
        }
        logger.log(.info, "connecting to \(configuration.host):\(configuration.port) for code \(Redact.code(code))")
        // The dial holds only the forwarder, whose reference to the session is weak.
        Task {
            do throws(TransportError) {
                let link = try await TLSDialer.connect(
                    host: configuration.host, port: configuration.port, context: context, settings: settings,
                    loop: loop, connectTimeout: configuration.connectTimeout, delegate: forwarder)
                loop.execute {
                    guard let session = forwarder.session else {
                        link.close(reason: .normalClose)
                        return
                    }
                    session.attach(link)
                }
            } catch {
                loop.execute { forwarder.session?.failConnecting(error) }
            }
        }
    }

    fileprivate func attach(_ link: FramedLink) {
        guard phase == .connecting else {
            link.close(reason: .normalClose)  // left while connecting
            return
        }
        phase = .attached
        self.link = link
        do {
            perform(try machine.register(code: code, token: node.configuration.apiToken))
        } catch {
            logger.log(.error, "cannot register: \(error)")
        }
    }

    fileprivate func failConnecting(_ error: TransportError) {
        guard phase == .connecting else { return }
        logger.log(.info, "cannot reach the supporter node: \(error)")
        finish(
            report: .error(
                DeviceSessionFailure(reason: .connectionLost, message: "network error: \(error)", underlying: error)))
    }

    // MARK: app commands (any thread)

    /// Leaves the code in any state: the supporter is told, local events are delivered, resources are freed.
    public func leave() {
        node.loop.execute { [self] in
            switch phase {
            case .over: return
            case .connecting:
                finish(report: .supporterDisconnected(reason: .endedByDevice, text: nil))
            case .attached:
                perform(machine.leave())
            }
        }
    }

    /// Answers the pending request (used by ``ConnectionRequestAuthentication``); a second answer is ignored.
    public func answer(requestID: UInt32, allow: Bool) {
        node.loop.execute { [self] in
            let actions = machine.answer(requestID: requestID, allow: allow)
            if actions.isEmpty {
                logger.log(.info, "answer to request \(requestID) ignored: it was already answered, aborted or timed out")
            }
            perform(actions)
        }
    }

    func setCallID(_ id: String) { node.loop.execute { [self] in perform(machine.setCallID(id)) } }
    func clearCallID() { node.loop.execute { [self] in perform(machine.clearCallID()) } }

    // MARK: machine actions (loop)

    private static func now() -> Duration { Deadline.now().sinceOrigin }

    fileprivate func received(_ message: Message) {
        perform(machine.received(message, now: Self.now(), call: node.configuration.callObserver.currentCall()))
    }

    fileprivate func linkClosed(_ reason: LinkCloseReason) {
        guard phase == .attached else {
            finishStreamIfWaiting()
            return
        }
        perform(machine.linkClosed(reason: reason.reasonCode, message: "network error: \(reason)"))
    }

    private func perform(_ actions: [DeviceSessionMachine.Action]) {
        // The machine has already moved: if the registration is over, say so before any event reaches the app.
        if phase == .attached, machine.state == .idle { joined.store(false, ordering: .releasing) }
        for action in actions {
            switch action {
            case .send(let message):
                do { try link?.send(message) } catch {
                    logger.log(.warning, "cannot send \(message.frameType.specName): \(error)")
                }
            case .report(let event):
                deliver(event)
            case .protocolViolation(let text):
                logger.log(.error, "the supporter node broke the protocol: \(text)")
                link?.close(reason: .protocolError, text: text)
                perform(machine.linkClosed(reason: .protocolError, message: "protocol error: \(text)"))
                return
            case .startVoIP:
                logger.log(.info, "VoIP started")
            case .stopVoIP:
                logger.log(.info, "VoIP stopped")
            }
        }
        if phase == .attached, machine.state == .idle {
            // The registration ended (either side, or it failed): this session is over.
            finish(report: nil)
            return
        }
        armPromptTimer()
    }

    private func armPromptTimer() {
        promptTimer?.cancel()
        promptTimer = nil
        guard let deadline = machine.nextDeadline else { return }
        let at = Deadline(sinceOrigin: deadline)
        promptTimer = node.loop.schedule(at: at) { [weak self] in
            guard let self else { return }
            self.promptTimer = nil
            self.perform(self.machine.tick(now: Self.now()))
        }
    }

    /// Ends the session: last event, link closed, timers dropped; the stream finishes once the link has closed.
    ///
    /// Finishing the stream only then matters to a program that exits when it ends (`rsup-device` on Ctrl-C): exiting
    /// earlier would cut the GOAWAY and close_notify that ``FramedLink/close(reason:text:)`` sends on the loop, and
    /// the supporter node would see the TCP connection drop instead of a clean close.
    private func finish(report event: DeviceSessionEvent?) {
        guard phase != .over else { return }
        phase = .over
        joined.store(false, ordering: .releasing)
        promptTimer?.cancel()
        promptTimer = nil
        if let event { deliver(event) }
        // Left while still dialing, nothing was said on the wire yet: no goodbye to wait for (nor the dial's end).
        if let link {
            link.close(reason: .normalClose)
            self.link = nil
            streamWaitsForClose = !link.isTransportClosed  // else its linkDidClose has come already
        }
        if !streamWaitsForClose { finishStream() }
    }

    private func finishStreamIfWaiting() {
        guard phase == .over, streamWaitsForClose else { return }
        streamWaitsForClose = false
        finishStream()
    }

    private func finishStream() {
        let continuation = self.continuation
        queue.async { continuation.finish() }
    }

    private func deliver(_ event: DeviceSessionEvent) {
        logger.log(.info, "code \(Redact.code(code)): \(event.logDescription)")
        let continuation = self.continuation
        queue.async { [weak self] in
            continuation.yield(event)
            guard let self, let delegate = self.delegate else { return }
            switch event {
            case .sessionCodeOnline: delegate.sessionCodeDidComeOnline(self)
            case .connectionRequest(let info):
                delegate.session(self, didReceive: ConnectionRequestAuthentication(info, session: self))
            case .connectionRequestAborted(let id, let reason): delegate.session(self, requestWasAborted: id, reason: reason)
            case .connectionRequestTimedOut(let id): delegate.session(self, requestTimedOut: id)
            case .supporterConnected(let name, let type): delegate.session(self, supporterDidConnect: name, type: type)
            case .supporterDisconnected(let reason, let text):
                delegate.session(self, supporterDidDisconnect: reason, text: text)
            case .error(let failure): delegate.session(self, didFail: failure)
            case .sessionError(let reason, let feature, let text):
                delegate.session(self, sessionError: reason, feature: feature, text: text)
            case .voipStateChanged(let state): delegate.session(self, voipStateDidChange: state)
            }
        }
    }
}

/// The link's delegate: forwards to the session weakly, so neither the link nor a pending dial keeps it alive.
private final class LinkForwarder: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `session` is a weak reference written once in init.
    weak var session: DeviceSession?
    init(session: DeviceSession) { self.session = session }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {}
    func link(_ link: FramedLink, didReceive message: Message) { session?.received(message) }
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) { session?.linkClosed(reason) }
}

extension DeviceSessionEvent {
    /// One line for logs; no secrets.
    var logDescription: String {
        switch self {
        case .sessionCodeOnline: "session code online"
        case .connectionRequest(let info):
            "connection request \(info.requestID) from '\(info.supporterName)' (\(info.connectionType))"
        case .connectionRequestAborted(let id, let reason): "request \(id) aborted (\(reason))"
        case .connectionRequestTimedOut(let id): "request \(id) timed out"
        case .supporterConnected(let name, _): "supporter '\(name)' connected"
        case .supporterDisconnected(let reason, _): "supporter disconnected (\(reason))"
        case .error(let failure): "error: \(failure)"
        case .sessionError(let reason, let feature, _): "session error \(reason) \(feature.map { "\($0)" } ?? "")"
        case .voipStateChanged(let state): "VoIP \(state)"
        }
    }
}
