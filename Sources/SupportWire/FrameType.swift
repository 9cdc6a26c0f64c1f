/// The frame types of protocol version 1 (SPEC §5) and its 1.1 extensions (SPEC §15). Each frame carries exactly one message.
public enum FrameType: UInt8, Sendable, CaseIterable {
    case hello = 0x01
    case helloAck = 0x02
    case ping = 0x03
    case pong = 0x04
    case goAway = 0x05
    case register = 0x10
    case registerResult = 0x11
    case connectionRequest = 0x12
    case connectionResponse = 0x13
    case requestAbort = 0x14
    case sessionStarted = 0x15
    case sessionEnd = 0x16
    case sessionError = 0x17
    case voipState = 0x18
    case featureRequest = 0x19
    case featureAnswer = 0x1A
    case featureRevoke = 0x1B
    case sessionMessage = 0x1C
    case messageAck = 0x1D
    case resume = 0x1E
    case resumeResult = 0x1F
    case featureWithdraw = 0x21

    /// The message's name in SPEC.md, e.g. `HELLO_ACK`.
    public var specName: String {
        switch self {
        case .hello: "HELLO"
        case .helloAck: "HELLO_ACK"
        case .ping: "PING"
        case .pong: "PONG"
        case .goAway: "GOAWAY"
        case .register: "REGISTER"
        case .registerResult: "REGISTER_RESULT"
        case .connectionRequest: "CONNECTION_REQUEST"
        case .connectionResponse: "CONNECTION_RESPONSE"
        case .requestAbort: "REQUEST_ABORT"
        case .sessionStarted: "SESSION_STARTED"
        case .sessionEnd: "SESSION_END"
        case .sessionError: "SESSION_ERROR"
        case .voipState: "VOIP_STATE"
        case .featureRequest: "FEATURE_REQUEST"
        case .featureAnswer: "FEATURE_ANSWER"
        case .featureRevoke: "FEATURE_REVOKE"
        case .sessionMessage: "SESSION_MESSAGE"
        case .messageAck: "MESSAGE_ACK"
        case .resume: "RESUME"
        case .resumeResult: "RESUME_RESULT"
        case .featureWithdraw: "FEATURE_WITHDRAW"
        }
    }

    /// The protocol extension (SPEC §15.1) that must be in effect for this frame; nil for the 1.0 frames.
    public var requiredExtension: ProtocolExtensions? {
        switch self {
        case .featureRequest, .featureAnswer, .featureRevoke: .accessControl
        case .sessionMessage, .messageAck: .sessionMessages
        case .resume, .resumeResult: .sessionResume
        case .featureWithdraw: .askWithdraw
        default: nil
        }
    }

    /// Session frames (`0x10`–`0x1F`) go to the session state machine; the others belong to the connection.
    public var isSessionFrame: Bool { rawValue >= 0x10 }
}
