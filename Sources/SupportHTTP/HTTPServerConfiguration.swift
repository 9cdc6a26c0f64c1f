import SupportUtilities

/// Limits and timeouts of an ``HTTPServer``, with defaults on every field.
public struct HTTPServerConfiguration: Sendable, Hashable {
    /// Request size limits (request line 8 KiB, header section 16 KiB and 100 fields, body 64 KiB).
    public var limits = HTTPRequestParser.Limits()
    /// Header fields added to every answer — the handler's and the server's own (400, 408, 413, 431, 503 on a handler
    /// timeout, …) — unless the answer sets that field itself: e.g. security headers.
    public var headersOnEveryAnswer = HTTPHeaders()
    /// From connection start (first request) or from the first byte of a request to its complete head; then 408
    /// (if anything arrived) and close.
    public var headerTimeout: Duration = .seconds(10)
    /// From the complete head to the complete body; then 408 and close.
    public var bodyTimeout: Duration = .seconds(10)
    /// How long a body larger than ``maxBodyBytes`` (a ``HTTPRequestParser/LargeBodyRoute``) may take to arrive.
    public var largeBodyTimeout: Duration = .seconds(120)
    /// Requests with such a body held at once, arriving or being answered; one more is answered 503 at once: what
    /// uploads can cost in memory is this times their largest limit.
    public var maxLargeBodies = 4
    /// Of those, held by one client address key (an IPv6 client's /64) at once: so that a few slow clients cannot
    /// take every slot (a trusted proxy's connections are exempt, as from the per-address connection cap).
    public var maxLargeBodiesPerAddress = 1
    /// How long a kept-alive connection may wait for its next request; then it closes silently.
    public var idleTimeout: Duration = .seconds(30)
    /// How long the handler may take; then the client gets 503 and the connection closes (the handler's task is
    /// cancelled and its late answer dropped).
    public var handlerTimeout: Duration = .seconds(30)
    /// Open connections in all. At the cap a newcomer from an address key holding fewer connections than the biggest
    /// holder takes the slot of that holder's oldest idle connection (closed); otherwise it is closed at once (before
    /// TLS). See ``HTTPServer``.
    public var maxConnections = 1024
    /// Open connections from one peer address beyond which new ones from it are closed at once (before TLS), so one
    /// address cannot take the whole of ``maxConnections`` with idle connections.
    public var maxConnectionsPerAddress = 32
    /// Peer addresses only ``maxConnections`` applies to, not ``maxConnectionsPerAddress``: reverse proxies that
    /// carry many clients' connections (any textual form; compared canonically, see ``IPAddressText``).
    public var addressesWithoutPerAddressLimit: Set<String> = []
    /// Response bytes waiting for a slow reader beyond which its connection is closed.
    public var maxBufferedBytes = 1 << 20
    /// The listen backlog.
    public var backlog: Int32 = 1024

    /// The largest body accepted (`Content-Length`); larger → 413.
    public var maxBodyBytes: Int {
        get { limits.maxBodyBytes }
        set { limits.maxBodyBytes = newValue }
    }

    /// Every field at its default.
    public init() {}
}
