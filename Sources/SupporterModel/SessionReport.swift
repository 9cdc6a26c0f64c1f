public import Foundation

/// What happened on one session code, read from its audit trail (issue 24, "session report"): the devices that came
/// online, and each connection request with its outcome, its times, the features granted, refused, denied and
/// revoked, the time the device spent reconnecting, and how the session ended. A pure value: the rows in, the
/// report out.
public struct SessionReport: Sendable, Hashable {
    /// One connection request and the session it started, if it did.
    public struct Session: Sendable, Hashable {
        public var requestID: UInt32
        /// The name the device's user saw.
        public var supporter: String
        /// The supporter account that sent it, when one did.
        public var account: String?
        /// `screen_share` or `assist_ar`.
        public var connectionType: String
        public var requestedAt: Date
        /// When the device answered (or the request timed out or was aborted).
        public var answeredAt: Date?
        /// `pending`, `allowed`, `rejected`, `timed_out` or `aborted`.
        public var outcome: String = "pending"
        public var startedAt: Date?
        public var endedAt: Date?
        /// The reason code the session ended with (`ended_by_supporter`, `ended_by_device`, `connection_lost`, …).
        public var endReason: String?
        /// Features in effect: granted at the start or later, less those revoked.
        public var granted: [String] = []
        /// Features the device's user refused when asked.
        public var refused: [String] = []
        /// Features the code's rules denied.
        public var denied: [String] = []
        /// Features the device revoked during the session.
        public var revoked: [String] = []
        /// Features a supporter asked for during the session, in order, and those of them still unanswered.
        public var asked: [String] = []
        public var pendingAsks: [String] = []
        /// Chat lines and application messages the supporter sent and the device sent, and files from the device.
        public var messagesSent = 0
        public var messagesReceived = 0
        public var filesReceived = 0
        /// Files the supporter sent to the device.
        public var filesSent = 0
        /// Times the device's link was lost and resumed, and how long that took in all.
        public var reconnects = 0
        public var reconnectingMilliseconds = 0

        /// From the request to the device's answer.
        public var waitingMilliseconds: Int? { answeredAt.map { Self.milliseconds(requestedAt, $0) } }
        /// From the start to the end (nil while it runs).
        public var activeMilliseconds: Int? {
            guard let startedAt, let endedAt else { return nil }
            return Self.milliseconds(startedAt, endedAt)
        }

        static func milliseconds(_ from: Date, _ to: Date) -> Int {
            max(0, Int((to.timeIntervalSince(from) * 1000).rounded()))
        }
    }

    public var code: String
    /// The device names that came online on the code, in order, each once.
    public var devices: [String] = []
    public var firstOnline: Date?
    public var lastOffline: Date?
    public var sessions: [Session] = []

    /// The report of `code` from its audit rows, oldest first.
    public init(code: String, events: [AuditEvent]) {
        self.code = code
        var reconnectingSince: Date?
        for event in events where event.code == code {
            let details = event.details
            let requestID = details["request_id"].flatMap { UInt32($0) }
            switch event.kind {
            case .deviceOnline:
                if let name = details["device"], !name.isEmpty, !devices.contains(name) { devices.append(name) }
                if firstOnline == nil { firstOnline = event.time }
            case .deviceOffline:
                lastOffline = event.time
            case .requestSent:
                sessions.append(
                    Session(
                        requestID: requestID ?? 0, supporter: details["supporter"] ?? "", account: details["actor_account"],
                        connectionType: details["type"] ?? "screen_share", requestedAt: event.time))
            case .requestAllowed: update(requestID) { $0.answer("allowed", at: event.time) }
            case .requestRejected: update(requestID) { $0.answer("rejected", at: event.time) }
            case .requestTimedOut: update(requestID) { $0.answer("timed_out", at: event.time) }
            case .requestAborted: update(requestID) { $0.answer("aborted", at: event.time) }
            case .sessionStarted: update(requestID) { $0.startedAt = event.time }
            case .featuresGranted:
                current { $0.grant(Self.features(details["features"])) }
            case .featureAsked:
                current { session in
                    let names = Self.features(details["feature"])
                    session.asked += names
                    for name in names where !session.pendingAsks.contains(name) { session.pendingAsks.append(name) }
                }
            case .featureGranted:
                current { session in
                    let names = Self.features(details["feature"])
                    session.grant(names)
                    session.pendingAsks.removeAll { names.contains($0) }
                }
            case .featureRefused:
                current { session in
                    let names = Self.features(details["feature"])
                    session.refused += names
                    session.pendingAsks.removeAll { names.contains($0) }
                }
            case .messageSent where details["kind"] == "file":
                current { $0.filesSent += 1 }
            case .messageSent:
                current { $0.messagesSent += 1 }
            case .messageReceived:
                current { $0.messagesReceived += 1 }
            case .fileReceived:
                current { $0.filesReceived += 1 }
            case .featureDenied:
                let names = Self.features(details["features"]) + Self.features(details["feature"])
                latest { $0.denied += names.filter { !$0.isEmpty } }
            case .featureRevoked:
                current { session in
                    let names = Self.features(details["feature"])
                    session.revoked += names
                    session.granted.removeAll { names.contains($0) }
                }
            case .deviceReconnecting:
                reconnectingSince = event.time
            case .deviceResumed:
                if let since = reconnectingSince {
                    current {
                        $0.reconnects += 1
                        $0.reconnectingMilliseconds += Session.milliseconds(since, event.time)
                    }
                }
                reconnectingSince = nil
            case .sessionEnded:
                current { session in
                    if let since = reconnectingSince {
                        session.reconnectingMilliseconds += Session.milliseconds(since, event.time)
                    }
                    session.endedAt = event.time
                    session.endReason = details["reason"]
                    session.pendingAsks = []  // unanswered when the session ended: never will be
                }
                reconnectingSince = nil
            default:
                break
            }
        }
    }

    private mutating func update(_ requestID: UInt32?, _ change: (inout Session) -> Void) {
        guard let index = sessions.lastIndex(where: { requestID == nil || $0.requestID == requestID }) else { return }
        change(&sessions[index])
    }

    /// The session running now: started and not ended.
    private mutating func current(_ change: (inout Session) -> Void) {
        guard let index = sessions.lastIndex(where: { $0.startedAt != nil && $0.endedAt == nil }) else { return }
        change(&sessions[index])
    }

    /// The newest request, whatever its state (a denial is audited with the request or an ask).
    private mutating func latest(_ change: (inout Session) -> Void) {
        guard !sessions.isEmpty else { return }
        change(&sessions[sessions.count - 1])
    }

    private static func features(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
    }
}

extension SessionReport.Session {
    fileprivate mutating func answer(_ outcome: String, at time: Date) {
        self.outcome = outcome
        answeredAt = time
    }

    fileprivate mutating func grant(_ names: [String]) {
        for name in names where !granted.contains(name) { granted.append(name) }
    }
}
