import TestSupport
import SupportVocabulary
@testable import SupportWire

/// One or more instances of every message, with optional fields both absent and present, and boundary values.
enum SampleMessages {
    static let all: [Message] = [
        .hello(Hello(role: .device, nodeName: "Pixel 8")),
        .hello(
            Hello(
                minVersion: 1, maxVersion: 255, role: .supporter, nodeName: String(repeating: "n", count: 64),
                features: [Feature(.init(rawValue: 0x0100), version: 7)], keepaliveMilliseconds: 100,
                maxFrameSize: 1_048_576)),
        .helloAck(HelloAck(role: .supporter, nodeName: "support-eu-1", keepaliveMilliseconds: 600_000)),
        .ping(Ping(nonce: 0)),
        .ping(Ping(nonce: .max)),
        .pong(Pong(nonce: 0x0102_0304_0506_0708)),
        .goAway(GoAway(reason: .normalClose)),
        .goAway(GoAway(reason: .protocolError, text: String(repeating: "é", count: 128))),
        .register(Register(sessionCode: "s12-345-678", apiToken: "tok_abc", capabilities: [])),
        .register(
            Register(
                sessionCode: String(repeating: "c", count: 64), apiToken: String(repeating: "t", count: 256),
                capabilities: [Feature(.screenShare), Feature(.assistAR), Feature(.voip), Feature(.remoteControl)])),
        .registerResult(RegisterResult(reason: .success)),
        .registerResult(
            RegisterResult(reason: .rateLimited, text: "slow down", retryAfterMilliseconds: 4000, codeType: .assistAR)),
        .connectionRequest(ConnectionRequest(requestID: 1, supporterName: "Alice", connectionType: .screenShare)),
        .connectionRequest(
            ConnectionRequest(
                requestID: .max, supporterName: "Jürgen 🛠", connectionType: .assistAR,
                requestedFeatures: [Feature(.voip, version: 2)])),
        .connectionResponse(ConnectionResponse(requestID: 7, decision: .allow)),
        .connectionResponse(ConnectionResponse(requestID: 7, decision: .reject, reason: .requestTimedOut)),
        .requestAbort(RequestAbort(requestID: 9)),
        .sessionStarted(SessionStarted(requestID: 9)),
        .sessionEnd(SessionEnd(reason: .endedBySupporter)),
        .sessionEnd(SessionEnd(reason: ReasonCode(rawValue: 0xC3), text: "future code")),
        .sessionError(SessionError(reason: .unsupportedFeature)),
        .sessionError(SessionError(reason: .featureVersionMismatch, feature: .assistAR, text: "v2 wanted")),
        .voipState(VoIPState(state: .started)),
        .voipState(VoIPState(state: .notStartedOtherCallActive, text: "a phone call is running")),
    ] + revision1_1

    /// The frames of SPEC §15.3–§15.5, minimal and full, and the §15.2 fields of the 1.0 messages.
    static let revision1_1: [Message] = [
        .helloAck(HelloAck(role: .supporter, nodeName: "n", resumeGraceMilliseconds: 1_000)),
        .helloAck(
            HelloAck(
                role: .supporter, nodeName: "support-eu-1", features: ProtocolExtensions.all.announcement,
                resumeGraceMilliseconds: 600_000)),
        .registerResult(
            RegisterResult(
                reason: .success, text: "ok", retryAfterMilliseconds: 0, codeType: .remoteSupport,
                resumeSecret: String(repeating: "s", count: 64))),
        .connectionRequest(
            ConnectionRequest(
                requestID: 2, supporterName: "Alice", connectionType: .screenShare,
                requestedFeatures: [Feature(.chat), Feature(.fileShare)], confirmFeatures: [Feature(.fileShare)])),
        .connectionRequest(
            ConnectionRequest(requestID: 3, supporterName: "Alice", connectionType: .assistAR, confirmFeatures: [])),
        .connectionResponse(
            ConnectionResponse(
                requestID: 2, decision: .allow, grantedFeatures: [Feature(.screenShare), Feature(.chat)])),
        .connectionResponse(ConnectionResponse(requestID: 3, decision: .allow, grantedFeatures: [])),
        .sessionStarted(SessionStarted(requestID: 2, grantedFeatures: [])),
        .sessionStarted(
            SessionStarted(
                requestID: .max, grantedFeatures: [Feature(.screenShare), Feature(.chat), Feature(.appMessages)],
                mediaDescriptor: [0x00, 0xFF, 0x7B], resumeSecret: "hJ3_x-Qe8rT2mZ9vW1yU4oP6sA0dF5gK7lN3bV8cX2q")),
        .featureRequest(FeatureRequest(askID: 1, feature: .chat)),
        .featureRequest(
            FeatureRequest(
                askID: .max, feature: .init(rawValue: 0xFFFF), confirm: true, text: "May I send you a file?")),
        .featureAnswer(FeatureAnswer(askID: 1, decision: .grant)),
        .featureAnswer(FeatureAnswer(askID: .max, decision: .refuse, reason: .featureDenied)),
        .featureRevoke(FeatureRevoke(feature: .chat)),
        .featureRevoke(FeatureRevoke(feature: .init(rawValue: 0), text: String(repeating: "r", count: 256))),
        .featureWithdraw(FeatureWithdraw(askID: 1)),
        .featureWithdraw(FeatureWithdraw(askID: .max)),
        .sessionMessage(.chat(id: 1, text: "Hi")),
        .sessionMessage(
            SessionMessage(
                messageID: .max, kind: .filePart, contentType: "application/pdf",
                body: Array(repeating: 0xA5, count: 300),
                transferID: 0, fileName: "Rechnung März.pdf", fileSize: WireLimits.largestFileSize, offset: .max)),
        .sessionMessage(
            SessionMessage(messageID: 3, kind: .application, contentType: "application/json", body: [0x7B, 0x7D])),
        .messageAck(MessageAck(messageID: 0)),
        .messageAck(MessageAck(messageID: .max, reason: .messageRefused, text: "no content type")),
        .resume(Resume(sessionCode: "s12", resumeSecret: "x", state: .online)),
        .resume(
            Resume(
                sessionCode: String(repeating: "c", count: 64), resumeSecret: String(repeating: "s", count: 64),
                state: .active, requestID: 0, lastMessageID: .max)),
        .resumeResult(ResumeResult(reason: .resumeRejected)),
        .resumeResult(
            ResumeResult(
                reason: .success, text: "resumed", resumeSecret: String(repeating: "t", count: 32), lastMessageID: 0,
                retryAfterMilliseconds: .max)),
    ]

    /// Every frame type appears in ``all``.
    static var coveredTypes: Set<FrameType> { Set(all.map(\.frameType)) }

    /// A stream holding every sample, back to back.
    static var stream: [UInt8] {
        var bytes: [UInt8] = []
        for message in all { try? FrameEncoder().encode(message, into: &bytes) }
        return bytes
    }
}


extension Array where Element == UInt8 {
    init(hex: String) {
        self = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            default: continue
            }
            if let first = high {
                append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
    }

    var hex: String {
        let digits = [Character]("0123456789abcdef")
        var text = ""
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return text
    }
}
