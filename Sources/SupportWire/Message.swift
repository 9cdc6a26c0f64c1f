/// One message of protocol version 1: exactly what one frame carries (SPEC §5).
public enum Message: Hashable, Sendable {
    case hello(Hello)
    case helloAck(HelloAck)
    case ping(Ping)
    case pong(Pong)
    case goAway(GoAway)
    case register(Register)
    case registerResult(RegisterResult)
    case connectionRequest(ConnectionRequest)
    case connectionResponse(ConnectionResponse)
    case requestAbort(RequestAbort)
    case sessionStarted(SessionStarted)
    case sessionEnd(SessionEnd)
    case sessionError(SessionError)
    case voipState(VoIPState)
    case featureRequest(FeatureRequest)
    case featureAnswer(FeatureAnswer)
    case featureRevoke(FeatureRevoke)
    case sessionMessage(SessionMessage)
    case messageAck(MessageAck)
    case resume(Resume)
    case resumeResult(ResumeResult)
    case featureWithdraw(FeatureWithdraw)

    /// The frame type that carries this message.
    public var frameType: FrameType { body.frameType }

    /// The payload type behind the case, for encoding.
    var body: any WireMessage {
        switch self {
        case .hello(let message): message
        case .helloAck(let message): message
        case .ping(let message): message
        case .pong(let message): message
        case .goAway(let message): message
        case .register(let message): message
        case .registerResult(let message): message
        case .connectionRequest(let message): message
        case .connectionResponse(let message): message
        case .requestAbort(let message): message
        case .sessionStarted(let message): message
        case .sessionEnd(let message): message
        case .sessionError(let message): message
        case .voipState(let message): message
        case .featureRequest(let message): message
        case .featureAnswer(let message): message
        case .featureRevoke(let message): message
        case .sessionMessage(let message): message
        case .messageAck(let message): message
        case .resume(let message): message
        case .resumeResult(let message): message
        case .featureWithdraw(let message): message
        }
    }

    /// Decodes the payload of a frame of `type`.
    static func decode(_ type: FrameType, from reader: inout FieldReader) throws(WireError) -> Message {
        switch type {
        case .hello: .hello(try Hello(reading: &reader))
        case .helloAck: .helloAck(try HelloAck(reading: &reader))
        case .ping: .ping(try Ping(reading: &reader))
        case .pong: .pong(try Pong(reading: &reader))
        case .goAway: .goAway(try GoAway(reading: &reader))
        case .register: .register(try Register(reading: &reader))
        case .registerResult: .registerResult(try RegisterResult(reading: &reader))
        case .connectionRequest: .connectionRequest(try ConnectionRequest(reading: &reader))
        case .connectionResponse: .connectionResponse(try ConnectionResponse(reading: &reader))
        case .requestAbort: .requestAbort(try RequestAbort(reading: &reader))
        case .sessionStarted: .sessionStarted(try SessionStarted(reading: &reader))
        case .sessionEnd: .sessionEnd(try SessionEnd(reading: &reader))
        case .sessionError: .sessionError(try SessionError(reading: &reader))
        case .voipState: .voipState(try VoIPState(reading: &reader))
        case .featureRequest: .featureRequest(try FeatureRequest(reading: &reader))
        case .featureAnswer: .featureAnswer(try FeatureAnswer(reading: &reader))
        case .featureRevoke: .featureRevoke(try FeatureRevoke(reading: &reader))
        case .sessionMessage: .sessionMessage(try SessionMessage(reading: &reader))
        case .messageAck: .messageAck(try MessageAck(reading: &reader))
        case .resume: .resume(try Resume(reading: &reader))
        case .resumeResult: .resumeResult(try ResumeResult(reading: &reader))
        case .featureWithdraw: .featureWithdraw(try FeatureWithdraw(reading: &reader))
        }
    }
}

extension WireMessage {
    var frameType: FrameType { Self.frameType }
}
