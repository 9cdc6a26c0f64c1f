import SupportRuntime
import SupportUtilities
public import SupportWire
public import SupportVocabulary

/// What a framed link announces in HELLO / HELLO_ACK and how it times things (SPEC §5.1, §5.2, §7).
public struct LinkSettings: Sendable, Hashable {
    public var role: NodeRole
    /// This node's name: for a device, the name supporters see. 1–64 bytes.
    public var nodeName: String
    /// The protocol extensions this node supports and announces (SPEC §15.1); `.none` is 1.0 mode.
    public var extensions: ProtocolExtensions = .all
    /// Responder with session resume: how long a session whose link was lost is kept (HELLO_ACK
    /// `resume_grace_ms`, SPEC §15.5); 1–600 s.
    public var resumeGrace: Duration = .seconds(30)
    /// The keepalive interval this node proposes (initiator) or requires at least (responder).
    public var keepaliveInterval: Duration = .seconds(15)
    /// Responder: the largest keepalive interval accepted from a peer's HELLO. A HELLO proposing more is refused with
    /// GOAWAY `protocol_error` (its text names this limit) and the connection closes, so that no peer can make its own
    /// death go unnoticed for longer. The effective interval stays the larger of both (SPEC §5.2), so a proposal up to
    /// this node's own ``keepaliveInterval`` is accepted even when that is above this cap.
    public var maxPeerKeepaliveInterval: Duration = .seconds(120)
    /// The largest payload this node accepts.
    public var maxFrameSize: Int = WireLimits.defaultMaxFrameSize
    /// How long to wait for HELLO / HELLO_ACK after TLS is up.
    public var helloTimeout: Duration = .seconds(10)
    /// Bytes queued for sending beyond which a slow peer is disconnected.
    public var maxBufferedBytes: Int = 4 << 20

    public init(role: NodeRole, nodeName: String) {
        self.role = role
        self.nodeName = nodeName
    }
}

/// What HELLO / HELLO_ACK settled for one connection.
public struct LinkParameters: Sendable, Hashable {
    public var version: UInt8
    public var peerRole: NodeRole
    public var peerName: String
    public var peerExtensions: FeatureSet
    /// The extensions in effect on this connection (SPEC §15.1).
    public var extensions: ProtocolExtensions = .none
    /// With session resume in effect: the responder's grace period for a lost link.
    public var resumeGrace: Duration?
    /// The effective keepalive interval.
    public var keepaliveInterval: Duration
    /// The largest payload the peer accepts: our encoder's limit.
    public var peerMaxFrameSize: Int
}
