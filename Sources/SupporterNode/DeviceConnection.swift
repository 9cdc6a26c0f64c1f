import Foundation
import SupporterCore
import SupporterStore
import SupportSession
import SupportLink
import SupportRuntime
import SupportUtilities
import SupportWire
import SupporterModel

/// One device's link on the supporter node: glue between the link, its session machine, its connection machine
/// (``DeviceConnectionMachine``: the outbox, commit barriers, reading back-pressure, earned closes) and the node.
///
/// Audit before acknowledgement: the actions of one event are carried out reports first. When the registry returns
/// store intents for them, the intents go to the store writer and everything after them in the outbox — frames to
/// the device, events for supporters, answers to API callers — waits behind a barrier until the writer's commit comes
/// back to this loop. If the commit fails, nothing behind the barrier happens: the device gets GOAWAY
/// `internal_error`, callers get an error, and the node logs it. The connection machine decides all of that; this
/// class carries out its effects.
final class DeviceConnection: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `machine`, `connection`, the timers, `deviceName`, `joinedCode`, the budgets and `pendingIntents` are
    // used only on `link.loop` (every entry point hops there first, and `preconditionInLoop` checks it); `id`, `link`,
    // `sourceAddress`, `sourceKey` are immutable and `node` is a weak reference set once.
    let id: ConnectionID
    let link: FramedLink
    /// The peer's address, for logs.
    let sourceAddress: String
    /// What its limits (and rate-limited log lines) count against: ``IPAddressText/sourceKey(_:)``.
    let sourceKey: String
    private weak var node: SupporterNode?
    private var machine: SupporterSessionMachine
    private var timer: LoopTimer?
    private var registrationTimer: LoopTimer?
    private(set) var deviceName: String?
    /// The code this device joined, from `deviceOnline` until `ended`.
    private var joinedCode: String?
    /// The outbox and what it decides (barriers, back-pressure, earned closes).
    private var connection = DeviceConnectionMachine<Completion>()
    /// Store intents of the REGISTER being answered (from the registry's decision).
    private var pendingIntents: [StoreIntent] = []
    private var closeAfterAnswer = false
    private var earnedCloseTimer: LoopTimer?
    /// Repeatable events (SESSION_ERROR, VOIP_STATE) over their audit quota in the current minute of this connection.
    private var suppressedEvents = 0
    private var suppressedSince: Deadline?
    private var floodDetected = false
    /// What this connection's SESSION_MESSAGEs may still spend: messages and body bytes, refilled with loop time.
    private var messageBudget = TokenBucket(
        rate: DeviceConnection.messagesPerSecond, burst: Double(DeviceConnection.messageBurst))
    private var messageByteBudget = TokenBucket(
        rate: DeviceConnection.messageBytesPerSecond, burst: Double(DeviceConnection.messageByteBurst))
    private var throttleTimer: LoopTimer?
    /// Whether the last refusal has its own audit row (only those are reported as events).
    private var refusalAudited = true
    /// The link is lost and the session waits for the device's RESUME (SPEC §15.5).
    private var parked = false
    /// The registration moved to another connection by a resume: this one ends nothing when it closes.
    private var movedAway = false
    private var graceTimer: LoopTimer?
    private var linkParameters: LinkParameters?
    private var everRegistered = false
    /// The resume state last written for other nodes (several nodes on one database).
    private var storedResumeState: String?
    /// The intents of a registration's claim on a code while they commit, and whether it was tried again already: a
    /// claim refused because another node's row holds the code is tried once more after asking that node to let go
    /// (its device may have just left there: this one, rejoining here, when this node had not heard of it yet).
    private var pendingClaim: (code: String, intents: [StoreIntent], retried: Bool)?
    /// Commits submitted and not come back yet.
    private var commitsInFlight = 0
    /// While a claim waits to be tried again: the intents submitted meanwhile, in order, queued only after it (their
    /// barriers stand behind the claim's, and commits come back in submission order).
    private var heldWhileRetrying: [[StoreIntent]]?

    /// What runs after the barriers before it committed (``DeviceConnectionMachine/Step/then(_:)``).
    struct Completion {
        let success: () -> Void
        let failed: () -> Void
    }

    /// The limits of the connection machine (SPEC §13.1), named here for the node's docs and tests.
    static let limits = DeviceConnectionMachine<Completion>.Limits()

    init(id: ConnectionID, link: FramedLink, node: SupporterNode, sourceAddress: String, sourceKey: String) {
        self.id = id
        self.link = link
        self.node = node
        self.sourceAddress = sourceAddress
        self.sourceKey = sourceKey
        self.machine = SupporterSessionMachine(
            requestTimeout: node.configuration.requestTimeout, secretSource: ResumeSecret.make)
    }

    /// The time on this connection's loop: real monotonic time, or an embedded loop's virtual time, so that the
    /// session machine's deadlines and the loop's timers agree.
    var now: Deadline { link.loop.now }

    // MARK: FramedLinkDelegate (on the loop)

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {
        deviceName = parameters.peerName
        linkParameters = parameters
        machine.linkOpened(extensions: parameters.extensions, peerMaxFrameSize: parameters.peerMaxFrameSize)
        node?.nodeMetrics.handshakeCompleted()
        node?.logger.log(
            .debug,
            "device '\(parameters.peerName)' connected from \(sourceAddress) "
                + "(extensions: \(parameters.extensions))")
        armRegistrationDeadline()
    }

    func link(_ link: FramedLink, didReceive message: Message) {
        // Nothing a connection sends after it earned its close is processed (frames of the same read included).
        guard let node, connection.processesFrames else { return }
        if case .sessionMessage(let sessionMessage) = message { chargeMessage(bytes: sessionMessage.body.count) }
        if case .resume(let resume) = message {
            resumeArrived(resume, node: node)
            return
        }
        // Only a node of a cluster can know of a device elsewhere: a lone node's REGISTER takes no extra lock.
        if case .register(let register) = message, machine.state == .idle, !connection.resuming, node.cluster != nil,
            let holder = node.sessions.withLock({ $0.registry.presenceElsewhere(of: register.sessionCode)?.node })
        {
            // Another node held the code when this node last heard: its device may have just left (and be this one,
            // rejoining here). Ask it before the claim; reading waits meanwhile (the vacate timeout at most, beside
            // the command's own database round trips).
            carryOut(connection.resume(deciding: true))
            let loop = link.loop
            Task { [self] in
                await node.askToVacate(register.sessionCode, holder: holder)
                let delivered = loop.execute {
                    self.carryOut(self.connection.resume(deciding: false))
                    guard self.connection.processesFrames, !self.link.isClosed else { return }
                    self.process(message)
                }
                if !delivered { node.logger.log(.debug, "a REGISTER was let through after its loop stopped") }
            }
            return
        }
        process(message)
    }

    /// A frame from the device for its session machine. On the loop.
    private func process(_ message: Message) {
        perform(machine.received(message, now: now))
        if closeAfterAnswer {
            closeAfterAnswer = false
            earnClose(.rateLimited, "too many refused registrations on this connection")
        }
    }

    /// Repeatable events past their audit quota that close the connection within one minute (GOAWAY `rate_limited`):
    /// a device that sends them by the thousand is flooding, and the flood should cost it a new connection.
    static let suppressedEventsBeforeClose = 1_000

    /// SESSION_MESSAGEs one device connection may send (SPEC §13.1): 500 per second (a burst of 500) and 4 MiB of
    /// message bodies per second (a burst of 1 MiB). Beyond, the node stops reading from it until the budget has
    /// refilled: TCP back-pressure, nothing refused, so a flood costs its sender time instead of costing the node a
    /// core (three devices sending files at 8 MiB/s each cost legitimate registrations up to 3× their p99).
    static let messagesPerSecond = 500.0
    static let messageBurst = 500
    static let messageBytesPerSecond = 4.0 * 1024 * 1024
    static let messageByteBurst = 1024 * 1024

    /// Charges one SESSION_MESSAGE of `bytes` to the budget; pauses reading while it is overdrawn.
    private func chargeMessage(bytes: Int) {
        let now = self.now
        let messageWait = messageBudget.spend(1, now: now.sinceOrigin)
        let byteWait = messageByteBudget.spend(Double(bytes), now: now.sinceOrigin)
        guard let wait = [messageWait, byteWait].compactMap({ $0 }).max(), !connection.throttled else { return }
        carryOut(connection.throttle(true))
        throttleTimer = link.loop.schedule(at: now + wait) { [weak self] in
            guard let self else { return }
            self.throttleTimer = nil
            self.carryOut(self.connection.throttle(false))
        }
    }

    private func countSuppressedEvent() {
        if let since = suppressedSince, now.since(since) < .seconds(60) {
            suppressedEvents += 1
        } else {
            suppressedSince = now
            suppressedEvents = 1
        }
        if suppressedEvents >= Self.suppressedEventsBeforeClose, !floodDetected {
            node?.logger.log(.warning, "device at \(sourceAddress) floods SESSION_ERROR/VOIP_STATE; disconnecting it")
            floodDetected = true  // closed by `perform` after this event's own steps
        }
    }

    /// The connection has earned its close: stop reading now, drop whatever it sends from here on, and close once the
    /// answers already owed have left — or after the machine's earned-close wait if their audit rows have not
    /// committed by then.
    private func earnClose(_ reason: ReasonCode, _ text: String) { carryOut(connection.earnClose(reason, text)) }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {
        connection.linkDidClose()
        node?.logger.log(
            .debug,
            "device at \(sourceAddress) disconnected: \(reason)"
                + (link.transportCloseError.map { "; TLS: \($0)" } ?? "; TLS closed cleanly"))
        timer?.cancel()
        timer = nil
        registrationTimer?.cancel()
        registrationTimer = nil
        earnedCloseTimer?.cancel()
        earnedCloseTimer = nil
        throttleTimer?.cancel()
        throttleTimer = nil
        if movedAway {
            node?.connectionClosed(self)
            return
        }
        if let node, node.configuration.extensions.contains(.sessionResume), reason.isLinkLoss,
            connection.keepsSessionOnLinkLoss(sessionCanResume: machine.canResume)
        {
            // SPEC §15.5: the session is kept for the grace period; the code stays held by this connection.
            parked = true
            perform(machine.linkLost(reason: reason.reasonCode, text: reason.description))
            let grace = node.configuration.resumeGrace
            graceTimer = link.loop.schedule(at: link.loop.now + grace) { [weak self] in
                guard let self, self.parked else { return }
                self.graceTimer = nil
                self.perform(
                    self.machine.linkClosed(reason: .connectionLost, text: "the device did not resume within \(grace)"))
            }
            return
        }
        perform(machine.linkClosed(reason: reason.reasonCode, text: reason.description))
        node?.connectionClosed(self)
    }

    // MARK: resume (SPEC §15.5)

    /// What the connection holding a code decided about a RESUME.
    enum ResumeDecision: Sendable {
        case accepted(SupporterSessionMachine, [SupporterSessionMachine.Action], code: String)
        /// The session of a node that died, taken over here
        /// (``SupporterNode/takeOver(_:extensions:peerMaxFrameSize:loop:)``).
        /// Or the session this node's previous process left (``UnresumedSession``). `why` names which, for the audit.
        case takenOver(
            SupporterSessionMachine, [SupporterSessionMachine.Action], code: String, previousNode: String, why: String)
        case rejected(ResumeResult)
    }

    /// A RESUME on this (new) connection: the connection holding the code decides, on its own loop.
    private func resumeArrived(_ resume: Resume, node: SupporterNode) {
        guard let parameters = linkParameters, parameters.extensions.contains(.sessionResume) else {
            perform([.protocolViolation("RESUME needs session_resume, which is not in effect (SPEC §15.1)")])
            return
        }
        guard machine.state == .idle, !everRegistered, !connection.resuming else {
            perform([.protocolViolation("RESUME on a connection that registered or is resuming (SPEC §15.5)")])
            return
        }
        let holder = node.sessions.withLock { state -> DeviceConnection? in
            state.registry.holder(of: resume.sessionCode).flatMap { state.links[$0] }
        }
        if holder == nil, node.cluster == nil,
            let unresumed = node.sessions.withLock({ $0.registry.unresumedSession(on: resume.sessionCode) })
        {
            // A lone node: the session this node's previous process left, from the stored state.
            carryOut(connection.resume(deciding: true))
            resumeDecided(
                node.continueSession(
                    unresumed.state, previousNode: node.configuration.nodeName, why: "node_restarted", resume,
                    extensions: parameters.extensions, peerMaxFrameSize: parameters.peerMaxFrameSize, now: link.loop.now))
            return
        }
        // A code this node does not know is nobody's session anywhere (every node knows every code): no database read.
        if holder == nil, node.cluster != nil, node.sessions.withLock({ $0.registry.contains(resume.sessionCode) }) {
            // Several nodes: the session may be one whose node died (docs/cluster.md).
            carryOut(connection.resume(deciding: true))
            let loop = link.loop
            Task { [self] in
                let decision = await node.takeOver(
                    resume, extensions: parameters.extensions, peerMaxFrameSize: parameters.peerMaxFrameSize, loop: loop)
                let delivered = loop.execute { self.resumeDecided(decision) }
                if !delivered { node.logger.log(.debug, "takeover decided after the new connection's loop stopped") }
            }
            return
        }
        guard let holder, holder !== self else {
            refuseResume(ResumeResult(reason: .resumeRejected, text: "no resumable session for that code and secret"))
            return
        }
        carryOut(connection.resume(deciding: true))
        let newID = id
        let name = deviceName
        holder.offerResume(
            resume, to: newID, deviceName: name, extensions: parameters.extensions,
            peerMaxFrameSize: parameters.peerMaxFrameSize
        ) { [self] decision in
            let delivered = self.link.loop.execute { self.resumeDecided(decision) }
            if !delivered { node.logger.log(.debug, "resume decided after the new connection's loop stopped") }
        }
    }

    /// On the holding connection's loop: check the secret and states; on success hand the session over (the registry
    /// moves the code to `newID`) and close this link with GOAWAY `session_moved` if it is still open.
    func offerResume(
        _ resume: Resume, to newID: ConnectionID, deviceName: String?, extensions: ProtocolExtensions,
        peerMaxFrameSize: Int, reply: @escaping @Sendable (ResumeDecision) -> Void
    ) {
        let accepted = link.loop.execute { [self] in
            guard let node, !movedAway, let code = joinedCode, code == resume.sessionCode else {
                reply(.rejected(ResumeResult(reason: .resumeRejected, text: "no resumable session for that code")))
                return
            }
            switch machine.resumed(by: resume, extensions: extensions, peerMaxFrameSize: peerMaxFrameSize, now: now) {
            case .accepted(let next, let actions):
                let moved = node.sessions.withLock {
                    $0.registry.registrationMoved(code: code, from: id, to: newID, deviceName: deviceName)
                }
                guard moved else {
                    reply(.rejected(ResumeResult(reason: .internalError, text: "the session could not be moved")))
                    return
                }
                node.logger.log(.info, "code \(Redact.code(code)): the device resumed on a new connection")
                letGo(node, text: "the session resumed on another connection")
                reply(.accepted(next, actions, code: code))
            case .rejected(let result, let endsRegistration):
                if endsRegistration {
                    perform(machine.linkClosed(reason: .connectionLost, text: "resume refused: \(result.text ?? "")"))
                    if !link.isClosed { link.close(reason: .protocolError, text: "the session could not be resumed") }
                }
                reply(.rejected(result))
            }
        }
        if !accepted { reply(.rejected(ResumeResult(reason: .internalError, text: "the node is stopping"))) }
    }

    /// Back on the new connection's loop with the decision.
    private func resumeDecided(_ decision: ResumeDecision) {
        // Reading resumes once the decision is applied: frames already decoded after the RESUME must meet the
        // resumed machine, not the idle one.
        defer { carryOut(connection.resume(deciding: false)) }
        switch decision {
        case .accepted(let next, let actions, let code):
            registrationTimer?.cancel()
            registrationTimer = nil
            everRegistered = true
            machine = next
            joinedCode = code
            connection.sessionResumed()
            node?.nodeMetrics.resumed()
            perform(actions)
        case .takenOver(let next, let actions, let code, let previousNode, let why):
            guard let node, !link.isClosed else { return }
            let state: SessionCodeState =
                switch next.state {
                case .active: .active
                case .requestPending: .requestPending
                default: .online
                }
            let id = self.id
            guard
                let intents = node.sessions.withLock({
                    $0.registry.adoptSession(
                        id, code: code, deviceName: deviceName, state: state, previousNode: previousNode, why: why,
                        now: node.clock.wallTime)
                })
            else {
                refuseResume(ResumeResult(reason: .resumeRejected, text: "no resumable session for that code"))
                return
            }
            registrationTimer?.cancel()
            registrationTimer = nil
            everRegistered = true
            machine = next
            joinedCode = code
            connection.sessionResumed()
            node.nodeMetrics.resumed()
            node.logger.log(
                .info,
                why == "node_restarted"
                    ? "code \(Redact.code(code)): the device resumed the session of this node's previous process"
                    : "code \(Redact.code(code)): the device resumed here the session of node \(previousNode), which is gone")
            perform(actions, commandIntents: intents)
            enqueue(
                .then(
                    Completion(
                        success: { node.sessions.withLock { _ = $0.registry.registrationCommitted(id, code: code) } },
                        failed: { [self] in
                            node.sessions.withLock { $0.registry.registrationFailed(id, code: code) }
                            self.joinedCode = nil
                        })))
        case .rejected(let result):
            refuseResume(result)
        }
    }

    /// A refused RESUME counts toward the refusals on this connection (§13.1: the 5th closes it).
    private func refuseResume(_ result: ResumeResult) {
        node?.nodeMetrics.resumeRefused()
        node?.handshakeLog.log(
            .warning, key: "resume:" + sourceKey, "resume from \(sourceAddress) refused: \(result.reason)")
        carryOut(connection.resumeRefused(.resumeResult(result)))
    }

    /// Decides a REGISTER with the token and the registry (under the node's session lock, taken by
    /// ``perform(_:commandIntents:)`` for the whole step). The answer's frame leaves only after the intents commit.
    private func decide(_ register: Register, in state: inout SupporterNode.SessionState, now: Date)
        -> RegistrationDecision
    {
        let record = state.tokens.record(digest: APITokenStore.digest(of: register.apiToken))
        let tokenID = record?.scope == .device ? record?.id : nil
        let outcome = state.registry.register(
            RegistrationAttempt(connection: id, code: register.sessionCode, deviceTokenID: tokenID, deviceName: deviceName),
            now: now)
        pendingIntents = outcome.intents
        switch outcome {
        case .accepted:
            registrationAccepted = true
        case .refused(let refusal):
            closeAfterAnswer = refusal.closeConnection
            refusalAudited = refusal.audited
            registrationRefusal = refusal.reason
        }
        return outcome.decision
    }

    /// Logs the registry's decision on `register`, after the lock.
    private func logDecision(on register: Register, node: SupporterNode) {
        if registrationAccepted {
            registrationAccepted = false
            node.nodeMetrics.registrationAccepted()
            registrationTimer?.cancel()
            registrationTimer = nil
            node.logger.log(
                .info,
                "code \(Redact.code(register.sessionCode)) online: device '\(deviceName ?? "?")' from \(sourceAddress)")
        }
        if let reason = registrationRefusal {
            registrationRefusal = nil
            node.nodeMetrics.registrationRefused(reason)
            node.handshakeLog.log(
                .warning, key: "register:" + sourceKey,
                "registration of code \(Redact.code(register.sessionCode)) from \(sourceAddress) refused: \(reason)")
        }
    }

    /// What the registry decided on the REGISTER of the current step, for the logs written after the lock.
    private var registrationAccepted = false
    private var registrationRefusal: ReasonCode?

    // MARK: commands (hop to the loop)

    /// Runs `body` on the loop with the machine; returns its result once what it reports is durable and what it sends
    /// has been handed to the link.
    func run<Result: Sendable>(
        _ body: @escaping @Sendable (inout SupporterSessionMachine) throws(SupporterSessionMachine.Refusal) -> (
            [SupporterSessionMachine.Action], Result
        )
    ) async throws(SupporterNodeError) -> Result {
        try await runAudited { machine throws(SupporterSessionMachine.Refusal) in
            let (actions, result) = try body(&machine)
            return (actions, [], result)
        }
    }

    /// Like ``run(_:)``, with store intents of the command itself (a request sent, …) written before its frames leave.
    func runAudited<Result: Sendable>(
        _ body: @escaping @Sendable (inout SupporterSessionMachine) throws(SupporterSessionMachine.Refusal) -> (
            [SupporterSessionMachine.Action], [StoreIntent], Result
        )
    ) async throws(SupporterNodeError) -> Result {
        let outcome: Swift.Result<Result, SupporterNodeError> = await withCheckedContinuation { continuation in
            let resume = OnceContinuation(continuation)
            let accepted = link.loop.execute { [self] in
                do throws(SupporterSessionMachine.Refusal) {
                    let (actions, intents, result) = try body(&self.machine)
                    self.perform(actions, commandIntents: intents)
                    self.enqueue(
                        .then(
                            Completion(
                                success: { resume.resume(.success(result)) },
                                failed: {
                                    resume.resume(
                                        .failure(
                                            SupporterNodeError(
                                                "the node could not record this in its audit trail; nothing was sent",
                                                kind: .store)))
                                })))
                } catch {
                    // The session's state forbids the command (a request already pending, a session already active,
                    // no request to cancel): a conflict with the code's state, which the REST API answers with 409.
                    // Too many messages waiting for the device: back-pressure, worth a retry (503 with Retry-After).
                    let kind: SupporterNodeError.Kind = error.kind == .full ? .busy : .conflict
                    resume.resume(.failure(SupporterNodeError(error.description, kind: kind)))
                }
            }
            if !accepted {
                resume.resume(.failure(SupporterNodeError("the device's connection is closing", kind: .conflict)))
            }
        }
        return try outcome.get()
    }

    /// Closes the link with GOAWAY `reason` (any thread).
    func closeLink(reason: ReasonCode, text: String) { link.close(reason: reason, text: text) }

    /// The node drains (SIGTERM, `drain`; SPEC §15.5 "Drain"). A session that can resume is handed over — its state
    /// as last recorded stays in the store, the code's presence lapses at once so that the next node the device
    /// reaches takes it over (on SQLite: this node's next process, ``UnresumedSession``), nothing ends here — and the
    /// device gets GOAWAY `going_away` with `resume_elsewhere`, after the handover is committed. Anything else shuts
    /// down as before (``shutDown()``). Any thread.
    func drain() {
        let accepted = link.loop.execute { [self] in
            guard let node, let code = joinedCode, !movedAway, let snapshot = machine.resumeSnapshot else {
                self.shutDownHere()
                return
            }
            guard connection.nodeDrains(sessionCanResume: machine.canResume) == .handOver else {
                self.shutDownHere()
                return
            }
            var intents: [StoreIntent] = []
            let stored = StoredResumeState(snapshot).json
            // Written even when unchanged: a renewal may have cleared the row's record since (the registry lets go
            // of the code before this commit), and the next node needs it.
            intents.append(.resumeState(code: code, state: stored))
            intents.append(.handOverPresence(code: code))
            guard node.sessions.withLock({ $0.registry.sessionMovedElsewhere(code: code, from: id) }) else {
                self.shutDownHere()
                return
            }
            node.logger.log(.info, "code \(Redact.code(code)): handing the session over (the node drains)")
            let wasParked = stopActingForSession()
            submit(intents)
            let link = self.link
            enqueue(
                .then(
                    Completion(
                        success: {
                            link.close(
                                reason: .goingAway, text: "the supporter node restarts; resume your session",
                                resumeElsewhere: true)
                            if wasParked { node.connectionClosed(self) }
                        },
                        failed: {
                            link.close(reason: .goingAway, text: "the supporter node shuts down")
                            if wasParked { node.connectionClosed(self) }
                        })))
        }
        if !accepted { link.close(reason: .goingAway, text: "the supporter node shuts down") }
    }

    /// Another node claimed `code`, which this connection holds (this node's lease lapsed): drops the session here
    /// without a record — no end, no `device_offline` — and closes the link (GOAWAY `session_code_in_use`) if it is
    /// still open; a parked session is forgotten at once (any thread).
    func sessionTakenElsewhere(code: String) {
        _ = link.loop.execute { [self] in self.dropMovedSession(code: code) }
    }

    /// On the loop: ``sessionTakenElsewhere(code:)``.
    private func dropMovedSession(code: String) {
        link.loop.preconditionInLoop()
        guard let node, !movedAway, joinedCode == code else { return }
        guard node.sessions.withLock({ $0.registry.sessionMovedElsewhere(code: code, from: id) }) else { return }
        node.logger.log(
            .warning,
            "code \(Redact.code(code)): another node took this session over while this node's lease had lapsed; "
                + "dropped here without a record")
        letGo(node, reason: .sessionCodeInUse, text: Self.claimedElsewhere)
    }

    /// Why a link closes whose code another node claimed while this node's lease had lapsed (SPEC §15.5): its own
    /// session resumed there (the device then ignores this old connection), or a second device registered the code.
    static let claimedElsewhere = "another node holds this session code now (this node lost its claim while stalled)"

    /// This connection stops acting for its session (it went elsewhere): no code, no timers, not parked. Returns
    /// whether it was parked — then nothing else holds it, and the caller lets the node forget it. On the loop.
    private func stopActingForSession() -> Bool {
        movedAway = true
        joinedCode = nil
        graceTimer?.cancel()
        graceTimer = nil
        timer?.cancel()
        timer = nil
        defer { parked = false }
        return parked
    }

    /// The session went elsewhere (the registry no longer has it here): this connection ends nothing from now on; a
    /// parked one is forgotten at once, an open link closes with GOAWAY `reason` — `session_moved` for a resume on
    /// another connection of this node, `session_code_in_use` when another node claimed the code. On the loop.
    private func letGo(_ node: SupporterNode, reason: ReasonCode = .sessionMoved, text: String) {
        if stopActingForSession() {
            node.connectionClosed(self)
        } else {
            link.close(reason: reason, text: text)
        }
    }

    /// Ends the session (if any) with `going_away`, then closes the link. Any thread.
    func shutDown() {
        let accepted = link.loop.execute { [self] in self.shutDownHere() }
        if !accepted { link.close(reason: .goingAway, text: "the supporter node shuts down") }
    }

    /// ``shutDown()`` on the loop.
    private func shutDownHere() {
        if let actions = try? machine.end(reason: .goingAway, text: "the supporter node shuts down") {
            perform(actions)
        }
        enqueue(.close(.goingAway, "the supporter node shuts down"))
    }

    /// A connection must register within the configured time after HELLO (and again after it leaves its code), or it
    /// is closed with GOAWAY `protocol_error`. Before HELLO the transport's handshake timeout applies. On the loop.
    func armRegistrationDeadline() {
        registrationTimer?.cancel()
        guard let node else { return }
        let limit = node.configuration.registrationDeadline
        registrationTimer = link.loop.schedule(at: link.loop.now + limit) { [weak self] in
            guard let self, self.machine.state == .idle else { return }
            self.registrationTimer = nil
            node.handshakeLog.log(
                .info, key: "deadline:" + self.sourceKey,
                "device at \(self.sourceAddress) did not register within \(limit); closing")
            self.link.close(reason: .protocolError, text: "no REGISTER within \(limit)")
        }
    }

    // MARK: actions and the outbox

    private func perform(_ actions: [SupporterSessionMachine.Action], commandIntents: [StoreIntent] = []) {
        link.loop.preconditionInLoop()
        guard let node else { return }
        var actions = actions
        var intents = commandIntents
        var events: [SupporterNodeEvent] = []
        var registered: String?
        var left = false
        var suppressed = 0
        var register: Register?
        let now = node.clock.wallTime
        var stateAfterCommit: SupporterSessionMachine.State?
        /// When the device's allow reached the node (a session starts with this step).
        var allowedAt: Deadline?
        /// What the step reports, counted in the metrics once the session lock is released.
        var counted: [SupporterSessionEvent] = []
        let recordsState = joinedCode != nil || actions.contains { if case .report = $0 { true } else { false } }
        let decides = actions.contains { if case .authorize = $0 { true } else { false } }
        if decides || recordsState {
            // One take of the node's session lock for the whole step: the registry's decision on a REGISTER (with its
            // token), its outcome for each report, and the machine's new state. The people lock is never taken here.
            node.sessions.withLock { state in
                if decides {
                    actions = actions.flatMap { action -> [SupporterSessionMachine.Action] in
                        guard case .authorize(let asked) = action else { return [action] }
                        register = asked
                        return machine.registrationDecided(decide(asked, in: &state, now: now))
                    }
                    intents += pendingIntents
                    pendingIntents = []
                }
                // Reports first: what they record must be durable before any frame of the same event leaves.
                for case .report(let event) in actions {
                    counted.append(event)
                    if case .connected = event { allowedAt = link.loop.now }
                    if case .deviceOnline(let code, _) = event {
                        joinedCode = code
                        registered = code
                        everRegistered = true
                        connection.registrationAccepted()
                    }
                    guard let code = joinedCode ?? event.code else { continue }
                    if case .registrationRefused = event, !refusalAudited { continue }  // counted, not reported one by one
                    let outcome = state.registry.sessionEventOutcome(event, on: id, now: now)
                    intents += outcome.intents
                    // Over its audit quota a repeatable device event is only counted (an aggregate row follows).
                    if outcome.reported {
                        events.append(SupporterNodeEvent(code: code, event: event, deviceName: deviceName))
                    } else {
                        suppressed += 1
                    }
                    if case .ended = event, joinedCode != nil {
                        joinedCode = nil
                        left = true
                    }
                }
                if let code = joinedCode {
                    // What another node (or this node's next process) needs to take this session over if this
                    // process stops or dies, durable with the event.
                    let stored = machine.resumeSnapshot.map { StoredResumeState($0).json }
                    if let stored, stored != storedResumeState {
                        storedResumeState = stored
                        intents.append(.resumeState(code: code, state: stored))
                    }
                }
                // The session's state as others see it (request pending, active, …) changes when what the step
                // records is durable: now when it records nothing and no commit is pending, else after the commit, in
                // order behind it (decide → commit → apply).
                if joinedCode != nil {
                    if intents.isEmpty, connection.barriers == 0 {
                        state.registry.machineState(machine.state, on: id)
                    } else {
                        stateAfterCommit = machine.state
                    }
                }
            }
        }
        for event in counted { node.nodeMetrics.report(event) }
        for _ in 0..<suppressed { countSuppressedEvent() }
        if let register { logDecision(on: register, node: node) }
        if !intents.isEmpty { submit(intents) }
        let connectionID = self.id
        if let registered {
            enqueue(
                .then(
                    Completion(
                        success: {
                            node.sessions.withLock { state in
                                _ = state.registry.registrationCommitted(connectionID, code: registered)
                                if let stateAfterCommit { state.registry.machineState(stateAfterCommit, on: connectionID) }
                            }
                        },
                        failed: { [self] in
                            // Never recorded, so it never happened: free the code now, and the closing link ends no
                            // session (no `device_offline` row, no `ended` event for a registration nobody heard of).
                            node.sessions.withLock { $0.registry.registrationFailed(connectionID, code: registered) }
                            self.joinedCode = nil
                        })))
        } else if let stateAfterCommit {
            enqueue(
                .then(
                    Completion(
                        success: { node.sessions.withLock { $0.registry.machineState(stateAfterCommit, on: connectionID) } },
                        failed: {})))
        }
        // The device's frames before the node's own observers: the frames go out as soon as the commit is back, and
        // waking an `events` consumer (another thread) does not delay them.
        var violation: String?
        for action in actions {
            switch action {
            case .send(let message): enqueue(.send(message))
            case .report: break
            case .authorize: break  // decided above, in the step's lock take
            case .protocolViolation(let text):
                node.logger.log(.warning, "device at \(sourceAddress) broke the protocol: \(text)")
                violation = text
            }
        }
        if !events.isEmpty {
            enqueue(.then(Completion(success: { for event in events { node.yield(event) } }, failed: {})))
        }
        if let allowedAt {
            // Once the session is durable and the supporter is told (the events above): the answer → started time.
            let loop = link.loop
            enqueue(
                .then(
                    Completion(
                        success: { node.nodeMetrics.sessionStart.observe(loop.now.since(allowedAt)) }, failed: {})))
        }
        if let violation { earnClose(.protocolError, violation) }
        if floodDetected, connection.processesFrames { earnClose(.rateLimited, "too many SESSION_ERROR or VOIP_STATE frames") }
        if left, !link.isClosed { armRegistrationDeadline() }
        if parked, machine.state == .idle {
            // The parked session ended (grace period, the supporter ended it, the code closed): this connection is
            // done.
            parked = false
            graceTimer?.cancel()
            graceTimer = nil
            node.connectionClosed(self)
        }
        armTimer()
    }

    /// Hands `intents` to the store writer and puts a barrier in the outbox until they commit.
    private func submit(_ intents: [StoreIntent]) {
        guard let node else { return }
        let (admitted, refusal) = connection.mayCommit()
        guard admitted else {
            carryOut(refusal)
            return
        }
        // Tried again only as the one commit in flight: nothing else can then be behind its barrier.
        pendingClaim = nil
        for case .claimPresence(let code, _) in intents where node.cluster != nil && commitsInFlight == 0 {
            pendingClaim = (code, intents, false)
        }
        let queued = queue(intents, on: node)
        carryOut(queued ? connection.commitQueued() : connection.commitRefused())
    }

    /// Hands `intents` to the store writer; the commit comes back to ``committed(_:)`` on the loop.
    private func queue(_ intents: [StoreIntent], on node: SupporterNode) -> Bool {
        if heldWhileRetrying != nil {
            heldWhileRetrying?.append(intents)
            return true
        }
        let loop = link.loop
        // On a closed link nothing behind the barrier reaches the device or a caller waiting on it, only events: the
        // record may wait a little for the next write that wakes the writer, and share its transaction.
        let queued = node.store.submit(intents, deferrable: link.isClosed) { [self] error in
            let delivered = loop.execute { self.committed(error) }
            if !delivered { self.node?.logger.log(.debug, "commit for \(self.sourceAddress) after its loop stopped") }
        }
        if queued { commitsInFlight += 1 }
        return queued
    }

    /// A registration's claim met another node's row: when it is the only commit in flight, asks that node to let
    /// go of the code and submits the claim once more, reading paused meanwhile; the machine learns only the second
    /// outcome (its barrier still waits). False when this is not such a claim, or it was tried again already.
    private func claimAgainAfterVacate(_ error: StoreError) -> Bool {
        guard error.kind == .heldElsewhere, let node, let claim = pendingClaim, !claim.retried, commitsInFlight == 0,
            !link.isClosed
        else { return false }
        pendingClaim?.retried = true
        heldWhileRetrying = []
        carryOut(connection.resume(deciding: true))
        let loop = link.loop
        Task { [self] in
            if let holder = try? await node.remoteHolder(of: claim.code) { await node.askToVacate(claim.code, holder: holder) }
            let delivered = loop.execute {
                self.carryOut(self.connection.resume(deciding: false))
                let held = self.heldWhileRetrying ?? []
                self.heldWhileRetrying = nil
                if self.link.isClosed || !self.connection.processesFrames {
                    // The device went away meanwhile: the claim is not tried again, and stays refused.
                    self.pendingClaim = nil
                    self.deliver(error)
                } else if !self.queue(claim.intents, on: node) {
                    self.pendingClaim = nil
                    self.carryOut(self.connection.committed(.failed("the node is overloaded and cannot record this event")))
                }
                for intents in held where !self.queue(intents, on: node) {
                    self.carryOut(
                        self.connection.fail(reason: .internalError, text: "the node is overloaded and cannot record this event"))
                }
            }
            if !delivered { node.logger.log(.debug, "a claim was to be tried again after its loop stopped") }
        }
        return true
    }

    /// A commit came back (in order). On the loop.
    private func committed(_ error: StoreError?) {
        link.loop.preconditionInLoop()
        commitsInFlight -= 1
        if let error, claimAgainAfterVacate(error) { return }
        pendingClaim = nil
        deliver(error)
    }

    /// A commit's outcome, for the machine (the oldest barrier). On the loop.
    private func deliver(_ error: StoreError?) {
        let failure: DeviceConnectionMachine<Completion>.CommitFailure?
        switch error {
        case nil: failure = nil
        case let error? where error.kind == .heldElsewhere:
            node?.logger.log(.info, "device at \(sourceAddress): another node holds a device on its code; refused")
            failure = .heldElsewhere
        case let error? where error.kind == .fenced:
            // This node's lease lapsed and another node claimed the code: nothing of this event was recorded, and
            // the session is dropped here (it goes on there).
            if let code = joinedCode { dropMovedSession(code: code) }
            failure = .moved
        case let error?:
            node?.logger.log(
                .error,
                "audit trail: cannot record an event of the device at \(sourceAddress); it did not happen: \(error)")
            failure = .failed(error.description)
        }
        carryOut(connection.committed(failure))
    }

    private func enqueue(_ step: DeviceConnectionMachine<Completion>.Step) {
        link.loop.preconditionInLoop()
        carryOut(connection.enqueue(step))
    }

    /// Carries out the connection machine's effects, in order. On the loop.
    private func carryOut(_ effects: [DeviceConnectionMachine<Completion>.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let message):
                do { try link.send(message) } catch {
                    node?.logger.log(.debug, "cannot send \(message.frameType.specName) to \(sourceAddress): \(error)")
                }
            case .succeed(let completion): completion.success()
            case .fail(let completion): completion.failed()
            case .close(let reason, let text): link.close(reason: reason, text: text)
            case .pauseReading: link.pauseReading()
            case .resumeReading: link.resumeReading()
            case .armEarnedClose(let reason, let text):
                earnedCloseTimer = link.loop.schedule(at: now + Self.limits.earnedCloseWait) { [weak self] in
                    guard let self else { return }
                    self.earnedCloseTimer = nil
                    if !self.link.isClosed {
                        self.node?.logger.log(
                            .debug, "device at \(self.sourceAddress): closing without the answers still waiting for the store")
                    }
                    self.carryOut(self.connection.earnedCloseTimedOut(reason, text))
                }
            case .failSoon(let reason, let text):
                // Behind the frames of this event, which go behind the barrier that never commits and fail with it.
                let scheduled = link.loop.execute { [self] in self.carryOut(self.connection.fail(reason: reason, text: text)) }
                if !scheduled { carryOut(connection.fail(reason: reason, text: text)) }
            case .warn(let text):
                node?.logger.log(.warning, "device at \(sourceAddress): \(text)")
            }
        }
    }

    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard let deadline = machine.nextDeadline else { return }
        let at = deadline
        timer = link.loop.schedule(at: at) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.perform(self.machine.tick(now: now))
        }
    }
}

/// Resumes a continuation once; later calls do nothing. Used from one loop thread at a time.
final class OnceContinuation<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `continuation` is read and cleared only on the one loop thread that runs the command's steps (the
    // refusal path when the loop refused the work runs before any step could).
    private var continuation: CheckedContinuation<Value, Never>?

    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation = continuation }

    func resume(_ value: Value) {
        continuation?.resume(returning: value)
        continuation = nil
    }
}

extension SupporterSessionEvent {
    /// The code an event names, for events that carry one.
    var code: String? {
        switch self {
        case .deviceOnline(let code, _), .registrationRefused(let code, _): code
        default: nil
        }
    }
}
