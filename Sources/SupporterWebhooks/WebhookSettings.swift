import SupportUtilities
public import SupportRuntime

/// How a node delivers webhooks (`rsup-supporter serve --webhook-…`).
public struct WebhookSettings: Sendable {
    /// Hosts an `http://` endpoint may name (`--webhook-allow-http`); every other endpoint is `https://`.
    public var plainHTTPHosts: Set<String> = []
    /// Where deliveries may go although refused by default (`--webhook-allow-address`).
    public var addressPolicy = WebhookAddressPolicy()
    /// Who signs a receiver's certificate (`--webhook-trust FILE`, PEM), instead of the system's trusted roots (nil).
    public var trustRoots: PEMSource?
    /// The time one delivery may take, connect to the response's head and the start of its body
    /// (`--webhook-timeout`, default 10 s); the name lookup before it is bounded by the system resolver's own limits.
    public var timeout: Duration = .seconds(10)
    /// The most of a receiver's response body read (kept in the delivery log as the start of the error).
    public var maxResponseBodyBytes = 1024
    /// The most of a response head read; a larger one fails the attempt.
    public var maxResponseHeadBytes = 16_384
    /// Endpoints delivered to at once, each on a thread of its own (`--webhook-concurrency`, default 4): a hanging
    /// receiver holds one of them for at most ``timeout`` per attempt.
    public var concurrency = 4
    /// An endpoint's pending deliveries taken in one lease; sent in order, stopping at the first failure.
    public var batch = 20
    /// How long an endpoint's lease lasts without an attempt recorded (another node takes it over after); at least
    /// three times ``timeout``.
    public var lease: Duration = .seconds(60)
    /// How often the node looks for due deliveries when it was not woken.
    public var pollInterval: Duration = .seconds(1)
    /// The retry schedule (`--webhook-retry-base`, default 5 s, doubling to 1 h, for 24 h).
    public var retry = WebhookRetrySchedule()
    /// How long finished deliveries stay in the log.
    public var logRetention: Duration = .seconds(30 * 86_400)

    public init() {}
}
