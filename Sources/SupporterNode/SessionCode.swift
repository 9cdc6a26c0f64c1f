import SupportSession

/// The kind of a session code and its lifecycle state as the supporter node lists it.
public enum SessionCodeState: String, Sendable, Hashable, CaseIterable {
    /// Created, valid, no device on it.
    case open
    /// A device registered and waits.
    case online
    /// A connection request waits for the device's answer.
    case requestPending = "request_pending"
    /// The session runs.
    case active
    case closed
    case expired
}

/// A session code and what the node knows of it.
public struct SessionCodeInfo: Sendable, Hashable {
    public var code: String
    public var type: SessionCodeType
    public var description: String?
    public var createdAt: Duration
    /// Monotonic time after which the code is expired.
    public var validUntil: Duration
    public var closedAt: Duration?
    public var state: SessionCodeState
    /// The supporter named in the last connection request.
    public var assignedSupporter: String?
    /// The device on the code, by the name it gave in HELLO.
    public var deviceName: String?
}

