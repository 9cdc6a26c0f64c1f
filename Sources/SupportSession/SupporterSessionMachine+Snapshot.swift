public import SupportUtilities
public import SupportWire
public import SupportVocabulary

/// What another supporter node needs to take over a registration whose node died (several nodes on one database):
/// the session's state, its request and grant, and the resume secrets — but not the messages in flight, which are
/// lost with the node (SPEC §15.5, "Resume on another node").
extension SupporterSessionMachine {
    public struct ResumeSnapshot: Sendable, Hashable {
        public enum Phase: String, Sendable, Hashable {
            case online
            case requestPending = "request_pending"
            case active
        }

        public var code: String
        public var phase: Phase
        /// The pending or active request.
        public var request: ConnectionRequest?
        public var deviceCapabilities: FeatureSet
        public var lastRequestID: UInt32
        public var granted: FeatureSet
        public var registrationExtensions: ProtocolExtensions
        /// The last request that ended without a session, and why.
        public var lastEndedRequestID: UInt32?
        public var lastEndedReason: ReasonCode?
        /// The secrets a RESUME may present: the current one, then the one it replaced (the node stores digests).
        public var secrets: [String]

        public init(
            code: String, phase: Phase, request: ConnectionRequest?, deviceCapabilities: FeatureSet,
            lastRequestID: UInt32, granted: FeatureSet, registrationExtensions: ProtocolExtensions,
            lastEndedRequestID: UInt32?, lastEndedReason: ReasonCode?, secrets: [String]
        ) {
            self.code = code
            self.phase = phase
            self.request = request
            self.deviceCapabilities = deviceCapabilities
            self.lastRequestID = lastRequestID
            self.granted = granted
            self.registrationExtensions = registrationExtensions
            self.lastEndedRequestID = lastEndedRequestID
            self.lastEndedReason = lastEndedReason
            self.secrets = secrets
        }
    }

    /// The registration as another node would take it over; nil when it cannot be resumed (no secret, idle).
    public var resumeSnapshot: ResumeSnapshot? {
        guard let resumeSecret, let code else { return nil }
        let phase: ResumeSnapshot.Phase
        var request: ConnectionRequest?
        switch state {
        case .idle: return nil
        case .online: phase = .online
        case .requestPending(_, let pending, _):
            phase = .requestPending
            request = pending
        case .active(_, let running):
            phase = .active
            request = running
        }
        return ResumeSnapshot(
            code: code, phase: phase, request: request, deviceCapabilities: deviceCapabilities,
            lastRequestID: lastRequestIDValue, granted: granted, registrationExtensions: registrationExtensionsValue,
            lastEndedRequestID: lastEndedRequestValue?.id, lastEndedReason: lastEndedRequestValue?.reason,
            secrets: [resumeSecret] + (previousResumeSecretValue.map { [$0] } ?? []))
    }

    /// A machine for a registration taken over from a node that died: reconnecting, as if its link had been lost
    /// here, so that ``resumed(by:extensions:peerMaxFrameSize:now:)`` decides the RESUME with the usual
    /// reconciliation. `secret` is the one the device presented (the caller checked it against the stored digests).
    /// A pending request gets a full prompt time again from `now`.
    public init(
        restoring snapshot: ResumeSnapshot, secret: String, requestTimeout: Duration, now: Deadline,
        secretSource: @escaping @Sendable () -> String = ResumeSecret.make
    ) {
        self.init(requestTimeout: requestTimeout, secretSource: secretSource)
        let state: State
        switch (snapshot.phase, snapshot.request) {
        case (.requestPending, let request?):
            state = .requestPending(code: snapshot.code, request: request, deadline: now + requestTimeout)
        case (.active, let request?):
            state = .active(code: snapshot.code, request: request)
        default:
            state = .online(code: snapshot.code)
        }
        restore(
            state: state,
            capabilities: snapshot.deviceCapabilities, lastRequestID: snapshot.lastRequestID, granted: snapshot.granted,
            registrationExtensions: snapshot.registrationExtensions,
            lastEnded: snapshot.lastEndedRequestID.map { ($0, snapshot.lastEndedReason ?? .abortedBySupporter) },
            secret: secret)
    }
}
