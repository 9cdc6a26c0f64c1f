import SupporterCore
import SupportWire
import Testing

/// The outbox, barriers and back-pressure of one device connection, without a socket (issue 21: its barrier logic
/// could only be tested through sockets before).
@Suite struct DeviceConnectionMachineTests {
    typealias Machine = DeviceConnectionMachine<String>

    static let ping = Message.ping(Ping(nonce: 1))
    static let pong = Message.pong(Pong(nonce: 2))

    /// The messages an effect list sends.
    static func sent(_ effects: [Machine.Effect]) -> [Message] {
        effects.compactMap { if case .send(let message) = $0 { message } else { nil } }
    }

    @Test func stepsBehindABarrierWaitForItsCommitThenLeaveInOrder() {
        var machine = Machine()
        #expect(machine.mayCommit().0)
        _ = machine.commitQueued()
        #expect(machine.enqueue(.send(Self.ping)).isEmpty)
        #expect(machine.enqueue(.then("answer")).isEmpty)
        #expect(machine.waitingSteps == 3)
        let effects = machine.committed(nil)
        #expect(effects == [.send(Self.ping), .succeed("answer")])
        #expect(machine.waitingSteps == 0)
        // Nothing waits now: the next step leaves at once.
        #expect(machine.enqueue(.send(Self.pong)) == [.send(Self.pong)])
    }

    @Test func aFailedCommitSendsNothingFailsTheWaitingAnswersAndCloses() {
        var machine = Machine()
        _ = machine.commitQueued()
        _ = machine.enqueue(.send(Self.ping))
        _ = machine.enqueue(.then("answer"))
        let effects = machine.committed(.failed("disk full"))
        #expect(Self.sent(effects).isEmpty)
        #expect(effects.contains(.fail("answer")))
        #expect(effects.last == .close(.internalError, "the node cannot record this event"))
        #expect(!machine.processesFrames)
        #expect(machine.barriers == 0 && machine.waitingSteps == 0)
    }

    @Test func aCodeHeldOnAnotherNodeClosesWithSessionCodeInUse() {
        var machine = Machine()
        _ = machine.commitQueued()
        _ = machine.enqueue(.then("register"))
        let effects = machine.committed(.heldElsewhere)
        #expect(effects.contains(.fail("register")))
        #expect(effects.last == .close(.sessionCodeInUse, "another device is on this code (on another node)"))
    }

    @Test func readingPausesAtSixtyFourWaitingStepsAndResumesBelowThirtyTwo() {
        var machine = Machine()
        _ = machine.commitQueued()
        var paused = false
        for _ in 0..<63 where machine.enqueue(.send(Self.ping)).contains(.pauseReading) { paused = true }
        #expect(paused && machine.readingPaused)
        _ = machine.committed(nil)
        #expect(!machine.readingPaused)
    }

    @Test func readingPausesAtSixteenBarriersAndResumesBelowEight() {
        var machine = Machine()
        var effects: [Machine.Effect] = []
        for _ in 0..<16 { effects += machine.commitQueued() }
        #expect(effects == [.pauseReading])
        for _ in 0..<8 { effects = machine.committed(nil) }
        #expect(machine.barriers == 8 && machine.readingPaused)
        effects = machine.committed(nil)
        #expect(effects == [.resumeReading])
    }

    @Test func tooManyWaitingStepsFailTheConnectionAfterTheEvent() {
        var limits = Machine.Limits()
        limits.maximumSteps = 4
        var machine = Machine(limits: limits)
        _ = machine.commitQueued()
        for _ in 0..<3 { _ = machine.enqueue(.send(Self.ping)) }
        let effects = machine.enqueue(.send(Self.ping))
        #expect(effects.contains(.failSoon(.rateLimited, "too many answers waiting")))
        #expect(!machine.processesFrames)
        // The rest of the event goes behind the barrier that never commits, and fails with it.
        let failed = machine.fail(reason: .rateLimited, text: "too many answers waiting")
        #expect(Self.sent(failed).isEmpty)
    }

    @Test func tooManyCommitsInFlightRefuseTheNextOne() {
        var limits = Machine.Limits()
        limits.maximumBarriers = 2
        var machine = Machine(limits: limits)
        _ = machine.commitQueued()
        _ = machine.commitQueued()
        let (admitted, effects) = machine.mayCommit()
        #expect(!admitted)
        #expect(effects.contains(.failSoon(.rateLimited, "too many events in flight")))
    }

    @Test func aFullStoreWriterFailsTheConnectionAfterTheEvent() {
        var machine = Machine()
        #expect(machine.commitRefused().contains(.failSoon(.internalError, "the node is overloaded and cannot record this event")))
        // The event's answer waits behind the barrier that never commits.
        #expect(machine.enqueue(.then("answer")).isEmpty)
        #expect(machine.fail(reason: .internalError, text: "x").contains(.fail("answer")))
    }

    @Test func anEarnedCloseStopsReadingAndClosesAfterTheAnswersOwed() {
        var machine = Machine()
        _ = machine.commitQueued()
        _ = machine.enqueue(.send(Self.ping))
        let effects = machine.earnClose(.protocolError, "bad frame")
        #expect(effects.first == .pauseReading)
        #expect(effects.last == .armEarnedClose(.protocolError, "bad frame"))
        #expect(!machine.processesFrames)
        // A second reason changes nothing.
        #expect(machine.earnClose(.rateLimited, "again").isEmpty)
        #expect(machine.committed(nil) == [.send(Self.ping), .close(.protocolError, "bad frame")])
    }

    @Test func theEarnedCloseTimerClosesUnlessTheLinkClosedFirst() {
        var machine = Machine()
        #expect(machine.earnedCloseTimedOut(.rateLimited, "x") == [.close(.rateLimited, "x")])
        machine.linkDidClose()
        #expect(machine.earnedCloseTimedOut(.rateLimited, "x").isEmpty)
    }

    @Test func theFifthRefusedResumeEarnsTheClose() {
        var machine = Machine()
        let answer = Message.resumeResult(ResumeResult(reason: .resumeRejected))
        for _ in 0..<4 { #expect(machine.resumeRefused(answer) == [.send(answer)]) }
        let effects = machine.resumeRefused(answer)
        #expect(effects.contains(.send(answer)))
        #expect(effects.contains(.close(.rateLimited, "too many refused resumes on this connection")))
        #expect(!machine.processesFrames)
    }

    @Test func aResumeBeingDecidedOrAThrottleHoldsReading() {
        var machine = Machine()
        #expect(machine.resume(deciding: true) == [.pauseReading])
        #expect(machine.throttle(true).isEmpty)
        #expect(machine.resume(deciding: false).isEmpty)
        #expect(machine.throttle(false) == [.resumeReading])
    }

    static let answered = Message.registerResult(RegisterResult(reason: .success, codeType: .remoteSupport, resumeSecret: "s1"))

    @Test func aRegistrationWhoseAnswerNeverLeftKeepsNoSessionWhenTheLinkIsLost() {
        var machine = Machine()
        machine.registrationAccepted()
        _ = machine.commitQueued()
        _ = machine.enqueue(.send(Self.answered))
        // The device gave up and closed before the commit came back (the node was cut off from its database).
        machine.linkDidClose()
        #expect(Self.sent(machine.committed(nil)) == [Self.answered])
        #expect(!machine.deviceHoldsResumeSecret)
        #expect(!machine.keepsSessionOnLinkLoss(sessionCanResume: true))
    }

    @Test func aRegistrationAnsweredWithASecretKeepsItsSessionWhenTheLinkIsLost() {
        var machine = Machine()
        machine.registrationAccepted()
        _ = machine.commitQueued()
        _ = machine.enqueue(.send(Self.answered))
        #expect(!machine.keepsSessionOnLinkLoss(sessionCanResume: true), "nothing has left yet")
        _ = machine.committed(nil)
        #expect(machine.keepsSessionOnLinkLoss(sessionCanResume: true))
        #expect(!machine.keepsSessionOnLinkLoss(sessionCanResume: false), "no session, or session_resume not in effect")
        // A new registration on the same connection: its own answer must leave first.
        machine.registrationAccepted()
        #expect(!machine.keepsSessionOnLinkLoss(sessionCanResume: true))
    }

    @Test func aResumedSessionIsKeptEvenBeforeItsResumeResultLeaves() {
        // The device still holds the secret it resumed with, which the session accepts until the next one reaches it.
        var machine = Machine()
        machine.sessionResumed()
        _ = machine.commitQueued()
        _ = machine.enqueue(.send(.resumeResult(ResumeResult(reason: .success, resumeSecret: "s2"))))
        machine.linkDidClose()
        #expect(machine.keepsSessionOnLinkLoss(sessionCanResume: true))
    }

    @Test func aDrainHandsOverOnlyASessionTheDeviceCanResumeAndStopsProcessingItsFrames() {
        var unanswered = Machine()
        unanswered.registrationAccepted()
        #expect(unanswered.nodeDrains(sessionCanResume: true) == .shutDown)
        #expect(unanswered.processesFrames)

        var machine = Machine()
        machine.registrationAccepted()
        _ = machine.enqueue(.send(Self.answered))
        #expect(machine.nodeDrains(sessionCanResume: false) == .shutDown)
        #expect(machine.nodeDrains(sessionCanResume: true) == .handOver)
        #expect(!machine.processesFrames, "the session's next frames belong to the node it resumes on")
        // The link is still read (the device's close_notify ends the close at once), but nothing is processed.
        #expect(!machine.readingPaused)
        #expect(machine.nodeDrains(sessionCanResume: true) == .shutDown, "handed over once")
    }
}
