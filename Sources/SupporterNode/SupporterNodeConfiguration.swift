public import SupporterCore
import SupporterStore
import SupportSession
public import SupportRuntime
public import SupportUtilities
public import SupportWire

/// How a supporter node listens and what it allows. Defaults on every field but the TLS identity.
public struct SupporterNodeConfiguration: Sendable {
    /// Listen address; `::` or `0.0.0.0` for all, `127.0.0.1` for loopback only.
    public var host: String = "127.0.0.1"
    /// Listen port; 0 picks a free one (see ``SupporterNode/port``).
    public var port: UInt16 = 7443
    /// The node's TLS server configuration (certificate chain and key; client certificates if wanted).
    public var tls: TLSConfiguration
    /// The name devices see in HELLO_ACK.
    public var nodeName: String = "supporter-node"
    /// The least keepalive interval the node accepts (SPEC §5.2: the effective one is the larger of both).
    public var keepaliveInterval: Duration = .seconds(15)
    /// How long a connection request waits for the device's answer before it is aborted.
    public var requestTimeout: Duration = .seconds(90)
    /// The protocol extensions the node offers (SPEC §15.1): access control, in-session messages and session
    /// resume. `.none` speaks protocol 1.0 exactly.
    public var extensions: ProtocolExtensions = .all
    /// With session resume: how long a session whose link was lost waits for the device's RESUME (announced in
    /// HELLO_ACK, 1–600 s).
    public var resumeGrace: Duration = .seconds(30)
    /// How long a new code stays valid.
    public var defaultCodeLifetime: Duration = .seconds(24 * 3600)
    /// Event loops (threads) for connections.
    public var loopCount: Int = 2
    /// Back-off, refusal and connection limits (SPEC §13).
    public var registryPolicy = CodeRegistry.Policy()
    /// How long an accepted connection may stay without registering on a code (SPEC §13).
    public var registrationDeadline: Duration = .seconds(10)
    public var logger: NodeLogger = .disabled
    /// Hosts a webhook endpoint's `http://` URL may name (`--webhook-allow-http`); every other endpoint is `https://`.
    public var webhookPlainHTTPHosts: Set<String> = []

    public init(tls: TLSConfiguration) { self.tls = tls }
}
