// SPEC §15.1: extensions are in effect only when HELLO_ACK lists them; a 1.0 peer sees none of them.
import Testing

import SupportWire
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import TestSupport

struct ExtensionNegotiationTests {
    private static let t0 = Deadline(nanoseconds: 1_000_000_000)

    private static func settings(_ role: NodeRole, _ extensions: ProtocolExtensions) -> LinkSettings {
        var settings = LinkSettings(role: role, nodeName: role == .device ? "device" : "node")
        settings.extensions = extensions
        return settings
    }

    /// Runs HELLO / HELLO_ACK between an initiator and a responder; returns both sides' parameters and the ack.
    private static func handshake(
        device: ProtocolExtensions, node: ProtocolExtensions
    ) -> (LinkParameters?, LinkParameters?, HelloAck?) {
        var initiator = LinkStateMachine(settings: settings(.device, device), isInitiator: true, now: t0)
        var responder = LinkStateMachine(settings: settings(.supporter, node), isInitiator: false, now: t0)
        _ = responder.tlsEstablished(now: t0)
        guard case .send(.hello(let hello))? = initiator.tlsEstablished(now: t0).first else { return (nil, nil, nil) }
        var ack: HelloAck?
        var nodeParameters: LinkParameters?
        for action in responder.received(.hello(hello), now: t0) {
            if case .send(.helloAck(let sent)) = action { ack = sent }
            if case .open(let parameters) = action { nodeParameters = parameters }
        }
        guard let ack else { return (nil, nodeParameters, nil) }
        var deviceParameters: LinkParameters?
        for case .open(let parameters) in initiator.received(.helloAck(ack), now: t0) { deviceParameters = parameters }
        return (deviceParameters, nodeParameters, ack)
    }

    /// (device offers, node supports, in effect), as raw option bits: 1 access control, 2 messages, 4 resume.
    @Test(arguments: [
        (UInt8(7), UInt8(7), UInt8(7)),
        (7, 0, 0),  // a 1.1 device and a 1.0 node
        (0, 7, 0),  // a 1.0 device and a 1.1 node
        (3, 7, 3),
        (6, 7, 4),  // messages need access control
    ])
    func bothSidesAgreeOnWhatIsInEffect(deviceBits: UInt8, nodeBits: UInt8, expectedBits: UInt8) {
        let device = ProtocolExtensions(rawValue: deviceBits)
        let node = ProtocolExtensions(rawValue: nodeBits)
        let expected = ProtocolExtensions(rawValue: expectedBits)
        let (deviceSide, nodeSide, ack) = Self.handshake(device: device, node: node)
        #expect(deviceSide?.extensions == expected)
        #expect(nodeSide?.extensions == expected)
        #expect(ack.map { ProtocolExtensions(announced: $0.features) } == expected)
        // The grace period travels only with session resume, and a 1.0 peer never sees the field.
        #expect((ack?.resumeGraceMilliseconds != nil) == expected.contains(.sessionResume))
        #expect((deviceSide?.resumeGrace != nil) == expected.contains(.sessionResume))
    }

    @Test func anAckListingAnExtensionNotOfferedIsAProtocolError() {
        var initiator = LinkStateMachine(settings: Self.settings(.device, .none), isInitiator: true, now: Self.t0)
        _ = initiator.tlsEstablished(now: Self.t0)
        let ack = HelloAck(role: .supporter, nodeName: "node", features: ProtocolExtensions.all.announcement)
        let actions = initiator.received(.helloAck(ack), now: Self.t0)
        #expect(actions.contains { if case .send(.goAway(let g)) = $0 { g.reason == .protocolError } else { false } })
    }

    @Test(arguments: [UInt8(7), UInt8(2)])  // resume without resume_grace_ms; messages without access control
    func anInconsistentAckIsAProtocolError(bits: UInt8) {
        var initiator = LinkStateMachine(settings: Self.settings(.device, .all), isInitiator: true, now: Self.t0)
        _ = initiator.tlsEstablished(now: Self.t0)
        let announced = ProtocolExtensions(rawValue: bits).announcement
        let ack = HelloAck(role: .supporter, nodeName: "node", features: announced)
        let actions = initiator.received(.helloAck(ack), now: Self.t0)
        #expect(actions.contains { if case .send(.goAway(let g)) = $0 { g.reason == .protocolError } else { false } })
        #expect(!actions.contains { if case .open = $0 { true } else { false } })
    }

    // MARK: Drain (SPEC §15.5, revision 1.1.2)

    /// A device and a node machine whose link is open with `extensions` offered and supported by both.
    private static func openPair(_ extensions: ProtocolExtensions) -> (device: LinkStateMachine, node: LinkStateMachine) {
        var device = LinkStateMachine(settings: settings(.device, extensions), isInitiator: true, now: t0)
        var node = LinkStateMachine(settings: settings(.supporter, extensions), isInitiator: false, now: t0)
        _ = node.tlsEstablished(now: t0)
        for case .send(.hello(let hello)) in device.tlsEstablished(now: t0) {
            for case .send(.helloAck(let ack)) in node.received(.hello(hello), now: t0) {
                _ = device.received(.helloAck(ack), now: t0)
            }
        }
        return (device, node)
    }

    /// The GOAWAY a close sends, if any.
    private static func sentGoAway(_ actions: [LinkStateMachine.Action]) -> GoAway? {
        for case .send(.goAway(let goAway)) in actions { return goAway }
        return nil
    }

    private static func closeReason(_ actions: [LinkStateMachine.Action]) -> LinkCloseReason? {
        for case .close(let reason) in actions { return reason }
        return nil
    }

    @Test func aDrainingNodeSaysResumeElsewhereOnlyWhereSessionResumeIsInEffect() {
        var (_, withResume) = Self.openPair(.all)
        let handedOver = Self.sentGoAway(withResume.close(reason: .goingAway, text: "restart", resumeElsewhere: true))
        #expect(handedOver == GoAway(reason: .goingAway, text: "restart", resumeElsewhere: true))

        var (_, without) = Self.openPair([.accessControl, .sessionMessages])
        let ended = Self.sentGoAway(without.close(reason: .goingAway, text: "restart", resumeElsewhere: true))
        #expect(ended == GoAway(reason: .goingAway, text: "restart"))

        // Never with another reason.
        var (_, other) = Self.openPair(.all)
        #expect(Self.sentGoAway(other.close(reason: .normalClose, resumeElsewhere: true))?.resumeElsewhere == false)
    }

    @Test func aDeviceTreatsADrainAsALinkLossOnlyWithSessionResumeAndGoingAway() {
        let drain = GoAway(reason: .goingAway, text: "restart", resumeElsewhere: true)
        var (device, _) = Self.openPair(.all)
        let lost = Self.closeReason(device.received(.goAway(drain), now: Self.t0))
        #expect(lost == .peerDraining("restart"))
        #expect(lost?.isLinkLoss == true)

        var (old, _) = Self.openPair([.accessControl])
        let ended = Self.closeReason(old.received(.goAway(drain), now: Self.t0))
        #expect(ended == .peerWentAway(.goingAway, "restart"))
        #expect(ended?.isLinkLoss == false)

        // The field with any other reason is ignored: the GOAWAY ends the session with its reason.
        var (other, _) = Self.openPair(.all)
        let odd = GoAway(reason: .protocolError, text: nil, resumeElsewhere: true)
        #expect(Self.closeReason(other.received(.goAway(odd), now: Self.t0)) == .peerWentAway(.protocolError, nil))
    }
}
