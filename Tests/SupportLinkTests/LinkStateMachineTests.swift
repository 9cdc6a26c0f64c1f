import Testing
import SupportWire
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import TestSupport

/// The pure connection state machine of SPEC §7: time is an input, actions are outputs.
@Suite struct LinkStateMachineTests {
    private static let t0 = Deadline(nanoseconds: 1_000_000_000_000)

    private static func at(_ offset: Duration) -> Deadline { t0 + offset }

    private static func settings(_ role: NodeRole, keepalive: Duration = .seconds(1)) -> LinkSettings {
        var settings = LinkSettings(role: role, nodeName: role == .device ? "device" : "supporter")
        settings.keepaliveInterval = keepalive
        settings.helloTimeout = .seconds(10)
        return settings
    }

    private static func deviceHello(keepaliveMilliseconds: UInt32 = 1000) -> Message {
        .hello(Hello(role: .device, nodeName: "device", keepaliveMilliseconds: keepaliveMilliseconds))
    }

    /// A responder (supporter) with TLS up, awaiting HELLO.
    private static func responder(keepalive: Duration = .seconds(1)) -> LinkStateMachine {
        var machine = LinkStateMachine(settings: settings(.supporter, keepalive: keepalive), isInitiator: false, now: t0)
        #expect(machine.tlsEstablished(now: t0) == [])
        return machine
    }

    /// A responder whose link is open with a 1 s keepalive, at t0.
    private static func openResponder() -> LinkStateMachine {
        var machine = responder()
        _ = machine.received(deviceHello(), now: t0)
        return machine
    }

    /// An initiator (device) with TLS up, having sent HELLO.
    private static func initiator(keepalive: Duration = .seconds(1)) -> (LinkStateMachine, [LinkStateMachine.Action]) {
        var machine = LinkStateMachine(settings: settings(.device, keepalive: keepalive), isInitiator: true, now: t0)
        let actions = machine.tlsEstablished(now: t0)
        return (machine, actions)
    }

    private static func goAwayReason(_ actions: [LinkStateMachine.Action]) -> ReasonCode? {
        for action in actions { if case .send(.goAway(let goAway)) = action { return goAway.reason } }
        return nil
    }

    private static func closeReason(_ actions: [LinkStateMachine.Action]) -> LinkCloseReason? {
        for action in actions { if case .close(let reason) = action { return reason } }
        return nil
    }

    // MARK: HELLO

    @Test func initiatorSendsHelloWhenTLSIsUp() {
        let (machine, actions) = Self.initiator(keepalive: .milliseconds(1500))
        #expect(
            actions == [
                .send(
                    .hello(
                        Hello(
                            role: .device, nodeName: "device", features: ProtocolExtensions.all.announcement,
                            keepaliveMilliseconds: 1500, maxFrameSize: 16_384)))
            ])
        #expect(machine.state == .awaitingHelloAck)
    }

    @Test func nothingHappensBeforeTLS() {
        var machine = LinkStateMachine(settings: Self.settings(.supporter), isInitiator: false, now: Self.t0)
        #expect(machine.nextDeadline == nil)
        #expect(machine.received(Self.deviceHello(), now: Self.t0) == [])
        #expect(machine.tick(now: Self.at(.seconds(60))) == [])
        #expect(machine.state == .awaitingTLS)
    }

    @Test func responderAnswersHelloWithTheLargerKeepaliveAndOpens() {
        var machine = Self.responder(keepalive: .seconds(2))
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: 1000), now: Self.t0)
        let parameters = LinkParameters(
            version: 1, peerRole: .device, peerName: "device", peerExtensions: [], keepaliveInterval: .seconds(2),
            peerMaxFrameSize: 16_384)
        #expect(
            actions == [
                .send(.helloAck(HelloAck(role: .supporter, nodeName: "supporter", keepaliveMilliseconds: 2000))),
                .open(parameters),
            ])
        #expect(machine.state == .open(parameters))
    }

    @Test(arguments: [(100, 1000, 1000), (5000, 1000, 5000), (1000, 1000, 1000)])
    func effectiveKeepaliveIsTheMaximum(proposed: UInt32, own: Int, expected: Int) {
        var machine = Self.responder(keepalive: .milliseconds(own))
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: proposed), now: Self.t0)
        guard case .open(let parameters) = actions.last else {
            Issue.record("not open: \(actions)")
            return
        }
        #expect(parameters.keepaliveInterval == .milliseconds(expected))
    }

    @Test func initiatorOpensOnAValidHelloAck() {
        var (machine, _) = Self.initiator()
        let ack = HelloAck(role: .supporter, nodeName: "node-1", keepaliveMilliseconds: 3000, maxFrameSize: 65_536)
        let actions = machine.received(.helloAck(ack), now: Self.t0)
        let parameters = LinkParameters(
            version: 1, peerRole: .supporter, peerName: "node-1", peerExtensions: [], keepaliveInterval: .seconds(3),
            peerMaxFrameSize: 65_536)
        #expect(actions == [.open(parameters)])
    }

    @Test(arguments: [(UInt8(2), UInt8(3)), (UInt8(2), UInt8(255))])
    func helloWithNoCommonVersionIsRefused(minVersion: UInt8, maxVersion: UInt8) {
        var machine = Self.responder()
        let hello = Hello(minVersion: minVersion, maxVersion: maxVersion, role: .device, nodeName: "device")
        let actions = machine.received(.hello(hello), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .unsupportedVersion)
        #expect(Self.closeReason(actions)?.reasonCode == .unsupportedVersion)
        #expect(machine.state == .closed)
    }

    @Test func helloWithAWiderRangeIncludingOursIsAccepted() {
        var machine = Self.responder()
        let actions = machine.received(
            .hello(Hello(minVersion: 1, maxVersion: 4, role: .device, nodeName: "device")), now: Self.t0)
        guard case .send(.helloAck(let ack)) = actions.first else {
            Issue.record("no HELLO_ACK: \(actions)")
            return
        }
        #expect(ack.version == 1)
    }

    @Test func helloFromTheSameRoleIsRoleMismatch() {
        var machine = Self.responder()
        let actions = machine.received(.hello(Hello(role: .supporter, nodeName: "other")), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .roleMismatch)
        #expect(Self.closeReason(actions)?.reasonCode == .roleMismatch)
    }

    @Test func helloAckWithAVersionOutsideOurRangeIsUnsupportedVersion() {
        var (machine, _) = Self.initiator()
        let actions = machine.received(.helloAck(HelloAck(version: 2, role: .supporter, nodeName: "n")), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .unsupportedVersion)
        #expect(machine.state == .closed)
    }

    /// Errata 1.0.1 no. 3: no common version and the same role is `unsupported_version`: the version comes first.
    @Test(arguments: [(UInt8(2), UInt8(3)), (UInt8(2), UInt8(255))])
    func helloWithNoCommonVersionAndTheSameRoleIsUnsupportedVersion(minVersion: UInt8, maxVersion: UInt8) {
        var machine = Self.responder()
        let hello = Hello(minVersion: minVersion, maxVersion: maxVersion, role: .supporter, nodeName: "other")
        let actions = machine.received(.hello(hello), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .unsupportedVersion)
        #expect(Self.closeReason(actions)?.reasonCode == .unsupportedVersion)
    }

    /// Errata 1.0.1 no. 3, initiator side: a HELLO_ACK outside our range and of our own role.
    @Test func helloAckWithAVersionOutsideOurRangeAndTheSameRoleIsUnsupportedVersion() {
        var (machine, _) = Self.initiator()
        let actions = machine.received(.helloAck(HelloAck(version: 2, role: .device, nodeName: "n")), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .unsupportedVersion)
    }

    // MARK: decoding errors (SPEC §10.1)

    /// Errata 1.0.1 no. 5: the GOAWAY text is exactly `<name> offset <offset>[ field <tag>]`.
    @Test(arguments: [
        (WireError(.fieldOutOfOrder, offset: 27, field: 2, fieldName: "text", frameType: 5, detail: "2 after 5"),
         GoAway(reason: .malformedFrame, text: "field_out_of_order offset 27 field 2")),
        (WireError(.truncatedHeader, offset: 0, detail: "3 of 8 header bytes"),
         GoAway(reason: .malformedFrame, text: "truncated_header offset 0")),
        (WireError(.frameTooLarge, offset: 4, frameType: 3, detail: "16385 > 16384"),
         GoAway(reason: .frameTooLarge, text: "frame_too_large offset 4")),
        (WireError(.missingField, offset: 61, field: 0, detail: "tag 0"),
         GoAway(reason: .malformedFrame, text: "missing_field offset 61 field 0")),
    ])
    func decodingErrorSendsGoAwayWithTheSpecText(error: WireError, goAway: GoAway) {
        var machine = Self.openResponder()
        let actions = machine.decodingFailed(error)
        #expect(actions == [.send(.goAway(goAway)), .close(.protocolError(goAway.reason, error.description))])
        #expect(machine.state == .closed)
        #expect(machine.decodingFailed(error) == [])
    }

    /// Errata 1.0.1 no. 1: over TLS 1.2 nothing may follow the peer's close_notify: the link closes without GOAWAY.
    @Test func truncatedFrameWithoutAWritableTransportClosesWithoutGoAway() {
        var machine = Self.openResponder()
        let error = WireError(.truncatedPayload, offset: 61, frameType: 0x10)
        let actions = machine.decodingFailed(error, canSendGoAway: false)
        #expect(actions == [.close(.protocolError(.malformedFrame, error.description))])
        #expect(machine.state == .closed)
    }

    @Test func helloAckFromTheSameRoleIsRoleMismatch() {
        var (machine, _) = Self.initiator()
        let actions = machine.received(.helloAck(HelloAck(role: .device, nodeName: "n")), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .roleMismatch)
    }

    @Test(arguments: [
        Message.register(Register(sessionCode: "1", apiToken: "t")),
        .ping(Ping(nonce: 1)),
        .pong(Pong(nonce: 1)),
        .helloAck(HelloAck(role: .device, nodeName: "d")),
        .sessionEnd(SessionEnd(reason: .endedByDevice)),
    ])
    func framesBeforeHelloAreAProtocolError(message: Message) {
        var machine = Self.responder()
        let actions = machine.received(message, now: Self.t0)
        #expect(Self.goAwayReason(actions) == .protocolError)
        #expect(Self.closeReason(actions)?.reasonCode == .protocolError)
        #expect(!actions.contains { if case .deliver = $0 { true } else { false } })
    }

    @Test func framesBeforeHelloAckAreAProtocolError() {
        var (machine, _) = Self.initiator()
        let actions = machine.received(.registerResult(RegisterResult(reason: .success, codeType: .remoteSupport)), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .protocolError)
    }

    @Test(arguments: [
        Message.hello(Hello(role: .device, nodeName: "device")),
        .helloAck(HelloAck(role: .device, nodeName: "device")),
    ])
    func helloAfterOpenIsAProtocolError(message: Message) {
        var machine = Self.openResponder()
        let actions = machine.received(message, now: Self.at(.milliseconds(10)))
        #expect(Self.goAwayReason(actions) == .protocolError)
        #expect(machine.state == .closed)
    }

    @Test func goAwayBeforeHelloClosesWithThePeersReason() {
        var machine = Self.responder()
        let actions = machine.received(.goAway(GoAway(reason: .goingAway, text: "bye")), now: Self.t0)
        #expect(actions == [.close(.peerWentAway(.goingAway, "bye"))])
    }

    @Test func helloTimeoutClosesWithProtocolError() {
        var machine = Self.responder()
        #expect(machine.nextDeadline == Self.at(.seconds(10)))
        #expect(machine.tick(now: Self.at(.milliseconds(9_999))) == [])
        let actions = machine.tick(now: Self.at(.seconds(10)))
        #expect(Self.goAwayReason(actions) == .protocolError)
        #expect(Self.closeReason(actions) == .helloTimeout)
        #expect(machine.state == .closed)
        #expect(machine.nextDeadline == nil)
    }

    @Test func helloAckTimeoutClosesTheInitiatorToo() {
        var (machine, _) = Self.initiator()
        #expect(Self.closeReason(machine.tick(now: Self.at(.seconds(11)))) == .helloTimeout)
    }

    // MARK: open

    @Test func pingIsAnsweredWithPongOfTheSameNonce() {
        var machine = Self.openResponder()
        #expect(machine.received(.ping(Ping(nonce: 0xDEAD_BEEF)), now: Self.at(.milliseconds(10))) == [
            .send(.pong(Pong(nonce: 0xDEAD_BEEF)))
        ])
        #expect(machine.received(.pong(Pong(nonce: 7)), now: Self.at(.milliseconds(20))) == [])
    }

    @Test func sessionFramesAreDelivered() {
        var machine = Self.openResponder()
        let message = Message.register(Register(sessionCode: "123", apiToken: "t"))
        #expect(machine.received(message, now: Self.at(.milliseconds(10))) == [.deliver(message)])
    }

    /// An initiator with TLS up and HELLO_ACK received: open, keepalive 1 s.
    private static func openInitiator() -> LinkStateMachine {
        var (machine, _) = initiator()
        _ = machine.received(.helloAck(HelloAck(role: .supporter, nodeName: "n", keepaliveMilliseconds: 1000)), now: t0)
        return machine
    }

    @Test func initiatorPingsAtOneIntervalAndDeclaresDeathAtTwo() {
        var machine = Self.openInitiator()
        #expect(machine.nextDeadline == Self.at(.seconds(1)))
        #expect(machine.tick(now: Self.at(.milliseconds(999))) == [])
        let ping = machine.tick(now: Self.at(.seconds(1)))
        guard case .send(.ping) = ping.first, ping.count == 1 else {
            Issue.record("expected one PING, got \(ping)")
            return
        }
        // One PING per silence: no second one until something arrives.
        #expect(machine.tick(now: Self.at(.milliseconds(1500))) == [])
        #expect(machine.nextDeadline == Self.at(.seconds(2)))
        let dead = machine.tick(now: Self.at(.seconds(2)))
        #expect(Self.goAwayReason(dead) == .keepaliveTimeout)
        #expect(Self.closeReason(dead) == .keepaliveTimeout(.seconds(2)))
        #expect(Self.closeReason(dead)?.reasonCode == .connectionLost)
        #expect(machine.state == .closed)
        #expect(machine.tick(now: Self.at(.seconds(3))) == [])
    }

    /// SPEC §7: a responder whose peer does not probe (here: nothing since HELLO) PINGs at one interval.
    @Test func responderPingsAtOneIntervalWhileItsPeerDoesNotProbe() {
        var machine = Self.openResponder()
        #expect(machine.nextDeadline == Self.at(.seconds(1)))
        let ping = machine.tick(now: Self.at(.seconds(1)))
        guard case .send(.ping) = ping.first, ping.count == 1 else {
            Issue.record("expected one PING, got \(ping)")
            return
        }
        #expect(Self.closeReason(machine.tick(now: Self.at(.seconds(2)))) == .keepaliveTimeout(.seconds(2)))
    }

    /// SPEC §7: after a PING from its peer the responder waits one and a half intervals, so the peer's next PING comes
    /// first; death is still declared at two.
    @Test func responderWaitsOneAndAHalfIntervalsAfterAPingAndDeclaresDeathAtTwo() {
        var machine = Self.openResponder()
        _ = machine.received(.ping(Ping(nonce: 5)), now: Self.at(.milliseconds(900)))
        #expect(machine.nextDeadline == Self.at(.milliseconds(2400)))
        #expect(machine.tick(now: Self.at(.milliseconds(2399))) == [])
        let ping = machine.tick(now: Self.at(.milliseconds(2400)))
        guard case .send(.ping) = ping.first, ping.count == 1 else {
            Issue.record("expected one PING, got \(ping)")
            return
        }
        #expect(machine.nextDeadline == Self.at(.milliseconds(2900)))
        let dead = machine.tick(now: Self.at(.milliseconds(2900)))
        #expect(Self.goAwayReason(dead) == .keepaliveTimeout)
        #expect(Self.closeReason(dead) == .keepaliveTimeout(.seconds(2)))
        #expect(machine.state == .closed)
    }

    /// Any other frame after the PING (data, a PONG) puts the responder back on one interval.
    @Test func responderReturnsToOneIntervalWhenTheLastFrameIsNotAPing() {
        var machine = Self.openResponder()
        _ = machine.received(.ping(Ping(nonce: 5)), now: Self.at(.milliseconds(100)))
        _ = machine.received(.sessionEnd(SessionEnd(reason: .endedByDevice)), now: Self.at(.milliseconds(200)))
        #expect(machine.nextDeadline == Self.at(.milliseconds(1200)))
    }

    /// A responder that only sends (its peer receives and never needs to PING) PINGs at one interval: the peer's PONG
    /// has a whole interval before the two-interval limit.
    @Test func aResponderPushingToASilentPeerProbesAtOneInterval() {
        var machine = Self.openResponder()
        _ = machine.tick(now: Self.at(.seconds(1)))  // PING at one interval
        _ = machine.received(.pong(Pong(nonce: 2)), now: Self.at(.milliseconds(1010)))
        #expect(machine.nextDeadline == Self.at(.milliseconds(2010)))
    }

    /// Two machines on a quiet link, each tick and each frame delivered a little late: the responder never sends a
    /// PING, so there is one exchange per interval, not two.
    @Test func aQuietLinkCarriesOneExchangePerInterval() {
        var initiator = Self.openInitiator()
        var responder = Self.openResponder()
        var pingsByInitiator = 0
        var pingsByResponder = 0
        let latency = Duration.milliseconds(3)
        var now = Self.t0
        for _ in 0..<200 {
            // Whichever deadline is first fires (late by the latency), and its PING reaches the other side.
            let initiatorDue = initiator.nextDeadline ?? Deadline(nanoseconds: .max)
            let responderDue = responder.nextDeadline ?? Deadline(nanoseconds: .max)
            if initiatorDue <= responderDue {
                now = initiatorDue + latency
                for case .send(.ping(let ping)) in initiator.tick(now: now) {
                    pingsByInitiator += 1
                    for case .send(let pong) in responder.received(.ping(ping), now: now + latency) {
                        _ = initiator.received(pong, now: now + latency * 2)
                    }
                }
            } else {
                now = responderDue + latency
                for case .send(.ping(let ping)) in responder.tick(now: now) {
                    pingsByResponder += 1
                    for case .send(let pong) in initiator.received(.ping(ping), now: now + latency) {
                        _ = responder.received(pong, now: now + latency * 2)
                    }
                }
            }
        }
        #expect(pingsByResponder == 0)
        #expect(pingsByInitiator >= 190)
        #expect(initiator.state != .closed && responder.state != .closed)
    }

    @Test(arguments: [
        Message.pong(Pong(nonce: 2)),
        .ping(Ping(nonce: 9)),
        .sessionEnd(SessionEnd(reason: .endedByDevice)),
    ])
    func anyReceivedFrameResetsTheKeepalive(message: Message) {
        var machine = Self.openResponder()
        _ = machine.tick(now: Self.at(.seconds(1)))  // PING outstanding
        _ = machine.received(message, now: Self.at(.milliseconds(1900)))
        // A new silence: a PING at one interval, or one and a half after the peer's own PING; death only at two.
        let pingAt: Deadline = if case .ping = message { Self.at(.milliseconds(3400)) } else { Self.at(.milliseconds(2900)) }
        #expect(machine.nextDeadline == pingAt)
        #expect(machine.tick(now: Self.at(.milliseconds(2100))) == [])
        let ping = machine.tick(now: pingAt)
        guard case .send(.ping) = ping.first else {
            Issue.record("expected a PING, got \(ping)")
            return
        }
        #expect(Self.closeReason(machine.tick(now: Self.at(.milliseconds(3800)))) == nil)
        #expect(Self.closeReason(machine.tick(now: Self.at(.milliseconds(3900)))) != nil)
    }

    @Test func pingNoncesChange() {
        var machine = Self.openResponder()
        var nonces: [UInt64] = []
        var now = Self.t0
        for _ in 0..<3 {
            now = now + .seconds(1)
            if case .send(.ping(let ping)) = machine.tick(now: now).first { nonces.append(ping.nonce) }
            _ = machine.received(.pong(Pong(nonce: nonces.last ?? 0)), now: now)
        }
        #expect(nonces.count == 3)
        #expect(Set(nonces).count == 3)
    }

    @Test func goAwayWhenOpenClosesWithThePeersReasonAndNoAnswer() {
        var machine = Self.openResponder()
        let actions = machine.received(.goAway(GoAway(reason: .normalClose)), now: Self.at(.milliseconds(5)))
        #expect(actions == [.close(.peerWentAway(.normalClose, nil))])
        #expect(machine.received(.register(Register(sessionCode: "1", apiToken: "t")), now: Self.at(.seconds(1))) == [])
    }

    @Test(arguments: [
        (WireError(.frameTooLarge, offset: 4, frameType: 0x10), ReasonCode.frameTooLarge),
        (WireError(.missingField, offset: 8, field: 1, frameType: 0x10), .malformedFrame),
        (WireError(.unknownFrameType, offset: 1), .malformedFrame),
        (WireError(.reservedFlags, offset: 2), .malformedFrame),
    ])
    func decodingErrorsSendGoAwayAndClose(error: WireError, reason: ReasonCode) {
        var machine = Self.openResponder()
        let actions = machine.decodingFailed(error)
        #expect(Self.goAwayReason(actions) == reason)
        #expect(Self.closeReason(actions)?.reasonCode == reason)
        #expect(machine.state == .closed)
        #expect(machine.decodingFailed(error) == [])
    }

    @Test func decodingErrorBeforeHelloAlsoSendsGoAway() {
        var machine = Self.responder()
        #expect(Self.goAwayReason(machine.decodingFailed(WireError(.truncatedField, offset: 9))) == .malformedFrame)
    }

    @Test func localCloseSendsGoAwayOnceThenNothing() {
        var machine = Self.openResponder()
        #expect(machine.close(reason: .goingAway, text: "restart") == [
            .send(.goAway(GoAway(reason: .goingAway, text: "restart"))), .close(.local(.goingAway)),
        ])
        #expect(machine.close(reason: .normalClose) == [])
        #expect(machine.nextDeadline == nil)
    }

    @Test func localCloseBeforeTLSSendsNothing() {
        var machine = LinkStateMachine(settings: Self.settings(.device), isInitiator: true, now: Self.t0)
        #expect(machine.close(reason: .normalClose) == [.close(.local(.normalClose))])
    }

    @Test func transportEndClosesTheMachine() {
        var machine = Self.openResponder()
        machine.transportClosed()
        #expect(machine.state == .closed)
        #expect(machine.tick(now: Self.at(.seconds(5))) == [])
        #expect(machine.nextDeadline == nil)
    }

    @Test func announcedSettingsAreClampedToTheWireRanges() {
        var settings = Self.settings(.device, keepalive: .milliseconds(10))
        settings.maxFrameSize = 100
        var machine = LinkStateMachine(settings: settings, isInitiator: true, now: Self.t0)
        guard case .send(.hello(let hello)) = machine.tlsEstablished(now: Self.t0).first else {
            Issue.record("no HELLO")
            return
        }
        #expect(hello.keepaliveMilliseconds == 100)
        #expect(hello.maxFrameSize == 16_384)
    }

    // MARK: keepalive cap (LinkSettings.maxPeerKeepaliveInterval)

    @Test func helloProposingAKeepaliveOverTheCapIsRefusedWithATextNamingTheLimit() {
        var machine = Self.responder()
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: 120_001), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .protocolError)
        guard case .protocolError(.protocolError, let text) = Self.closeReason(actions) else {
            Issue.record("expected a protocol error close, got \(actions)")
            return
        }
        #expect(text.contains("120001 ms"))
        #expect(text.contains("at most 120000 ms"))
        #expect(machine.state == .closed)
        #expect(!actions.contains { if case .open = $0 { true } else { false } })
    }

    @Test(arguments: [(120_000, 120_000), (100, 1000)] as [(UInt32, Int)])
    func helloAtOrUnderTheCapOpensWithTheLargerInterval(proposed: UInt32, effectiveMilliseconds: Int) {
        var machine = Self.responder()
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: proposed), now: Self.t0)
        guard case .open(let parameters) = actions.last else {
            Issue.record("expected open, got \(actions)")
            return
        }
        #expect(parameters.keepaliveInterval == .milliseconds(effectiveMilliseconds))
    }

    @Test func aProposalUpToTheRespondersOwnIntervalIsAcceptedEvenAboveTheCap() {
        var machine = Self.responder(keepalive: .seconds(600))
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: 600_000), now: Self.t0)
        guard case .open(let parameters) = actions.last else {
            Issue.record("expected open, got \(actions)")
            return
        }
        #expect(parameters.keepaliveInterval == .seconds(600))
    }

    @Test func aLowerConfiguredCapRefusesWhatTheDefaultAccepts() {
        var settings = Self.settings(.supporter)
        settings.maxPeerKeepaliveInterval = .seconds(5)
        var machine = LinkStateMachine(settings: settings, isInitiator: false, now: Self.t0)
        _ = machine.tlsEstablished(now: Self.t0)
        let actions = machine.received(Self.deviceHello(keepaliveMilliseconds: 5001), now: Self.t0)
        #expect(Self.goAwayReason(actions) == .protocolError)
    }

    // MARK: paused reading

    @Test func pausedReadingPingsEveryIntervalAndNeverDeclaresThePeerDead() {
        var machine = Self.openResponder()
        machine.readingPaused(now: Self.at(.milliseconds(500)))
        #expect(machine.nextDeadline == Self.at(.milliseconds(1500)))
        for second in 1...10 {
            let now = Self.at(.milliseconds(500) + .seconds(second))
            let actions = machine.tick(now: now)
            guard case .send(.ping) = actions.first, actions.count == 1 else {
                Issue.record("expected one PING at \(second) s of pause, got \(actions)")
                return
            }
            #expect(machine.nextDeadline == now + .seconds(1))
        }
        #expect(machine.state != .closed)
    }

    @Test func afterResumingThePeerHasTwoIntervalsAgain() {
        var machine = Self.openResponder()
        machine.readingPaused(now: Self.at(.seconds(0)))
        _ = machine.tick(now: Self.at(.seconds(5)))
        machine.readingResumed(now: Self.at(.seconds(30)))
        #expect(machine.nextDeadline == Self.at(.seconds(31)))
        #expect(Self.closeReason(machine.tick(now: Self.at(.milliseconds(31_999)))) == nil)
        #expect(Self.closeReason(machine.tick(now: Self.at(.seconds(32)))) == .keepaliveTimeout(.seconds(2)))
    }
}
