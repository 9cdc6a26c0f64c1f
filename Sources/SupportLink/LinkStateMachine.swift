public import SupportRuntime
public import SupportUtilities
public import SupportWire
import SupportVocabulary

/// The connection state machine of SPEC §7 for one link: HELLO exchange, keepalive, GOAWAY, malformed frames.
///
/// Sans-I/O: events in (TLS up, a message, a decode error, a tick with the current time, a close request), actions out
/// (send, deliver, open, close). It never reads a clock: time comes in with each event.
public struct LinkStateMachine: Sendable {
    public enum State: Sendable, Hashable {
        case awaitingTLS
        case awaitingHello
        case awaitingHelloAck
        case open(LinkParameters)
        case closed
    }

    public enum Action: Sendable, Hashable {
        case send(Message)
        /// HELLO exchanged: the link is open with these parameters.
        case open(LinkParameters)
        /// A session frame for the session state machine.
        case deliver(Message)
        /// Close the connection for `reason` (after sending the GOAWAY, if one comes before in the same actions).
        case close(LinkCloseReason)
    }

    public private(set) var state: State = .awaitingTLS
    public let settings: LinkSettings
    public let isInitiator: Bool
    private var lastReceived: Deadline
    private var helloDeadline: Deadline
    private var pingOutstanding = false
    /// The last frame received was a PING: the peer probes the link on its own schedule.
    private var peerIsProbing = false
    private var nextNonce: UInt64 = 1
    /// The owner stopped reading: the peer's silence is not counted, and a PING goes out every interval.
    public private(set) var isReadingPaused = false

    public init(settings: LinkSettings, isInitiator: Bool, now: Deadline) {
        self.settings = settings
        self.isInitiator = isInitiator
        self.lastReceived = now
        self.helloDeadline = now + settings.helloTimeout
    }

    /// The open link's parameters; nil before HELLO and after the close.
    private var parameters: LinkParameters? {
        if case .open(let parameters) = state { return parameters }
        return nil
    }

    private var keepaliveMilliseconds: UInt32 {
        min(max(settings.keepaliveInterval.millisecondsClamped, WireLimits.keepaliveRange.lowerBound),
            WireLimits.keepaliveRange.upperBound)
    }

    private var maxFrameSize: UInt32 {
        min(max(UInt32(clamping: settings.maxFrameSize), WireLimits.maxFrameSizeRange.lowerBound),
            WireLimits.maxFrameSizeRange.upperBound)
    }

    /// When ``tick(now:)`` should be called next, if ever.
    public var nextDeadline: Deadline? {
        switch state {
        case .awaitingTLS, .closed: return nil
        case .awaitingHello, .awaitingHelloAck: return helloDeadline
        case .open(let parameters):
            if isReadingPaused { return lastReceived + parameters.keepaliveInterval }
            return lastReceived + (pingOutstanding ? parameters.keepaliveInterval * 2 : pingAfter(parameters))
        }
    }

    /// How long a silence lasts before this side sends PING (SPEC §7): one interval, except at a responder whose last
    /// received frame was a PING, which waits one and a half. The initiator's next PING then arrives first, so a quiet
    /// link carries one PING/PONG exchange per interval instead of up to two (both sides' timers running out before
    /// either PING lands). A responder whose peer does not probe (it only receives, or sent something else last)
    /// probes at one interval, keeping a whole interval for the PONG before the peer is declared dead at two.
    private func pingAfter(_ parameters: LinkParameters) -> Duration {
        isInitiator || !peerIsProbing ? parameters.keepaliveInterval : parameters.keepaliveInterval * 3 / 2
    }

    /// The owner stopped reading (back-pressure). Until ``readingResumed(now:)`` nothing from the peer can arrive, so
    /// its silence does not count: no keepalive timeout; instead a PING every interval keeps the peer hearing from us.
    public mutating func readingPaused(now: Deadline) {
        guard !isReadingPaused else { return }
        isReadingPaused = true
        lastReceived = now
        pingOutstanding = false
        peerIsProbing = false
    }

    /// Reading resumed: the peer's silence counts again from `now`.
    public mutating func readingResumed(now: Deadline) {
        guard isReadingPaused else { return }
        isReadingPaused = false
        lastReceived = now
        pingOutstanding = false
        peerIsProbing = false
    }

    /// TLS is up: the initiator sends HELLO; both start the HELLO timer.
    public mutating func tlsEstablished(now: Deadline) -> [Action] {
        guard case .awaitingTLS = state else { return [] }
        lastReceived = now
        helloDeadline = now + settings.helloTimeout
        guard isInitiator else {
            state = .awaitingHello
            return []
        }
        state = .awaitingHelloAck
        return [
            .send(
                .hello(
                    Hello(
                        role: settings.role, nodeName: settings.nodeName, features: settings.extensions.announcement,
                        keepaliveMilliseconds: keepaliveMilliseconds, maxFrameSize: maxFrameSize)))
        ]
    }

    private mutating func fail(_ reason: ReasonCode, _ text: String) -> [Action] {
        state = .closed
        return [.send(.goAway(GoAway(reason: reason, text: String(text.utf8.prefix(256)) ?? nil))),
                .close(.protocolError(reason, text))]
    }

    /// A decoded message arrived.
    public mutating func received(_ message: Message, now: Deadline) -> [Action] {
        lastReceived = now
        pingOutstanding = false
        if case .ping = message { peerIsProbing = true } else { peerIsProbing = false }
        switch (state, message) {
        case (.closed, _), (.awaitingTLS, _):
            return []
        case (_, .goAway(let goAway)):
            let resumable = parameters?.extensions.contains(.sessionResume) == true
            state = .closed
            if goAway.resumeElsewhere, goAway.reason == .goingAway, resumable {
                return [.close(.peerDraining(goAway.text))]
            }
            return [.close(.peerWentAway(goAway.reason, goAway.text))]
        case (.awaitingHello, .hello(let hello)):
            return answer(hello)
        case (.awaitingHelloAck, .helloAck(let ack)):
            guard (1...WireLimits.protocolVersion).contains(ack.version) else {
                return fail(.unsupportedVersion, "HELLO_ACK chose version \(ack.version), outside 1...1")
            }
            guard ack.role != settings.role else {
                return fail(.roleMismatch, "the peer is a \(ack.role) like us")
            }
            let inEffect = ProtocolExtensions(announced: ack.features)
            guard settings.extensions.isSuperset(of: inEffect) else {
                return fail(
                    .protocolError,
                    "HELLO_ACK lists extensions this node did not offer: \(inEffect.subtracting(settings.extensions)) "
                        + "(SPEC §15.1)")
            }
            // SPEC §15.1/§15.2: an extension without the one it requires, or session resume without its grace
            // period, is a HELLO_ACK no responder may send.
            guard !inEffect.contains(.sessionMessages) || inEffect.contains(.accessControl) else {
                return fail(.protocolError, "HELLO_ACK lists session_messages without access_control (SPEC §15.1)")
            }
            var grace: Duration?
            if inEffect.contains(.sessionResume) {
                guard let milliseconds = ack.resumeGraceMilliseconds else {
                    return fail(.protocolError, "HELLO_ACK lists session_resume without resume_grace_ms (SPEC §15.2)")
                }
                grace = .milliseconds(Int64(milliseconds))
            }
            var parameters = LinkParameters(
                version: ack.version, peerRole: ack.role, peerName: ack.nodeName, peerExtensions: ack.features,
                keepaliveInterval: .milliseconds(Int64(ack.keepaliveMilliseconds)),
                peerMaxFrameSize: Int(ack.maxFrameSize))
            parameters.extensions = inEffect
            parameters.resumeGrace = grace
            state = .open(parameters)
            return [.open(parameters)]
        case (.awaitingHello, _), (.awaitingHelloAck, _):
            return fail(.protocolError, "\(message.frameType.specName) before the HELLO exchange completed")
        case (.open, .hello), (.open, .helloAck):
            return fail(.protocolError, "\(message.frameType.specName) after the HELLO exchange")
        case (.open, .ping(let ping)):
            return [.send(.pong(Pong(nonce: ping.nonce)))]
        case (.open, .pong):
            return []
        case (.open, _):
            return [.deliver(message)]
        }
    }

    private mutating func answer(_ hello: Hello) -> [Action] {
        guard hello.minVersion <= WireLimits.protocolVersion, hello.maxVersion >= 1 else {
            return fail(
                .unsupportedVersion, "no common protocol version: peer \(hello.minVersion)...\(hello.maxVersion), ours 1...1")
        }
        guard hello.role != settings.role else { return fail(.roleMismatch, "the peer is a \(hello.role) like us") }
        // A peer proposing a huge interval would make its death go unnoticed for that long (SPEC §5.2 takes the
        // larger interval): refuse it rather than accept it. Up to our own interval is always fine: the effective
        // interval is at least that anyway.
        let cap = max(settings.maxPeerKeepaliveInterval.millisecondsClamped, keepaliveMilliseconds)
        guard hello.keepaliveMilliseconds <= cap else {
            return fail(
                .protocolError,
                "HELLO proposes a keepalive interval of \(hello.keepaliveMilliseconds) ms; this node accepts at most "
                    + "\(cap) ms (maxPeerKeepaliveInterval)")
        }
        let effective = max(hello.keepaliveMilliseconds, keepaliveMilliseconds)
        let inEffect = settings.extensions.inEffect(offered: ProtocolExtensions(announced: hello.features))
        let graceMilliseconds =
            inEffect.contains(.sessionResume)
            ? min(max(UInt32(clamping: settings.resumeGrace.millisecondsClamped), 1_000), 600_000) : nil
        var parameters = LinkParameters(
            version: WireLimits.protocolVersion, peerRole: hello.role, peerName: hello.nodeName,
            peerExtensions: hello.features, keepaliveInterval: .milliseconds(Int64(effective)),
            peerMaxFrameSize: Int(hello.maxFrameSize))
        parameters.extensions = inEffect
        parameters.resumeGrace = graceMilliseconds.map { .milliseconds(Int64($0)) }
        state = .open(parameters)
        let ack = HelloAck(
            version: WireLimits.protocolVersion, role: settings.role, nodeName: settings.nodeName,
            features: inEffect.announcement, keepaliveMilliseconds: effective, maxFrameSize: maxFrameSize,
            resumeGraceMilliseconds: graceMilliseconds)
        return [.send(.helloAck(ack)), .open(parameters)]
    }

    /// The peer's bytes did not decode (SPEC §10.1): GOAWAY with the error's reason and its §10.1 text, then close.
    ///
    /// Also for a frame that the peer's close_notify left incomplete (`truncated_header`, `truncated_payload`: SPEC
    /// §3.4, errata 1.0.1 no. 1). `canSendGoAway` is false only when the transport may not write any more (TLS 1.2
    /// after the peer's close_notify): the link then closes for the same reason without the GOAWAY.
    public mutating func decodingFailed(_ error: WireError, canSendGoAway: Bool = true) -> [Action] {
        guard state != .closed else { return [] }
        state = .closed
        let close = Action.close(.protocolError(error.goAwayReason, error.description))
        return canSendGoAway ? [.send(.goAway(error.goAway)), close] : [close]
    }

    /// Time passed: HELLO timeout, keepalive PING, dead peer.
    public mutating func tick(now: Deadline) -> [Action] {
        switch state {
        case .awaitingTLS, .closed:
            return []
        case .awaitingHello, .awaitingHelloAck:
            guard now >= helloDeadline else { return [] }
            state = .closed
            return [
                .send(.goAway(GoAway(reason: .protocolError, text: "no HELLO within \(settings.helloTimeout)"))),
                .close(.helloTimeout),
            ]
        case .open(let parameters):
            let silent = now.since(lastReceived)
            if isReadingPaused {
                // `lastReceived` is when the last PING went out: one per interval, and never a timeout.
                guard silent >= parameters.keepaliveInterval else { return [] }
                lastReceived = now
                nextNonce &+= 1
                return [.send(.ping(Ping(nonce: nextNonce)))]
            }
            if silent >= parameters.keepaliveInterval * 2 {
                state = .closed
                return [
                    .send(.goAway(GoAway(reason: .keepaliveTimeout, text: "nothing received for \(silent)"))),
                    .close(.keepaliveTimeout(silent)),
                ]
            }
            if silent >= pingAfter(parameters), !pingOutstanding {
                pingOutstanding = true
                nextNonce &+= 1
                return [.send(.ping(Ping(nonce: nextNonce)))]
            }
            return []
        }
    }

    /// This node closes the link: GOAWAY with `reason`, then close. `resumeElsewhere`: GOAWAY `going_away` saying the
    /// session is kept for a resume (a drain, SPEC §15.5); only where session_resume is in effect.
    public mutating func close(reason: ReasonCode, text: String? = nil, resumeElsewhere: Bool = false) -> [Action] {
        switch state {
        case .closed:
            return []
        case .awaitingTLS:
            state = .closed
            return [.close(.local(reason))]
        default:
            let handover = resumeElsewhere && reason == .goingAway && parameters?.extensions.contains(.sessionResume) == true
            state = .closed
            return [.send(.goAway(GoAway(reason: reason, text: text, resumeElsewhere: handover))), .close(.local(reason))]
        }
    }

    /// The transport ended under the link.
    public mutating func transportClosed() { state = .closed }
}

/// Why a framed link closed.
public enum LinkCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// This node closed it.
    case local(ReasonCode)
    /// The peer sent GOAWAY.
    case peerWentAway(ReasonCode, String?)
    /// The peer sent GOAWAY `going_away` with `resume_elsewhere` (SPEC §15.5, "Drain"): it is draining and keeps the
    /// session for a resume elsewhere — a link loss.
    case peerDraining(String?)
    /// The peer broke the protocol (malformed or out-of-state frame); we sent GOAWAY with this reason.
    case protocolError(ReasonCode, String)
    case helloTimeout
    case keepaliveTimeout(Duration)
    /// The transport failed or the peer closed TLS without GOAWAY.
    case transport(TransportError)

    /// The SPEC §6 reason a session ended by this close reports.
    /// Whether this is a *link loss* of SPEC §15.5 that a session may survive by a resume: the transport failed or
    /// ended without GOAWAY, the keepalive expired here, or the peer's keepalive did (GOAWAY `keepalive_timeout`).
    public var isLinkLoss: Bool {
        switch self {
        case .transport, .keepaliveTimeout, .peerDraining: true
        case .peerWentAway(let code, _): code == .keepaliveTimeout
        case .local, .protocolError, .helloTimeout: false
        }
    }

    public var reasonCode: ReasonCode {
        switch self {
        case .local(let code), .peerWentAway(let code, _), .protocolError(let code, _): code
        case .helloTimeout: .protocolError
        case .peerDraining: .goingAway
        case .keepaliveTimeout, .transport: .connectionLost
        }
    }

    public var description: String {
        switch self {
        case .local(let code): "closed locally (\(code))"
        case .peerWentAway(let code, let text): "the peer went away (\(code))" + (text.map { ": \($0)" } ?? "")
        case .protocolError(let code, let text): "protocol error (\(code)): \(text)"
        case .peerDraining(let text): "the peer is draining; resume elsewhere" + (text.map { ": \($0)" } ?? "")
        case .helloTimeout: "no HELLO in time"
        case .keepaliveTimeout(let silent): "the peer was silent for \(silent): keepalive timeout"
        case .transport(let error): error.description
        }
    }
}
