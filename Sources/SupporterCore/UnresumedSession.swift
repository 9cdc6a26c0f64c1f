public import Foundation

/// A session this node held when its previous process stopped (drained, or killed), as its store recorded it: the
/// device may resume it here within the resume grace period (SPEC §15.5 "Drain"), after which it ends. Only a lone
/// node on SQLite keeps these; on PostgreSQL the presence row carries the same record for any node to take over.
public struct UnresumedSession: Sendable, Hashable {
    /// The session as last recorded (its resume secrets as digests only).
    public var state: StoredResumeState
    /// When the session became active (its last `session_started` row), for the `session_ended` row's duration; nil
    /// when it was not active.
    public var activeSince: Date?

    public init(state: StoredResumeState, activeSince: Date?) {
        self.state = state
        self.activeSince = activeSince
    }

    public var code: String { state.code }
}
