public import SupportSession
import SupportWire
import SupportUtilities
public import SupportVocabulary

/// Where a device session stands, for a UI to bind to: one value, always current, changing in the order of the
/// session's events.
///
/// Read it from ``DeviceSession/state`` (any thread) or, on the main actor, from ``DeviceSessionModel/state``
/// (observable). Switch over it without `default`: every case is something the user should see.
public enum DeviceSessionState: Sendable, Hashable {
    /// No code joined yet (a model before ``DeviceSessionModel/join(code:)``).
    case offline
    /// Reaching the supporter node and registering the code.
    case connecting
    /// The code is online: the supporter sees it; the user waits. `waitingMessage` is what the supporter team wants
    /// shown meanwhile.
    case online(codeType: SessionCodeType?, waitingMessage: String?)
    /// A supporter asks to connect: show the prompt, then answer (allow or reject).
    case requestPending(ConnectionRequestInfo)
    /// The user allowed; the session is starting.
    case starting(ConnectionRequestInfo)
    /// The session runs: the supporter is connected.
    case active(supporterName: String, connectionType: ConnectionType, details: SessionDetails)
    /// The link was lost; the device reconnects and the session is kept (SPEC §15.5). `resuming` is the state that
    /// continues once resumed (a prompt still up, a session still active).
    indirect case reconnecting(resuming: DeviceSessionState)
    /// Over, for this reason. Join again with a new session.
    case ended(SessionEnding)

    /// Whether the session is over.
    public var isEnded: Bool {
        if case .ended = self { return true }
        return false
    }

    /// Whether the code is online (waiting, a prompt up, starting, active, or reconnecting to one of them).
    public var isOnline: Bool {
        switch self {
        case .online, .requestPending, .starting, .active: true
        case .reconnecting(let resuming): resuming.isOnline
        case .offline, .connecting, .ended: false
        }
    }

    /// The request waiting for the user's answer, if any (also while reconnecting).
    public var pendingRequest: ConnectionRequestInfo? {
        switch self {
        case .requestPending(let request): request
        case .reconnecting(let resuming): resuming.pendingRequest
        default: nil
        }
    }
}

/// Follows a session's events to its ``DeviceSessionState``: a pure value, events in, state out.
struct DeviceSessionStateTracker: Sendable, Hashable {
    private(set) var state: DeviceSessionState = .connecting
    /// The last SESSION_CODE online details, to go back to after a request ends without a session.
    private var waiting: DeviceSessionState = .online(codeType: nil, waitingMessage: nil)

    init(state: DeviceSessionState = .connecting) { self.state = state }

    /// The state after `event`; whether it changed.
    @discardableResult
    mutating func apply(_ event: DeviceSessionEvent) -> Bool {
        let before = state
        switch event {
        case .reconnecting:
            if case .reconnecting = state {} else if !state.isEnded { state = .reconnecting(resuming: state) }
        case .resumed:
            if case .reconnecting(let resuming) = state { state = resuming }
        case .supporterDisconnected(let reason, let text):
            state = .ended(SessionEnding(reason: reason, detail: text))
        case .error(let failure):
            state = .ended(SessionEnding(failure))
        default:
            if case .reconnecting(let resuming) = state {
                state = .reconnecting(resuming: next(resuming, event))
            } else {
                state = next(state, event)
            }
        }
        return state != before
    }

    /// The user answered the pending request `requestID` (and the answer counted).
    @discardableResult
    mutating func answered(_ requestID: UInt32, allow: Bool) -> Bool {
        let before = state
        func apply(_ state: DeviceSessionState) -> DeviceSessionState {
            guard case .requestPending(let request) = state, request.requestID == requestID else { return state }
            return allow ? .starting(request) : waiting
        }
        if case .reconnecting(let resuming) = state {
            state = .reconnecting(resuming: apply(resuming))
        } else {
            state = apply(state)
        }
        return state != before
    }

    private mutating func next(_ state: DeviceSessionState, _ event: DeviceSessionEvent) -> DeviceSessionState {
        guard !state.isEnded else { return state }
        switch event {
        case .sessionCodeOnline(let codeType, let waitingMessage):
            waiting = .online(codeType: codeType, waitingMessage: waitingMessage)
            return waiting
        case .connectionRequest(let request):
            return .requestPending(request)
        case .connectionRequestAborted(let id, _), .connectionRequestTimedOut(let id):
            switch state {
            case .requestPending(let request), .starting(let request): return request.requestID == id ? waiting : state
            default: return state
            }
        case .supporterConnected(let name, let type, let details):
            return .active(supporterName: name, connectionType: type, details: details)
        default:
            return state
        }
    }
}
