public import SupportRuntime
import SupportUtilities

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
        case .connectionRefused, .hostUnreachable:
            return "cannot reach the supporter node: \(detail)"
        case .connectTimeout:
            return "\(detail) — is the address right and the network up?"
        case .nameResolution:
            return "\(detail) — check the host name"
        case .certificateVerification:
            if detail.contains("certificate has expired") || detail.contains("certificate is not yet valid") {
                return "TLS: the supporter node's certificate is out of its validity period (\(detail)) — renew the certificate, and check this machine's clock"
            }
            if detail.contains("hostname") || detail.contains("IP address mismatch") {
                return "TLS: the supporter node's certificate is not for this host name (\(detail)) — connect with a name in its subjectAltName (or give it with --server-name), or remake the certificate with that name"
            }
            return "TLS: the supporter node's certificate is not trusted (\(detail)) — pass the CA that signed it with --ca, or pin its key with --pin"
        case .pinMismatch:
            return "TLS: pin mismatch: \(detail) — the node's key changed or the pin is wrong"
        case .alpnMismatch:
            return "TLS: \(detail) — the peer is not a RemoteSupport node"
        case .handshakeFailed:
            return "TLS: \(detail)"
        default:
            return detail
        }
    }

    /// One line about a device session that could not reach the node. `DeviceSessionFailure` carries the transport
    /// error only as text (`network error: …`), so its kind is recovered from the words the transport uses.
    public static func connectFailure(_ message: String) -> String {
        let prefix = "network error: "
        let detail = message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
        let kind: TransportError.Kind? =
            if detail.hasPrefix("certificate verification of ") {
                .certificateVerification
            } else if detail.contains("pinned key") {
                .pinMismatch
            } else if detail.hasPrefix("TLS handshake with ") {
                .handshakeFailed
            } else if detail.hasPrefix("nothing listens at ") {
                .connectionRefused
            } else if detail.hasSuffix("is unreachable: check the address and the network") {
                .hostUnreachable
            } else {
                nil
            }
        guard let kind else { return "cannot reach the supporter node: \(detail)" }
        return transport(TransportError(kind, detail))
    }
}
