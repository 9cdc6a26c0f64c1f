// Fixtures shared by the session machine tests: one representative instance of every message, and machines driven
// into each state of SPEC §8 / §9 through their public events only.
import Testing

@testable import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

/// One representative of each of the 14 message types; the id-bearing ones once with the id the fixture machines
/// have pending (7 on the device, 1 on the supporter) and once with another.
enum Sample: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case hello, helloAck, ping, pong, goAway
    case register
    case registerResultSuccess, registerResultRefused
    case connectionRequest
    case connectionResponseAllowPending, connectionResponseRejectPending, connectionResponseOtherID
    case requestAbortPending, requestAbortOtherID
    case sessionStartedPending, sessionStartedOtherID
    case sessionEnd, sessionError, voipState

    var testDescription: String { rawValue }

    /// The message; `pendingID` is the id the receiving machine has pending in the fixtures.
    func message(pendingID: UInt32) -> Message {
        switch self {
        case .hello: .hello(Hello(role: .supporter, nodeName: "node"))
        case .helloAck: .helloAck(HelloAck(role: .supporter, nodeName: "node"))
        case .ping: .ping(Ping(nonce: 42))
        case .pong: .pong(Pong(nonce: 42))
        case .goAway: .goAway(GoAway(reason: .normalClose))
        case .register: .register(Register(sessionCode: "s12-345", apiToken: "tok", capabilities: [Feature(.voip)]))
        case .registerResultSuccess: .registerResult(RegisterResult(reason: .success, codeType: .remoteSupport))
        case .registerResultRefused:
            .registerResult(RegisterResult(reason: .rateLimited, text: "slow down", retryAfterMilliseconds: 4000))
        case .connectionRequest:
            .connectionRequest(
                ConnectionRequest(
                    requestID: pendingID + 1, supporterName: "Bob", connectionType: .screenShare,
                    requestedFeatures: [Feature(.screenShare)]))
        case .connectionResponseAllowPending:
            .connectionResponse(ConnectionResponse(requestID: pendingID, decision: .allow))
        case .connectionResponseRejectPending:
            .connectionResponse(ConnectionResponse(requestID: pendingID, decision: .reject))
        case .connectionResponseOtherID:
            .connectionResponse(ConnectionResponse(requestID: pendingID + 100, decision: .allow))
        case .requestAbortPending: .requestAbort(RequestAbort(requestID: pendingID, reason: .abortedBySupporter))
        case .requestAbortOtherID: .requestAbort(RequestAbort(requestID: pendingID + 100, reason: .requestTimedOut))
        case .sessionStartedPending: .sessionStarted(SessionStarted(requestID: pendingID))
        case .sessionStartedOtherID: .sessionStarted(SessionStarted(requestID: pendingID + 100))
        case .sessionEnd: .sessionEnd(SessionEnd(reason: .endedBySupporter, text: "bye"))
        case .sessionError: .sessionError(SessionError(reason: .unsupportedFeature, feature: .assistAR, text: "no AR"))
        case .voipState: .voipState(VoIPState(state: .started, text: "on"))
        }
    }
}

/// Every message type is represented.
@Test func samplesCoverEveryFrameType() {
    let types = Set(Sample.allCases.map { $0.message(pendingID: 1).frameType })
    #expect(types.count == 14)
}

/// Whether `actions` is exactly one protocol violation.
func isSingleViolation<Action>(_ actions: [Action], _ match: (Action) -> Bool) -> Bool {
    actions.count == 1 && match(actions[0])
}

extension DeviceSessionMachine.Action {
    var isProtocolViolation: Bool {
        if case .protocolViolation = self { return true }
        return false
    }
}

extension SupporterSessionMachine.Action {
    var isProtocolViolation: Bool {
        if case .protocolViolation = self { return true }
        return false
    }
}

/// A node's clock origin for the tests.
let t0 = Deadline.seconds(10)
