import SupportUtilities
/// Where PEM data comes from: a file (named in errors) or bytes already in memory.
public enum PEMSource: Sendable, Hashable {
    case file(String)
    case bytes([UInt8])

    /// Names the source in error messages.
    package var label: String {
        switch self {
        case .file(let path): path
        case .bytes: "PEM bytes"
        }
    }
}

/// The lowest TLS version a configuration accepts. TLS 1.3 by default; TLS 1.2 only when asked for; never lower.
public enum TLSMinimumVersion: Sendable, Hashable {
    case tls13
    case tls12
}

/// Whether a server asks its clients for a certificate.
public enum ClientCertificateRequirement: Sendable, Hashable {
    /// Clients are not asked for a certificate.
    case none
    /// Every client must present a certificate that the trust settings accept (CA-signed or pinned).
    case required
}

/// Everything a TLS endpoint needs, as a value with defaults on every field.
///
/// Build one with ``makeClientConfiguration(trustRoots:pinnedPublicKeys:serverName:)`` or
/// ``makeServerConfiguration(certificateChain:privateKey:)``, adjust fields, then make a ``TLSContext`` from it: every
/// configuration error (missing file, unreadable PEM, key not matching the certificate, bad pin) is reported then.
public struct TLSConfiguration: Sendable, Hashable {
    /// The ALPN protocol id of RemoteSupport v1 (SPEC §2).
    public static let protocolID = "rsup/1"

    /// Whether this endpoint is the TLS client or the server.
    public var isServer: Bool
    public var minimumVersion: TLSMinimumVersion = .tls13
    /// Own certificate chain, leaf first. Required for a server; for a client only with mutual TLS.
    public var certificateChain: PEMSource?
    public var privateKey: PEMSource?
    /// CA certificates that may sign the peer's certificate. Nil with no pins: the system's default CA paths. With
    /// pins too, both must accept the peer.
    public var trustRoots: PEMSource?
    /// Accepted SHA-256 fingerprints of the peer's SubjectPublicKeyInfo. Alone (no ``trustRoots``), a peer is accepted
    /// when its leaf key matches one of them, whoever signed it (a self-signed peer included), and its certificate is
    /// inside its validity window; host names are not checked: the key is the identity. With ``trustRoots``, the
    /// chain must also verify to them (host name and expiry included).
    public var pinnedPublicKeys: [PublicKeyPin] = []
    /// Client: the host name or IP address verified against the server certificate's subjectAltName, and sent as SNI
    /// when it is a name.
    public var serverName: String?
    /// Server: whether clients must present a certificate.
    public var clientCertificateRequirement: ClientCertificateRequirement = .none
    /// The ALPN protocol both sides must agree on.
    public var applicationProtocol: String = TLSConfiguration.protocolID
    /// Whether a peer that does not offer ``applicationProtocol`` is refused (our protocol: yes). A server for a
    /// protocol whose clients may send no ALPN at all (HTTP/1.1 clients) sets this to false.
    public var requiresApplicationProtocol = true
    /// TLS handshake deadline, from TCP accept (server) or TCP connect (client).
    public var handshakeTimeout: Duration = .seconds(10)

    private init(isServer: Bool) { self.isServer = isServer }

    /// A client configuration: trust a CA bundle and/or pinned keys, verify `serverName`.
    public static func makeClientConfiguration(
        trustRoots: PEMSource? = nil, pinnedPublicKeys: [PublicKeyPin] = [], serverName: String? = nil
    ) -> TLSConfiguration {
        var configuration = TLSConfiguration(isServer: false)
        configuration.trustRoots = trustRoots
        configuration.pinnedPublicKeys = pinnedPublicKeys
        configuration.serverName = serverName
        return configuration
    }

    /// A server configuration with its certificate chain and key.
    public static func makeServerConfiguration(certificateChain: PEMSource, privateKey: PEMSource) -> TLSConfiguration {
        var configuration = TLSConfiguration(isServer: true)
        configuration.certificateChain = certificateChain
        configuration.privateKey = privateKey
        return configuration
    }
}
