import SupportUtilities
public import SupportWire

/// What one device connection owes and may still do, as a value: its outbox, the commit barriers in it, when reading
/// from the device pauses and resumes, and how an earned close or a failed commit ends the connection. Sans-I/O: the
/// glue (the node's `DeviceConnection`) feeds it what happened and carries out the ``Effect``s it returns, in order.
///
/// Audit before acknowledgement: when a step of the session records something, the glue hands its intents to the
/// store writer and the machine puts a barrier in the outbox (``commitQueued()``). Everything after a barrier —
/// frames to the device, events for supporters, answers to API callers (a `Completion`) — waits until its commit comes
/// back (``committed(_:)``). A failed commit fails the connection: nothing behind the barrier happens, the waiting
/// completions hear of it, and the link closes.
///
/// `Completion` is what the glue runs after the barriers before it committed (in the node, a pair of closures;
/// in tests, any value).
public struct DeviceConnectionMachine<Completion> {
    /// One thing waiting in the outbox.
    public enum Step {
        /// Everything after it waits for one commit.
        case barrier
        case send(Message)
        /// Succeeds once every barrier before it committed; fails when one of them did not.
        case then(Completion)
        case close(ReasonCode, String)
    }

    /// What the glue carries out, in order.
    public enum Effect {
        case send(Message)
        /// Every barrier before it committed: run its success.
        case succeed(Completion)
        /// A barrier before it will never commit: run its failure.
        case fail(Completion)
        /// Close the link with GOAWAY `reason`.
        case close(ReasonCode, String)
        case pauseReading
        case resumeReading
        /// Close the link with GOAWAY after ``Limits/earnedCloseWait`` unless it closed by then
        /// (``earnedCloseTimedOut()``).
        case armEarnedClose(ReasonCode, String)
        /// Fail the connection on the loop's next turn (``fail(reason:text:)``), once the caller has put the rest of
        /// the current event's steps behind the barrier that never commits.
        case failSoon(ReasonCode, String)
        /// Something an operator should know (a warning).
        case warn(String)
    }

    /// Why a commit failed.
    public enum CommitFailure: Sendable, Hashable {
        /// Several nodes on one database: another node's device holds the code.
        case heldElsewhere
        /// Several nodes on one database: another node claimed the code since this one did (fencing); the session
        /// goes on there.
        case moved
        /// The store could not record it.
        case failed(String)
    }

    /// The bounds of one connection (SPEC §13.1).
    public struct Limits: Sendable, Hashable {
        /// Commits one connection may wait for before the node stops reading from it (reading resumes below half).
        public var pauseReadingAtBarriers = 16
        /// Commits at which the connection is failed (GOAWAY `rate_limited`).
        public var maximumBarriers = 64
        /// Steps waiting at which the node stops reading from the device, audited or not (resumes below half).
        public var pauseReadingAtSteps = 64
        /// Steps at which the connection is closed instead (GOAWAY `rate_limited`).
        public var maximumSteps = 1024
        /// How long an earned close waits for the answers owed before it.
        public var earnedCloseWait: Duration = .seconds(1)
        /// Refused RESUMEs on one connection before it is closed (GOAWAY `rate_limited`).
        public var resumeRefusalsBeforeClose = 5

        public init() {}
    }

    public let limits: Limits
    private var outbox = RingBuffer<Step>()
    /// Barriers in the outbox.
    public private(set) var barriers = 0
    /// The connection earned its close: nothing it sends from now on is processed.
    public private(set) var closeEarned = false
    /// Reading waits for the message budget to refill.
    public private(set) var throttled = false
    /// A RESUME is being decided by the connection that holds the code; reading waits.
    public private(set) var resuming = false
    public private(set) var readingPaused = false
    /// Whether the link is closed (frames can no longer leave).
    public private(set) var linkClosed = false
    public private(set) var resumeRefusals = 0
    /// Whether the device holds a resume secret its session accepts (SPEC §15.5): a frame that carries one
    /// (REGISTER_RESULT, RESUME_RESULT, SESSION_STARTED) left while the link was open, or the session came to this
    /// connection by a RESUME (the secret the device resumed with stays accepted until the next one reaches it).
    /// A device without one cannot resume: its lost link ends the session at once (``keepsSessionOnLinkLoss``).
    public private(set) var deviceHoldsResumeSecret = false
    /// The session was handed over (a drain): nothing the device sends is processed here any more.
    public private(set) var handedOver = false

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Steps waiting.
    public var waitingSteps: Int { outbox.count }

    /// Whether a frame from the device is still processed.
    public var processesFrames: Bool { !closeEarned && !handedOver }

    /// Whether a lost link keeps the session for the resume grace period, given whether the session machine could
    /// resume it (session_resume in effect, a session): only when the device can come back for it. A registration
    /// whose REGISTER_RESULT never left — its commit came back after the device gave up, say while the node was cut
    /// off from its database (issue 22 item 5) — holds the code for nobody, so it ends at once and frees the code.
    public func keepsSessionOnLinkLoss(sessionCanResume: Bool) -> Bool {
        sessionCanResume && deviceHoldsResumeSecret
    }

    // MARK: events

    /// Puts `step` in the outbox and carries out what no barrier holds back. Past ``Limits/maximumSteps`` the
    /// connection is failed (GOAWAY `rate_limited`).
    public mutating func enqueue(_ step: Step) -> [Effect] {
        var effects: [Effect] = []
        if outbox.count >= limits.maximumSteps, !closeEarned, !linkClosed {
            effects.append(.warn("\(outbox.count) answers wait for it; disconnecting it"))
            closeEarned = true
            effects += failAfterThisEvent(.rateLimited, "too many answers waiting")
        }
        outbox.append(step)
        effects += drain()
        return effects
    }

    /// Intents of the current event are about to be handed to the store writer: false (and the connection failing)
    /// when ``Limits/maximumBarriers`` commits wait already, so the glue must not submit them.
    public mutating func mayCommit() -> (Bool, [Effect]) {
        guard barriers < limits.maximumBarriers else {
            return (false, [.warn("outruns the store writer; disconnecting it")] + failAfterThisEvent(.rateLimited, "too many events in flight"))
        }
        return (true, [])
    }

    /// The store writer took the intents: everything enqueued from now on waits for their commit.
    public mutating func commitQueued() -> [Effect] {
        barriers += 1
        outbox.append(.barrier)
        return updateReading()
    }

    /// The store writer refused the intents (its queue is full): the connection fails after this event.
    public mutating func commitRefused() -> [Effect] {
        [.warn("store writer full: refusing an event")]
            + failAfterThisEvent(.internalError, "the node is overloaded and cannot record this event")
    }

    /// The oldest commit came back (commits come back in order).
    public mutating func committed(_ failure: CommitFailure?) -> [Effect] {
        guard barriers > 0, case .barrier = outbox.first else { return [] }
        outbox.popFirst()
        barriers -= 1
        switch failure {
        case .heldElsewhere?:
            // Refused as REGISTER_RESULT would refuse it; nothing of the registration was stored.
            return fail(reason: .sessionCodeInUse, text: "another device is on this code (on another node)")
        case .moved?:
            // Another node claimed the code while this node's lease had lapsed: the device's own session resumed
            // there, or a second device registered the code (SPEC §15.5).
            return fail(
                reason: .sessionCodeInUse, text: "another node holds this session code now (this node lost its claim while stalled)")
        case .failed?:
            return fail(reason: .internalError, text: "the node cannot record this event")
        case nil:
            return drain()
        }
    }

    /// Nothing waiting in the outbox happens: the waiting completions fail and the link closes. Nothing the device
    /// sends from now on is processed.
    public mutating func fail(reason: ReasonCode, text: String) -> [Effect] {
        closeEarned = true
        let dropped = outbox.removeAll()
        barriers = 0
        var effects = updateReading()
        for case .then(let completion) in dropped { effects.append(.fail(completion)) }
        effects.append(.close(reason, text))
        return effects
    }

    /// The connection earned its close (too many refusals, a protocol violation, a flood): reading stops now, and the
    /// GOAWAY follows the answers already owed — or comes after ``Limits/earnedCloseWait`` without them.
    public mutating func earnClose(_ reason: ReasonCode, _ text: String) -> [Effect] {
        guard !closeEarned else { return [] }
        closeEarned = true
        var effects = updateReading()
        effects += enqueue(.close(reason, text))
        if !linkClosed { effects.append(.armEarnedClose(reason, text)) }
        return effects
    }

    /// The earned close's wait ran out: close without the answers still waiting for the store.
    public mutating func earnedCloseTimedOut(_ reason: ReasonCode, _ text: String) -> [Effect] {
        linkClosed ? [] : [.close(reason, text)]
    }

    /// The message budget ran dry (`true`) or refilled (`false`).
    public mutating func throttle(_ on: Bool) -> [Effect] {
        throttled = on
        return updateReading()
    }

    /// A RESUME began (`true`) or was decided (`false`): reading waits meanwhile.
    public mutating func resume(deciding: Bool) -> [Effect] {
        resuming = deciding
        return updateReading()
    }

    /// A RESUME on this connection was refused: the answer goes out, and the 5th refusal earns the close.
    public mutating func resumeRefused(_ answer: Message) -> [Effect] {
        resumeRefusals += 1
        var effects = enqueue(.send(answer))
        if resumeRefusals >= limits.resumeRefusalsBeforeClose {
            effects += earnClose(.rateLimited, "too many refused resumes on this connection")
        }
        return effects
    }

    /// The link closed: frames no longer leave.
    public mutating func linkDidClose() { linkClosed = true }

    /// A new registration was accepted on this connection: the device holds no secret for it until its
    /// REGISTER_RESULT leaves.
    public mutating func registrationAccepted() { deviceHoldsResumeSecret = false }

    /// The session came to this connection by a RESUME: the device holds the secret it resumed with, which the
    /// session accepts until the next one reaches it.
    public mutating func sessionResumed() { deviceHoldsResumeSecret = true }

    /// What a drain (SIGTERM, `drain`; SPEC §15.5 "Drain") does with this connection.
    public enum DrainPlan: Sendable, Hashable {
        /// Hand the session over: record its state, let its presence lapse, then GOAWAY `going_away` with
        /// `resume_elsewhere`. Frames from the device are no longer processed.
        case handOver
        /// End the session (if any) with `going_away` and close.
        case shutDown
    }

    /// The node drains. A session is handed over when the session machine could resume it (`sessionCanResume`) and
    /// the device can come back for it (``deviceHoldsResumeSecret``); from then on nothing the device sends on this
    /// link is processed — the session's next frames belong to the node it resumes on. The link is still read, so
    /// that the device's close_notify is seen and the close completes at once rather than at the transport's bound.
    public mutating func nodeDrains(sessionCanResume: Bool) -> DrainPlan {
        guard keepsSessionOnLinkLoss(sessionCanResume: sessionCanResume), !closeEarned, !handedOver else {
            return .shutDown
        }
        handedOver = true
        return .handOver
    }

    // MARK: internals

    /// Intents that cannot be queued fail the connection — but only once the caller has put the rest of the event's
    /// steps in the outbox, behind a barrier that never commits, so that they fail with it. Failing at once would
    /// leave them behind no barrier, and they would run (the code online, supporters told) as if written.
    private mutating func failAfterThisEvent(_ reason: ReasonCode, _ text: String) -> [Effect] {
        barriers += 1
        outbox.append(.barrier)
        return [.failSoon(reason, text)]
    }

    private mutating func drain() -> [Effect] {
        var effects: [Effect] = []
        while let step = outbox.first {
            if case .barrier = step { break }
            outbox.popFirst()
            switch step {
            case .barrier: break
            case .send(let message):
                if !linkClosed, message.carriesResumeSecret { deviceHoldsResumeSecret = true }
                effects.append(.send(message))
            case .then(let completion): effects.append(.succeed(completion))
            case .close(let reason, let text): effects.append(.close(reason, text))
            }
        }
        return effects + updateReading()
    }

    /// Pauses reading while too much waits (barriers or steps), after an earned close, while a RESUME is decided and
    /// while throttled; resumes once all of that is below half again.
    private mutating func updateReading() -> [Effect] {
        let mustPause =
            closeEarned || resuming || throttled || barriers >= limits.pauseReadingAtBarriers
            || outbox.count >= limits.pauseReadingAtSteps
        let mayRead =
            !closeEarned && !resuming && !throttled && barriers < limits.pauseReadingAtBarriers / 2
            && outbox.count < limits.pauseReadingAtSteps / 2
        if !readingPaused, mustPause {
            readingPaused = true
            return [.pauseReading]
        }
        if readingPaused, mayRead {
            readingPaused = false
            return [.resumeReading]
        }
        return []
    }
}

extension Message {
    /// REGISTER_RESULT, RESUME_RESULT or SESSION_STARTED with a resume secret (SPEC §15.5).
    fileprivate var carriesResumeSecret: Bool {
        switch self {
        case .registerResult(let result): result.resumeSecret != nil
        case .resumeResult(let result): result.resumeSecret != nil
        case .sessionStarted(let started): started.resumeSecret != nil
        default: false
        }
    }
}

extension DeviceConnectionMachine: Sendable where Completion: Sendable {}
extension DeviceConnectionMachine.Step: Sendable where Completion: Sendable {}
extension DeviceConnectionMachine.Effect: Sendable where Completion: Sendable {}
extension DeviceConnectionMachine.Step: Equatable where Completion: Equatable {}
extension DeviceConnectionMachine.Effect: Equatable where Completion: Equatable {}
