// SPEC §15.5: a lost link keeps the session; RESUME moves it to a new link, reconciling what was lost in flight.
import Testing

@testable import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary

@Suite struct ResumeTests {
    /// Both sides lose the link; the device presents its RESUME and the node's machine answers on the new link.
    private static func resume(_ pair: inout SessionPair) -> SupporterSessionMachine.ResumeOutcome? {
        pair.fromDevice(pair.device.linkLost(reason: .connectionLost, message: "EOF"))
        pair.fromSupporter(pair.supporter.linkLost(reason: .connectionLost, text: "EOF"))
        guard let resume = pair.device.resumeMessage() else { return nil }
        pair.device.linkOpened(extensions: .all, peerMaxFrameSize: 16_384)
        return pair.supporter.resumed(by: resume, extensions: .all, peerMaxFrameSize: 16_384, now: pair.now)
    }

    private static func accept(_ pair: inout SessionPair, _ outcome: SupporterSessionMachine.ResumeOutcome?) {
        guard case .accepted(let machine, let actions)? = outcome else {
            Issue.record("resume not accepted: \(String(describing: outcome))")
            return
        }
        pair.supporter = machine
        pair.fromSupporter(actions)
    }

    @Test func anActiveSessionResumesAndUnacknowledgedMessagesAreResent() throws {
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .chat)
        var pair = SessionPair.v11(rules: rules)
        try pair.startSession(features: [Feature(.chat)])
        let secretBefore = pair.device.resumeSecret
        #expect(secretBefore != nil && secretBefore == pair.supporter.resumeSecret)
        // The device's chat leaves but is lost with the link.
        let lost = try pair.device.sendChat("did you get this?")
        #expect(lost.count == 1)
        let outcome = Self.resume(&pair)
        #expect(pair.deviceReports.contains(.reconnecting))
        #expect(pair.supporterReports.contains(.reconnecting))
        Self.accept(&pair, outcome)
        #expect(pair.deviceReports.last == .messageDelivered(id: 1))
        #expect(pair.supporterReports.contains(.messageReceived(.chat(id: 1, text: "did you get this?"))))
        #expect(pair.deviceReports.contains(.resumed))
        // The secret rotated, and both sides hold the same one.
        #expect(pair.device.resumeSecret != secretBefore)
        #expect(pair.device.resumeSecret == pair.supporter.resumeSecret)
        guard case .active = pair.device.state, case .active = pair.supporter.state else {
            Issue.record("not active after resume")
            return
        }
        #expect(pair.violations.isEmpty)
    }

    @Test func anAllowLostWithTheLinkStartsTheSessionAtResume() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        // The user allows while the link is down: the answer travels in the RESUME's state.
        pair.fromDevice(pair.device.linkLost(reason: .connectionLost, message: "EOF"))
        #expect(pair.device.answer(requestID: 1, allow: true).isEmpty)
        pair.fromSupporter(pair.supporter.linkLost(reason: .connectionLost, text: "EOF"))
        let resume = try #require(pair.device.resumeMessage())
        #expect(resume.state == .awaitingStart && resume.requestID == 1)
        pair.device.linkOpened(extensions: .all, peerMaxFrameSize: 16_384)
        Self.accept(&pair, pair.supporter.resumed(by: resume, extensions: .all, peerMaxFrameSize: 16_384, now: pair.now))
        guard case .active = pair.device.state, case .active = pair.supporter.state else {
            Issue.record("the session did not start: \(pair.device.state.name) / \(pair.supporter.state.name)")
            return
        }
        #expect(pair.device.resumeSecret == pair.supporter.resumeSecret)
        #expect(pair.violations.isEmpty)
    }

    @Test func aRequestLostWithTheLinkIsSentAgain() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        // The request leaves the node but never reaches the device.
        _ = try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now)
        Self.accept(&pair, Self.resume(&pair))
        #expect(pair.deviceReports.contains { if case .connectionRequest = $0 { true } else { false } })
        #expect(pair.device.state.name == "request_pending")
    }

    @Test func aWrongSecretIsRejectedWithoutEndingTheSession() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(pair.supporter.linkLost(reason: .connectionLost, text: nil))
        let forged = Resume(sessionCode: "c", resumeSecret: "guess", state: .online)
        guard case .rejected(let result, let ends) = pair.supporter.resumed(
            by: forged, extensions: .all, peerMaxFrameSize: 16_384, now: pair.now)
        else {
            Issue.record("a wrong secret was accepted")
            return
        }
        #expect(result.reason == .resumeRejected && !ends)
        #expect(pair.supporter.isReconnecting)
    }

    @Test func statesThatCannotBeReconciledEndTheRegistration() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(pair.supporter.linkLost(reason: .connectionLost, text: nil))
        let secret = try #require(pair.supporter.resumeSecret)
        let claim = Resume(sessionCode: "c", resumeSecret: secret, state: .active, requestID: 7)
        guard case .rejected(let result, let ends) = pair.supporter.resumed(
            by: claim, extensions: .all, peerMaxFrameSize: 16_384, now: pair.now)
        else {
            Issue.record("a mismatch was accepted")
            return
        }
        #expect(result.reason == .resumeRejected && ends)
    }

    @Test func withoutResumeInEffectALostLinkEndsTheSession() throws {
        var pair = SessionPair.v11(extensions: [.accessControl, .sessionMessages])
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        #expect(!pair.device.canResume)
        pair.fromDevice(pair.device.linkLost(reason: .connectionLost, message: "EOF"))
        #expect(pair.device.state == .idle)
        #expect(pair.device.resumeMessage() == nil)
    }

    @Test func aRefusedResumeEndsTheDevicesSession() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromDevice(pair.device.linkLost(reason: .connectionLost, message: "EOF"))
        pair.fromDevice(
            pair.device.received(.resumeResult(ResumeResult(reason: .resumeRejected)), now: pair.now, call: .idle))
        #expect(pair.device.state == .idle)
        #expect(pair.deviceReports.contains { if case .error(let f) = $0 { f.reason == .resumeRejected } else { false } })
    }

    @Test func aSessionStartedLostWithTheLinkStillResumesWithTheSecretItReplaced() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        // The allow arrives; the SESSION_STARTED (with the rotated secret) is lost with the link.
        let answer = pair.device.answer(requestID: 1, allow: true)
        for case .send(let message) in answer { _ = pair.supporter.received(message, now: pair.now, authorize: pair.authorize) }
        guard case .active = pair.supporter.state else {
            Issue.record("the node did not start the session")
            return
        }
        #expect(pair.device.resumeSecret != pair.supporter.resumeSecret)  // the device missed the rotation
        Self.accept(&pair, Self.resume(&pair))
        guard case .active = pair.device.state else {
            Issue.record("the device is \(pair.device.state.name), not active")
            return
        }
        #expect(pair.device.resumeSecret == pair.supporter.resumeSecret)
        #expect(pair.violations.isEmpty)
    }

    @Test func anOlderRequestStillOnTheDeviceIsAbortedAndTheCurrentOneSentAgain() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now))
        // Request 1 times out at the node and request 2 goes out: both frames are lost with the link.
        _ = pair.supporter.tick(now: pair.now + .seconds(90))
        _ = try pair.supporter.requestConnection(supporterName: "A", type: .screenShare, now: pair.now + .seconds(90))
        Self.accept(&pair, Self.resume(&pair))
        #expect(pair.deviceReports.contains(.connectionRequestAborted(requestID: 1, reason: .requestTimedOut)))
        guard case .requestPending(let info, _) = pair.device.state else {
            Issue.record("the device is \(pair.device.state.name)")
            return
        }
        #expect(info.requestID == 2)
    }

    @Test func aResumeWithFewerExtensionsIsRefusedAndChangesNothing() throws {
        var pair = SessionPair.v11()
        pair.fromDevice(try pair.device.register(code: "c", token: "t"))
        pair.fromSupporter(pair.supporter.linkLost(reason: .connectionLost, text: nil))
        let secret = try #require(pair.supporter.resumeSecret)
        let resume = Resume(sessionCode: "c", resumeSecret: secret, state: .online)
        guard case .rejected(let result, let ends) = pair.supporter.resumed(
            by: resume, extensions: [.sessionResume], peerMaxFrameSize: 16_384, now: pair.now)
        else {
            Issue.record("accepted on a link without access control and messages")
            return
        }
        #expect(result.reason == .resumeRejected && !ends)
    }
}
