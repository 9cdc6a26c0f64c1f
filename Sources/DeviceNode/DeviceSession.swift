import Dispatch
import Synchronization
import SupportSession
import SupportLink
import SupportRuntime
import SupportUtilities
import SupportWire
public import SupportVocabulary

/// One joined session code on the device: from connecting, through waiting and a request, to the session's end.
///
/// Leave with ``leave()`` at any time. Dropping the last reference leaves too. After the session ends (ended by
/// either side, failed, or left) it is over: join again with a new ``DeviceNode/connect(toSessionCode:delegate:)``.
public final class DeviceSession: @unchecked Sendable {
    // @unchecked: `machine`, `link`, `promptTimer`, `phase`, `forwarder`, the reconnect fields, `tracker`,
    // `onlineWaiters` and `handedOverCallID` are read and written only on `node.loop` (every entry point hops there
    // with `loop.execute` or `loop.submit`); `joined`, `stateBox`, `droppedEvents` and `delegateBox` are synchronized.
    /// The joined session code, trimmed.
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
    /// The state as the events and answers made it (loop), and a copy any thread may read.
    private var tracker = DeviceSessionStateTracker()
    private let stateBox = Mutex<DeviceSessionState>(.connecting)
    /// The main-actor model's receiver, when a ``DeviceSessionModel`` drives this session: deliveries go straight from
    /// the loop to the main queue, one hop.
    private let mainSink: MainSink?
    /// ``DeviceNode/join(code:delegate:)`` callers waiting for the code to come online (loop).
    private var onlineWaiters: [CheckedContinuation<Result<Void, JoinError>, Never>] = []
    private let eventsIterated = SharedFlag()
    private let droppedEvents = Atomic<Int>(0)
    /// Reconnecting (SPEC §15.5): when the grace period ends, the next dial's timer, and the attempt count.
    private var graceDeadline: Deadline?
    private var resumeGrace: Duration = .seconds(30)
    private var redialTimer: LoopTimer?
    private var redialAttempt = 0
    /// The index in `configuration.nodes` of the node the last link went to (the first one tried on a redial).
    fileprivate var currentNode = 0
    /// Every event of this session, in order, for one consumer; bounded by
    /// ``DeviceConfiguration/eventBufferCapacity`` (the oldest untaken events are dropped past it, see
    /// ``DeviceSessionEvents``). Finishes when the session is over and its connection closed: the goodbye
    /// (SESSION_END, GOAWAY, TLS close_notify) has left, so a program may exit as soon as the stream ends.
    public let events: DeviceSessionEvents

    /// What the main-actor model receives, in order.
    enum ModelDelivery: Sendable {
        case event(DeviceSessionEvent)
        case startVoIP
        case stopVoIP
        case stateChanged
    }
    typealias MainSink = @MainActor @Sendable (ModelDelivery, DeviceSessionState) -> Void

    private enum Phase { case connecting, attached, reconnecting, over }
    private struct WeakDelegate { weak var value: DeviceSessionDelegate? }

    init(node: DeviceNode, code: String, delegate: DeviceSessionDelegate?, mainSink: MainSink? = nil) {
        self.node = node
        self.code = code
        self.queue = node.configuration.delegateQueue ?? DispatchQueue(label: "rsup.device-session")
        self.machine = DeviceSessionMachine(
            capabilities: node.configuration.capabilities, promptTimeout: node.configuration.promptTimeout,
            rules: node.configuration.accessRules, featurePromptTimeout: node.configuration.featurePromptTimeout)
        self.delegateBox = Mutex(WeakDelegate(value: delegate))
        self.mainSink = mainSink
        let (stream, continuation) = AsyncStream.makeStream(
            of: DeviceSessionEvent.self, bufferingPolicy: .bufferingNewest(max(1, node.configuration.eventBufferCapacity)))
        self.continuation = continuation
        self.events = DeviceSessionEvents(stream: stream, iterated: eventsIterated)
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

    /// Where the session stands now (any thread). Changes in the order of the events; the delegate hears each change
    /// with ``DeviceSessionDelegate/session(_:stateDidChange:)``, a ``DeviceSessionModel`` publishes it.
    public var state: DeviceSessionState { stateBox.withLock { $0 } }

    /// How many events ``events`` dropped because nobody took them in time (its buffer is bounded).
    public var droppedEventCount: Int { droppedEvents.load(ordering: .relaxed) }

    /// Waits until the code is online (or the session is over): ``DeviceNode/join(code:delegate:)``.
    ///
    /// Cancelling the waiting task leaves the session.
    func waitUntilOnline() async throws(JoinError) {
        let loop = node.loop
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Result<Void, JoinError>, Never>) in
                let queued = loop.execute { [self] in
                    if let outcome = Self.joinOutcome(tracker.state) {
                        waiter.resume(returning: outcome)
                    } else if phase == .over {
                        waiter.resume(returning: .failure(JoinError(.cancelled, detail: "the session is over")))
                    } else {
                        onlineWaiters.append(waiter)
                    }
                }
                if !queued {
                    waiter.resume(returning: .failure(JoinError(.unavailable, detail: "the device node is shut down")))
                }
            }
        } onCancel: {
            self.leave()
        }
        try result.get()
    }

    /// What a join waiter hears in `state`: nil while still connecting.
    private static func joinOutcome(_ state: DeviceSessionState) -> Result<Void, JoinError>? {
        if state.isOnline { return .success(()) }
        if case .ended(let ending) = state { return .failure(JoinError(ending)) }
        return nil
    }

    private func resolveOnlineWaiters(_ outcome: Result<Void, JoinError>?) {
        guard let outcome, !onlineWaiters.isEmpty else { return }
        let waiters = onlineWaiters
        onlineWaiters = []
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    private var logger: NodeLogger { node.configuration.logger }

    // MARK: start

    func start(handedOverCallID: String?) {
        let configuration = node.configuration
        node.loop.execute { [weak self] in
            if let handedOverCallID { _ = self?.machine.setCallID(handedOverCallID) }
        }
        logger.log(
            .info,
            "connecting to \(configuration.nodes.map(\.description).joined(separator: ", ")) for code \(Redact.code(code))")
        _ = node.loop.execute { [weak self] in self?.dial() }
    }

    /// Dials the supporter node (loop). Each dial has its own forwarder: events of an older link are told apart and
    /// ignored.
    private func dial() {
        let configuration = node.configuration
        var settings = LinkSettings(role: .device, nodeName: configuration.deviceName)
        settings.keepaliveInterval = configuration.keepaliveInterval
        settings.extensions = configuration.extensions
        let context = node.context
        let loop = node.loop
        let forwarder = LinkForwarder(session: self)
        self.forwarder = forwarder
        let nodes = configuration.nodes
        let first = currentNode
        // Redialling, a node that does not answer is given up on sooner: the others may.
        let timeout = phase == .reconnecting ? min(configuration.connectTimeout, .seconds(3)) : configuration.connectTimeout
        let logger = self.logger
        let code = self.code
        // The dial holds only the forwarder, whose reference to the session is weak.
        Task {
            do throws(TransportError) {
                var lastError = TransportError(.nameResolution, "no supporter node address")
                for (offset, index) in Self.dialOrder(nodes: nodes.count, first: first, code: code).enumerated() {
                    let node = nodes[index]
                    do throws(TransportError) {
                        let link = try await TLSDialer.connect(
                            host: node.host, port: node.port, context: context, settings: settings, loop: loop,
                            connectTimeout: timeout, delegate: forwarder)
                        loop.execute {
                            guard let session = forwarder.session, session.forwarder === forwarder else {
                                link.close(reason: .normalClose)
                                return
                            }
                            session.currentNode = index
                            session.attach(link)
                        }
                        return
                    } catch {
                        lastError = error
                        guard DeviceSession.isUnreachable(error), offset + 1 < nodes.count else { throw error }
                        logger.log(.info, "supporter node \(node) cannot be reached (\(error)); trying the next")
                    }
                }
                throw lastError
            } catch {
                loop.execute {
                    guard let session = forwarder.session, session.forwarder === forwarder else { return }
                    session.failConnecting(error)
                }
            }
        }
    }

    /// The order in which a dial tries the nodes: `first` (the node the session was on, or `host`), then the others
    /// starting at a place drawn from the code, so that the devices of a node that died spread over the survivors
    /// instead of all taking the next one in the list. Stable for one code: a device retries in the same order.
    static func dialOrder(nodes count: Int, first: Int, code: String) -> [Int] {
        guard count > 1 else { return count == 1 ? [0] : [] }
        let others = (1..<count).map { (first + $0) % count }
        // FNV-1a of the code: the same on every run and platform (Swift's `Hasher` is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in code.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let start = Int(hash % UInt64(others.count))
        return [first] + others[start...] + others[..<start]
    }

    /// Errors that say a node is not there (rather than misconfigured): worth trying another node.
    static func isUnreachable(_ error: TransportError) -> Bool {
        [.connectionRefused, .hostUnreachable, .connectTimeout, .handshakeTimeout, .nameResolution].contains(error.kind)
    }

    fileprivate func attach(_ link: FramedLink) {
        switch phase {
        case .connecting:
            phase = .attached
            self.link = link
            let parameters = link.parameters
            machine.linkOpened(
                extensions: parameters?.extensions ?? .none,
                peerMaxFrameSize: parameters?.peerMaxFrameSize ?? WireLimits.defaultMaxFrameSize)
            if let grace = parameters?.resumeGrace { resumeGrace = grace }
            do {
                perform(try machine.register(code: code, token: node.configuration.apiToken))
            } catch {
                logger.log(.error, "cannot register: \(error)")
            }
        case .reconnecting:
            let parameters = link.parameters
            guard let parameters, parameters.extensions.contains(.sessionResume) else {
                // SPEC §15.5: session resume must be in effect again; close and keep trying.
                logger.log(.info, "the supporter node did not offer session resume on the new link")
                link.close(reason: .normalClose)
                scheduleRedial()
                return
            }
            self.link = link
            machine.linkOpened(extensions: parameters.extensions, peerMaxFrameSize: parameters.peerMaxFrameSize)
            guard let resume = machine.resumeMessage() else { return }
            do { try link.send(.resume(resume)) } catch {
                logger.log(.info, "cannot send RESUME: \(error)")
            }
        case .attached, .over:
            link.close(reason: .normalClose)  // left while connecting, or a stray dial
        }
    }

    fileprivate func failConnecting(_ error: TransportError) {
        if phase == .reconnecting {
            logger.log(.info, "reconnect attempt \(redialAttempt) failed: \(error)")
            scheduleRedial()
            return
        }
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
            case .reconnecting:
                // No link to say goodbye on: the session ends here; the node learns by its grace period.
                redialTimer?.cancel()
                redialTimer = nil
                forwarder = nil
                link?.close(reason: .normalClose)
                link = nil
                phase = .attached
                perform(machine.leave())
            }
        }
    }

    /// Answers the pending request `requestID` and returns what became of the answer (sent, sent with the resume,
    /// not pending any more, or the session is over). An answer counts once.
    ///
    /// Called on an actor (the main actor), it hands the answer to the SDK's loop before suspending: no extra hop.
    public func answer(
        requestID: UInt32, _ decision: RequestDecision, isolation: isolated (any Actor)? = #isolation
    ) async -> AnswerOutcome {
        await withCheckedContinuation { (done: CheckedContinuation<AnswerOutcome, Never>) in
            answer(requestID: requestID, decision) { outcome in done.resume(returning: outcome) }
        }
    }

    /// Answers the pending request `requestID`; `completion` (on the SDK's loop thread: keep it short) says what
    /// became of the answer. An answer counts once.
    public func answer(
        requestID: UInt32, _ decision: RequestDecision, completion: (@Sendable (AnswerOutcome) -> Void)?
    ) {
        let queued = node.loop.execute { [self] in
            let outcome = answerOnLoop(requestID: requestID, decision)
            completion?(outcome)
        }
        if !queued { completion?(.sessionOver) }
    }

    /// Answers the pending request, without waiting for the outcome (which is logged when the answer does not
    /// count); prefer ``answer(requestID:_:isolation:)``, which returns it.
    ///
    /// With access control, `grant` is what the user kept of the request's features to confirm (nil: all of them).
    public func answer(requestID: UInt32, allow: Bool, grant: FeatureSet? = nil) {
        let decision: RequestDecision = allow ? grant.map { .allowGranting($0) } ?? .allow : .reject
        answer(requestID: requestID, decision, completion: nil)
    }

    private func answerOnLoop(requestID: UInt32, _ decision: RequestDecision) -> AnswerOutcome {
        switch phase {
        case .over:
            logger.log(.info, "answer to request \(requestID) ignored: the session is over")
            return .sessionOver
        case .connecting:
            logger.log(.info, "answer to request \(requestID) ignored: no request is pending")
            return .notPending
        case .attached, .reconnecting:
            break
        }
        guard case .requestPending(let request, _) = machine.state, request.requestID == requestID else {
            logger.log(.info, "answer to request \(requestID) ignored: it was already answered, aborted or timed out")
            return .notPending
        }
        let (allow, grant): (Bool, FeatureSet?) =
            switch decision {
            case .allow: (true, nil)
            case .allowGranting(let features): (true, features)
            case .reject: (false, nil)
            }
        let withResume = machine.isReconnecting
        perform(machine.answer(requestID: request.requestID, allow: allow, grant: grant))
        if tracker.answered(requestID, allow: allow) { publishState() }
        return withResume ? .sentWithResume : .sent
    }

    /// Answers a feature ask (``DeviceSessionEvent/featureRequested(_:)``); a second answer is ignored.
    public func answerFeature(askID: UInt32, grant: Bool) {
        node.loop.execute { [self] in perform(machine.answerFeature(askID: askID, grant: grant)) }
    }

    /// Revokes a granted feature at once (SPEC §15.3).
    public func revoke(_ feature: Feature.ID, text: String? = nil) async throws(DeviceSessionError) {
        try await onLoop { (machine: inout DeviceSessionMachine) throws(DeviceSessionMachine.Refusal) in
            (try machine.revoke(feature, text: text), ())
        }
    }

    /// Sends chat text to the supporter; needs `chat` granted. Returns once queued (delivery is reported by
    /// ``DeviceSessionEvent/messageDelivered(id:)``).
    public func sendChat(_ text: String) async throws(DeviceSessionError) {
        try await onLoop { (machine: inout DeviceSessionMachine) throws(DeviceSessionMachine.Refusal) in
            (try machine.sendChat(text), ())
        }
    }

    /// Sends an application message (opaque bytes with a content type); needs `app_messages` granted.
    public func sendApplicationMessage(contentType: String, body: [UInt8]) async throws(DeviceSessionError) {
        try await onLoop { (machine: inout DeviceSessionMachine) throws(DeviceSessionMachine.Refusal) in
            (try machine.send(.application(contentType: contentType, body: body)).actions, ())
        }
    }

    /// Sends a file (at most 16 MiB) in parts; needs `file_share` granted. Returns the transfer id.
    @discardableResult
    public func sendFile(name: String, contentType: String? = nil, bytes: [UInt8]) async throws(DeviceSessionError)
        -> UInt32
    {
        try await onLoop { (machine: inout DeviceSessionMachine) throws(DeviceSessionMachine.Refusal) in
            let (id, actions) = try machine.send(.file(name: name, contentType: contentType, bytes: bytes))
            return (actions, id ?? 0)
        }
    }

    /// Runs a machine command on the loop and performs its actions; a refusal comes back as the error.
    private func onLoop<Result: Sendable>(
        _ body: @escaping @Sendable (inout DeviceSessionMachine) throws(DeviceSessionMachine.Refusal) -> (
            [DeviceSessionMachine.Action], Result
        )
    ) async throws(DeviceSessionError) -> Result {
        let outcome: Swift.Result<Result, DeviceSessionError>
        do {
            outcome = try await node.loop.submit { [self] () -> Swift.Result<Result, DeviceSessionError> in
                guard phase == .attached || phase == .reconnecting else {
                    return .failure(DeviceSessionError(.sessionOver, "the session is over"))
                }
                do throws(DeviceSessionMachine.Refusal) {
                    let (actions, result) = try body(&machine)
                    perform(actions)
                    return .success(result)
                } catch {
                    return .failure(DeviceSessionError(.refused, error.message, underlying: error))
                }
            }
        } catch {
            throw DeviceSessionError(.shutDown, "the device node is shut down", underlying: error)
        }
        return try outcome.get()
    }

    func setCallID(_ id: String) {
        let observer = node.configuration.callObserver
        node.loop.execute { [self] in perform(machine.setCallID(id, call: observer.currentCall())) }
    }
    func clearCallID() { node.loop.execute { [self] in perform(machine.clearCallID()) } }

    // MARK: machine actions (loop)

    /// The node's monotonic time (its loop's, unless another clock was injected).
    private var now: Deadline { node.clock.monotonic }

    fileprivate func received(_ message: Message, from forwarder: LinkForwarder) {
        guard forwarder === self.forwarder else { return }  // an old link's frame after a RESUME (SPEC §15.5)
        let wasReconnecting = machine.isReconnecting
        perform(machine.received(message, now: now, call: node.configuration.callObserver.currentCall()))
        if wasReconnecting, !machine.isReconnecting, machine.state != .idle, phase == .reconnecting {
            phase = .attached
            redialTimer?.cancel()
            redialTimer = nil
            graceDeadline = nil
            redialAttempt = 0
        }
    }

    fileprivate func linkClosed(_ reason: LinkCloseReason, from forwarder: LinkForwarder) {
        guard forwarder === self.forwarder else { return }  // an old link (e.g. GOAWAY `session_moved`)
        switch phase {
        case .attached:
            link = nil
            if reason.isLinkLoss, machine.canResume {
                phase = .reconnecting
                graceDeadline = now + resumeGrace
                redialAttempt = 0
                logger.log(.info, "link lost (\(reason)); reconnecting for up to \(resumeGrace)")
                perform(machine.linkLost(reason: reason.reasonCode, message: "network error: \(reason)"))
                dial()
            } else {
                perform(machine.linkClosed(reason: reason.reasonCode, message: "network error: \(reason)"))
            }
        case .reconnecting:
            link = nil
            scheduleRedial()
        case .connecting, .over:
            finishStreamIfWaiting()
        }
    }

    /// The next reconnect attempt: 250 ms doubling to 4 s, ±20 % jitter, within the grace period (SPEC §15.5).
    private func scheduleRedial(notBefore minimum: Duration = .zero) {
        guard phase == .reconnecting, redialTimer == nil, let graceDeadline else { return }
        let base = Duration.milliseconds(min(250 << min(redialAttempt, 4), 4_000))
        let jittered = base * Double.random(in: 0.8...1.2)
        let at = now + max(jittered, minimum)
        guard at < graceDeadline else {
            // Nothing more fits: the grace period ends the session.
            redialTimer = node.loop.schedule(at: graceDeadline) { [weak self] in
                guard let self, self.phase == .reconnecting else { return }
                self.redialTimer = nil
                self.forwarder = nil
                self.link?.close(reason: .normalClose)
                self.link = nil
                self.phase = .attached
                self.perform(
                    self.machine.linkClosed(reason: .connectionLost, message: "the link could not be restored in time"))
            }
            return
        }
        redialAttempt += 1
        redialTimer = node.loop.schedule(at: at) { [weak self] in
            guard let self, self.phase == .reconnecting else { return }
            self.redialTimer = nil
            self.dial()
        }
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
                logger.log(.info, "VoIP starts")
                dispatch(.startVoIP, state: tracker.state, stateChanged: false)
            case .stopVoIP:
                logger.log(.info, "VoIP stops")
                dispatch(.stopVoIP, state: tracker.state, stateChanged: false)
            case .resumeLater(let milliseconds):
                link?.close(reason: .normalClose)
                link = nil
                forwarder = nil
                scheduleRedial(notBefore: .milliseconds(Int64(milliseconds)))
            }
        }
        if phase == .reconnecting, machine.state == .idle {
            phase = .attached  // the resume was refused, or the user left: the session is over
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
        let at = deadline
        promptTimer = node.loop.schedule(at: at) { [weak self] in
            guard let self else { return }
            self.promptTimer = nil
            self.perform(self.machine.tick(now: self.now))
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
        redialTimer?.cancel()
        redialTimer = nil
        if let event { deliver(event) }
        resolveOnlineWaiters(.failure(JoinError(.cancelled, detail: "the session is over")))
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
        // After the delegate's last call, when there is a delegate: a program that exits when the stream ends has
        // heard everything.
        if hasDelegate {
            queue.async { continuation.finish() }
        } else {
            continuation.finish()
        }
    }

    private var hasDelegate: Bool { delegateBox.withLock { $0.value != nil } }

    /// Reports an event (loop): the state follows it, the stream gets it at once, the model and the delegate on
    /// their queues.
    private func deliver(_ event: DeviceSessionEvent) {
        logger.log(.info, "code \(Redact.code(code)): \(event.logDescription)")
        let changed = tracker.apply(event)
        let state = tracker.state
        if changed { stateBox.withLock { $0 = state } }
        if case .dropped = continuation.yield(event) {
            let dropped = droppedEvents.add(1, ordering: .relaxed).newValue
            if dropped == 1 || dropped.isMultiple(of: 100) {
                logger.log(
                    .warning,
                    "session.events dropped its oldest event (\(dropped) so far): iterate it, or read session.state")
            }
        }
        if case .connectionRequest(let info) = event, mainSink == nil, !hasDelegate, !eventsIterated.isSet {
            logger.log(
                .warning,
                "connection request \(info.requestID) cannot be answered: no delegate, no model, and nobody iterates "
                    + "session.events; it will be rejected in \(node.configuration.promptTimeout)")
        }
        dispatch(.event(event), state: state, stateChanged: changed)
        if changed { resolveOnlineWaiters(Self.joinOutcome(state)) }
    }

    /// The state changed without an event (an answer that counted).
    private func publishState() {
        let state = tracker.state
        stateBox.withLock { $0 = state }
        dispatch(.stateChanged, state: state, stateChanged: true)
    }

    /// Hands a delivery to the model (main queue, one hop from the loop) and to the delegate (its queue).
    private func dispatch(_ delivery: ModelDelivery, state: DeviceSessionState, stateChanged: Bool) {
        if let mainSink {
            DispatchQueue.main.async { MainActor.assumeIsolated { mainSink(delivery, state) } }
        }
        guard hasDelegate else { return }
        queue.async { [weak self] in
            guard let self, let delegate = self.delegate else { return }
            switch delivery {
            case .event(let event): self.call(delegate, with: event)
            case .startVoIP: delegate.sessionShouldStartVoIP(self)
            case .stopVoIP: delegate.sessionShouldStopVoIP(self)
            case .stateChanged: break
            }
            if stateChanged { delegate.session(self, stateDidChange: state) }
        }
    }

    private func call(_ delegate: DeviceSessionDelegate, with event: DeviceSessionEvent) {
        switch event {
        case .sessionCodeOnline(let codeType, let waitingMessage):
            delegate.sessionCodeDidComeOnline(self, codeType: codeType, waitingMessage: waitingMessage)
        case .connectionRequest(let info):
            delegate.session(self, didReceive: ConnectionRequestAuthentication(info, session: self))
        case .connectionRequestAborted(let id, let reason): delegate.session(self, requestWasAborted: id, reason: reason)
        case .connectionRequestTimedOut(let id): delegate.session(self, requestTimedOut: id)
        case .supporterConnected(let name, let type, let details):
            delegate.session(self, supporterDidConnect: name, type: type)
            delegate.session(self, didStartWith: details)
        case .supporterDisconnected(let reason, let text):
            delegate.session(self, supporterDidDisconnect: reason, text: text)
            delegate.session(self, didEnd: SessionEnding(reason: reason, detail: text))
        case .error(let failure):
            delegate.session(self, didFail: failure)
            delegate.session(self, didEnd: SessionEnding(failure))
        case .sessionError(let reason, let feature, let text):
            delegate.session(self, sessionError: reason, feature: feature, text: text)
        case .voipStateChanged(let state): delegate.session(self, voipStateDidChange: state)
        case .featureRequested(let ask): delegate.session(self, didAskFor: ask)
        case .featureGranted, .featureRefused, .featureRevoked: delegate.session(self, accessDidChange: event)
        case .messageReceived(let delivery): delegate.session(self, didReceive: delivery)
        case .messageDelivered, .messageRefused, .messagesUndelivered: delegate.session(self, messageStatus: event)
        case .reconnecting: delegate.sessionIsReconnecting(self)
        case .resumed: delegate.sessionDidResume(self)
        }
    }
}

/// The link's delegate: forwards to the session weakly, so neither the link nor a pending dial keeps it alive.
private final class LinkForwarder: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `session` is a weak reference written once in init.
    weak var session: DeviceSession?
    init(session: DeviceSession) { self.session = session }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {}
    func link(_ link: FramedLink, didReceive message: Message) { session?.received(message, from: self) }
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) { session?.linkClosed(reason, from: self) }
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
        case .supporterConnected(let name, _, _): "supporter '\(name)' connected"
        case .supporterDisconnected(let reason, _): "supporter disconnected (\(reason))"
        case .error(let failure): "error: \(failure)"
        case .sessionError(let reason, let feature, _): "session error \(reason) \(feature.map { "\($0)" } ?? "")"
        case .voipStateChanged(let state): "VoIP \(state)"
        case .featureRequested(let ask): "the supporter asks for \(ask.feature) (ask \(ask.askID))"
        case .featureGranted(let feature): "\(feature) granted"
        case .featureRefused(let feature, let reason): "\(feature) refused (\(reason))"
        case .featureRevoked(let feature): "\(feature) revoked"
        case .messageReceived(let delivery): delivery.logDescription
        case .messageDelivered(let id): "message \(id) delivered"
        case .messageRefused(let id, let reason, _): "message \(id) refused (\(reason))"
        case .messagesUndelivered(let lost): "\(lost.sent.count + lost.unsent) message(s) not delivered"
        case .reconnecting: "link lost; reconnecting"
        case .resumed: "session resumed"
        }
    }
}
