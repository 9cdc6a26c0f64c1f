public import Dispatch
public import SupportSession
public import SupportRuntime
public import SupportUtilities
public import SupportWire
public import SupportVocabulary

/// Reports whether a system call is running on the device, and which (the platform's call observer).
public protocol CallObserver: Sendable {
    /// The system call running now, if any (asked at session start and when the app hands over its call).
    func currentCall() -> SystemCallStatus
}

/// A call observer for devices without telephony: never a call.
public struct NoCallObserver: CallObserver {
    /// A call observer that never sees a call.
    public init() {}
    /// Always ``SystemCallStatus/idle``.
    public func currentCall() -> SystemCallStatus { .idle }
}

/// One supporter node's address.
public struct NodeAddress: Sendable, Hashable, CustomStringConvertible {
    /// A DNS name or an IP address.
    public var host: String
    /// The supporter node's device port.
    public var port: UInt16

    /// A node's address; 7443 is the device port by default.
    public init(host: String, port: UInt16 = 7443) {
        self.host = host
        self.port = port
    }

    /// `host:port`, with IPv6 addresses in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// How a device node reaches its supporter node and what it says about itself. Defaults on every field but the
/// address, the trust and the API token.
public struct DeviceConfiguration: Sendable {
    /// The supporter node's DNS name or IP address.
    public var host: String
    /// The supporter node's device port.
    public var port: UInt16 = 7443
    /// Other supporter nodes of the same service (nodes sharing one database), for failover: when `host:port` cannot
    /// be reached the others are tried (each with every address its name resolves to), and a lost link is redialled
    /// through all of them, starting with the node it was on — so a session resumes on another node when its node
    /// dies (SPEC §15.5). After the first node, the others are tried from a place drawn from the session code, so the
    /// devices of a node that died spread over the survivors rather than all taking the next in the list. Only
    /// unreachable nodes make the device try another: refused, unreachable, no address, or no answer within the dial's
    /// timeout (TCP, TLS handshake and HELLO together: a node that accepts TCP and hangs counts); a certificate or
    /// protocol failure does not.
    public var alternateNodes: [NodeAddress] = []
    /// Every node, `host:port` first.
    public var nodes: [NodeAddress] { [NodeAddress(host: host, port: port)] + alternateNodes }
    /// The TLS client configuration: CA and/or pins, optional client certificate.
    public var tls: TLSConfiguration
    /// The API token the supporter node issued. A secret: never logged.
    public var apiToken: String
    /// The name supporters see, 1–64 bytes.
    public var deviceName: String
    /// What this device can do: the SDK advertises this and nothing more. Default: nothing — say what the app
    /// implements, e.g. `[Feature(.screenShare), Feature(.voip)]`. A supporter asking for a feature not listed gets
    /// `unsupported_feature`; VoIP starts only when `voip` is listed.
    public var capabilities: FeatureSet = []
    /// How long a connection request prompt waits for the user before it counts as a reject.
    public var promptTimeout: Duration = .seconds(60)
    /// The app's access rule per feature (SPEC §15.3): `allow`, `confirm` (the user decides) or `deny`. Default:
    /// every feature needs the user's confirmation.
    public var accessRules: FeatureRules = .deviceDefault
    /// How long a feature ask during a session waits for the user before it counts as refused.
    public var featurePromptTimeout: Duration = .seconds(30)
    /// The protocol extensions offered (SPEC §15.1): access control, in-session messages, session resume. `.none`
    /// speaks protocol 1.0 exactly.
    public var extensions: ProtocolExtensions = .all
    /// The keepalive interval proposed to the supporter node.
    public var keepaliveInterval: Duration = .seconds(15)
    /// How long one dial (TCP connect, TLS handshake and HELLO together) may take before the node counts as
    /// unreachable and the next node is tried. Redialling a lost link, each dial gets at most 3 s of it.
    public var connectTimeout: Duration = .seconds(10)
    /// Reports the system call running, for the VoIP decision (SPEC §8); default: never a call.
    public var callObserver: any CallObserver = NoCallObserver()
    /// Where delegate calls run, in order. Default: a private serial queue per session. (A ``DeviceSessionModel``
    /// is called on the main actor whatever this says.)
    public var delegateQueue: DispatchQueue?
    /// How many events ``DeviceSession/events`` keeps for a consumer that has not taken them yet; past it the oldest
    /// are dropped (see ``DeviceSessionEvents``). Default 256.
    public var eventBufferCapacity: Int = 256
    /// Where the SDK logs (never secrets); default: nowhere.
    public var logger: NodeLogger = .disabled
    /// The event loop for the node's connection. Default: one of the node's own. Shared among many device nodes in
    /// one process by test rigs and load generators of this package; not part of the SDK's public surface.
    package var eventLoop: EventLoop?

    /// A configuration with the fields that have no default; every other field keeps its default.
    public init(host: String, port: UInt16 = 7443, tls: TLSConfiguration, apiToken: String, deviceName: String) {
        self.host = host
        self.port = port
        self.tls = tls
        self.apiToken = apiToken
        self.deviceName = deviceName
    }
}
