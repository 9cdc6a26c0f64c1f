import SupportTransport

/// One line, for a person, about a transport error: what happened and what to do.
public enum Explain {
    public static func transport(_ error: TransportError) -> String {
        let detail = error.description
        switch error.kind {
        case .fileUnreadable:
            return "\(detail) — check the path and its permissions"
        case .invalidPEM:
            return "\(detail) — the file must hold PEM data (certs/make-dev-certs.sh makes valid files)"
        case .keyMismatch:
            return "\(detail) — give the key that belongs to this certificate"
        case .invalidPin:
            return "\(detail) — use the pin certs/make-dev-certs.sh prints (sha256/…)"
        case .addressInUse:
            return "\(detail)"
        case .connectionRefused:
            return "\(detail)"
        case .hostUnreachable, .connectTimeout:
            return "\(detail) — is the address right and the network up?"
        case .nameResolution:
            return "\(detail) — check the host name"
        case .certificateVerification:
            if detail.contains("hostname") || detail.contains("IP address mismatch") {
                return "TLS: the supporter node's certificate is not for this host name (\(detail)) — connect with a name in its subjectAltName or remake it with that name"
            }
            return "TLS: the supporter node's certificate is not trusted (\(detail)) — pass the CA that signed it with --ca, or pin its key with --pin"
        case .pinMismatch:
            return "TLS: \(detail) — the node's key changed or the pin is wrong"
        case .alpnMismatch:
            return "TLS: \(detail) — the peer is not a RemoteSupport node"
        case .handshakeFailed:
            return "TLS: \(detail)"
        default:
            return detail
        }
    }
}
