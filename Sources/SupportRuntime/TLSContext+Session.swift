import SupportUtilities
internal import COpenSSL
import Glibc

/// What every connection over this context shares, whoever drives it (``TLSConnection`` on an event loop,
/// ``DeadlineSocket`` on a thread of its own): how a session is set up over a socket, and how a failed handshake is
/// put into words.
extension TLSContext {
    /// A new TLS session (`SSL`) over `fd`, in the role of the context (accept for a server, connect for a client).
    ///
    /// A client that checks the peer's chain (``checksChain``) verifies `serverName` against the certificate's
    /// subjectAltName: an IP literal as an address (`X509_VERIFY_PARAM_set1_ip_asc`), anything else as a host name
    /// (`SSL_set1_host`), sent as SNI too. Without the chain check (pins alone) a name is still sent as SNI. The caller
    /// owns the session and frees it with `SSL_free`.
    func makeSession(fd: Int32, serverName: String?) throws(TransportError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context) else {
            throw TransportError(.tls, "cannot create a TLS session", openSSLReason: OpenSSLErrorQueue.drain())
        }
        guard SSL_set_fd(ssl, fd) == 1 else {
            let reason = OpenSSLErrorQueue.drain()
            SSL_free(ssl)
            throw TransportError(.tls, "cannot create a TLS session", openSSLReason: reason)
        }
        if configuration.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName, checksChain {
                if serverName.isIPAddress {
                    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                } else {
                    SSL_set1_host(ssl, serverName)
                    _ = rs_SSL_set_tlsext_host_name(ssl, serverName)
                }
            } else if let serverName, !serverName.isIPAddress {
                _ = rs_SSL_set_tlsext_host_name(ssl, serverName)
            }
        }
        return ssl
    }

    /// Why the handshake of `ssl` with `peer` failed, after `SSL_do_handshake` returned `code` from `SSL_get_error`
    /// with `savedErrno`: a refused certificate names what failed (`certificate_verification` with OpenSSL's verify
    /// text, such as "unable to get local issuer certificate" or "hostname mismatch"; `pin_mismatch`), anything else is
    /// `handshake_failed` with OpenSSL's reason. Drains OpenSSL's error queue.
    func handshakeError(_ ssl: OpaquePointer?, code: Int32, errno savedErrno: Int32, peer: String) -> TransportError {
        let reason = OpenSSLErrorQueue.drain()
        if let ssl {
            let verify = SSL_get_verify_result(ssl)
            if verify != Int(rs_X509_V_OK()) {
                if verify == Int(rs_X509_V_ERR_APPLICATION_VERIFICATION()), usesPins {
                    // OpenSSL's own reason here is only "certificate verify failed", which reads like a CA problem.
                    return TransportError(
                        .pinMismatch,
                        "the public key of \(peer) matches none of the \(configuration.pinnedPublicKeys.count) pinned key(s)")
                }
                let text = String(cString: X509_verify_cert_error_string(verify))
                return TransportError(
                    .certificateVerification, "certificate verification of \(peer) failed: \(text)",
                    openSSLReason: reason)
            }
        }
        if code == SSL_ERROR_SYSCALL, reason == nil {
            let detail = savedErrno == 0 ? "the peer closed the connection" : SystemError.describe(savedErrno)
            return TransportError(.handshakeFailed, "TLS handshake with \(peer) failed: \(detail)")
        }
        return TransportError(
            .handshakeFailed, "TLS handshake with \(peer) failed: \(reason ?? "unknown reason")",
            openSSLReason: reason)
    }

    /// After a completed handshake: `alpn_mismatch` when the configuration requires its application protocol and the
    /// peer did not agree on it, else nil.
    func applicationProtocolError(_ ssl: OpaquePointer) -> TransportError? {
        guard configuration.requiresApplicationProtocol, !negotiatedOurProtocol(ssl) else { return nil }
        return TransportError(
            .alpnMismatch,
            "the peer did not agree on the application protocol '\(configuration.applicationProtocol)' (ALPN)")
    }
}
