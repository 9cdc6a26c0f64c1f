import SupportUtilities
internal import COpenSSL

/// A built ``TLSConfiguration``: an OpenSSL `SSL_CTX` ready to make connections.
///
/// Building it loads and checks every file, PEM, key and pin, so a bad configuration fails here, naming the file and
/// OpenSSL's reason, and never later at the first connection. A server's own leaf certificate is also checked: valid
/// now, usable for TLS server authentication, and matching the private key (see ``init(_:)``).
public final class TLSContext: @unchecked Sendable {
    // @unchecked: `context` is configured completely in `init` and then only read; OpenSSL documents an SSL_CTX as
    // safe to share between threads for SSL_new once configured. `verifier` is immutable.
    package let context: OpaquePointer
    public let configuration: TLSConfiguration
    private let verifier: PeerVerifier
    private let alpnWire: UnsafeMutableBufferPointer<UInt8>

    /// Builds the context.
    ///
    /// For a server configuration the leaf certificate (the first in the chain) is refused with `invalid_configuration`
    /// naming the file when it is expired or not yet valid (the error gives the date), when it is a CA certificate
    /// (basicConstraints CA:TRUE), when it carries an
    /// extendedKeyUsage without serverAuth, or a keyUsage with neither digitalSignature nor keyEncipherment; and with
    /// `key_mismatch` when the private key is not the certificate's (OpenSSL's `SSL_CTX_check_private_key`).
    public init(_ configuration: TLSConfiguration) throws(TransportError) {
        self.configuration = configuration
        OpenSSLErrorQueue.clear()
        guard let context = SSL_CTX_new(configuration.isServer ? TLS_server_method() : TLS_client_method()) else {
            throw TransportError(.tls, "cannot create a TLS context", openSSLReason: OpenSSLErrorQueue.drain())
        }
        self.context = context
        let protocolID = Array(configuration.applicationProtocol.utf8)
        // Length-prefixed protocol id as the wire wants it, plus one byte after it that tells the server callback
        // (which can carry only this pointer) whether a client without the protocol is refused.
        alpnWire = .allocate(capacity: protocolID.count + 2)
        verifier = PeerVerifier(
            pins: configuration.pinnedPublicKeys.map(\.digest),
            checksChain: configuration.trustRoots != nil || configuration.pinnedPublicKeys.isEmpty)
        guard (1...255).contains(protocolID.count) else {
            throw TransportError(.invalidConfiguration, "the ALPN protocol id must be 1 to 255 bytes")
        }
        alpnWire[0] = UInt8(protocolID.count)
        _ = UnsafeMutableBufferPointer(rebasing: alpnWire[1...protocolID.count]).initialize(from: protocolID)
        alpnWire[protocolID.count + 1] = configuration.requiresApplicationProtocol ? 1 : 0
        try configure()
    }

    deinit {
        SSL_CTX_free(context)
        alpnWire.deallocate()
    }

    private func configure() throws(TransportError) {
        let configuration = self.configuration
        let minimum = configuration.minimumVersion == .tls13 ? rs_TLS1_3_VERSION() : rs_TLS1_2_VERSION()
        guard rs_SSL_CTX_set_min_proto_version(context, minimum) == 1,
            rs_SSL_CTX_set_max_proto_version(context, rs_TLS1_3_VERSION()) == 1
        else { throw TransportError(.tls, "cannot set the TLS versions", openSSLReason: OpenSSLErrorQueue.drain()) }
        // AEAD suites only, X25519 and P-256 only, no compression, no renegotiation.
        guard SSL_CTX_set_ciphersuites(context, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") == 1,
            SSL_CTX_set_cipher_list(
                context,
                "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                    + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305") == 1,
            rs_SSL_CTX_set1_groups_list(context, "X25519:P-256") == 1
        else { throw TransportError(.tls, "cannot set the TLS suites", openSSLReason: OpenSSLErrorQueue.drain()) }
        SSL_CTX_set_options(
            context, rs_SSL_OP_no_compression() | rs_SSL_OP_no_renegotiation() | rs_SSL_OP_cipher_server_preference())
        // Release read/write buffers of idle connections (about 34 KB each); allow partial writes from a moving buffer.
        _ = rs_SSL_CTX_set_mode(
            context, rs_SSL_MODE_release_buffers() | rs_SSL_MODE_partial_write() | rs_SSL_MODE_moving_buffer())
        // Read ahead: one read(2) takes a whole record (and whatever follows), where OpenSSL would read a record's
        // 5-byte header and its body separately. What it read ahead waits in OpenSSL's buffer; TLSConnection reads
        // until OpenSSL wants more, and again on resumeReading(), so nothing stays there unseen.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_READ_AHEAD, 1, nil)
        if configuration.isServer {
            // The chain is exactly what the configuration gave; do not let OpenSSL search stores for more.
            _ = rs_SSL_CTX_set_mode(context, rs_SSL_MODE_no_auto_chain())
        }
        if configuration.isServer {
            // No resumption: nodes hold long-lived connections, and a session cache would cost memory per client.
            _ = rs_SSL_CTX_set_session_cache_mode(context, rs_SSL_SESS_CACHE_off())
            SSL_CTX_set_num_tickets(context, 0)
        }
        try loadIdentity()
        try loadTrust()
        try configureALPN()
    }

    private func loadIdentity() throws(TransportError) {
        let configuration = self.configuration
        guard let chainSource = configuration.certificateChain else {
            if configuration.isServer {
                throw TransportError(.invalidConfiguration, "a server needs a certificate chain and a private key")
            }
            guard configuration.privateKey == nil else {
                throw TransportError(.invalidConfiguration, "a private key was given without a certificate chain")
            }
            return
        }
        guard let keySource = configuration.privateKey else {
            throw TransportError(.invalidConfiguration, "a certificate chain was given without its private key")
        }
        let certificates = try PEM.certificates(from: chainSource)
        guard let leaf = certificates.first else {
            throw TransportError(.invalidPEM, "\(chainSource.label): no certificate found in it")
        }
        defer { certificates.forEach { X509_free($0) } }
        OpenSSLErrorQueue.clear()
        guard SSL_CTX_use_certificate(context, leaf) == 1 else {
            throw TransportError(
                .invalidPEM, "\(chainSource.label): the certificate cannot be used",
                openSSLReason: OpenSSLErrorQueue.drain())
        }
        for intermediate in certificates.dropFirst() {
            // add0 takes ownership; up the count because the defer above frees our reference.
            X509_up_ref(intermediate)
            guard rs_SSL_CTX_add0_chain_cert(context, intermediate) == 1 else {
                X509_free(intermediate)
                throw TransportError(
                    .invalidPEM, "\(chainSource.label): an intermediate certificate cannot be used",
                    openSSLReason: OpenSSLErrorQueue.drain())
            }
        }
        if configuration.isServer { try ServerCertificateCheck.check(leaf, label: chainSource.label) }
        let key = try PEM.privateKey(from: keySource)
        defer { EVP_PKEY_free(key) }
        OpenSSLErrorQueue.clear()
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw TransportError(
                .keyMismatch,
                "\(keySource.label): the private key does not match the certificate in \(chainSource.label)",
                openSSLReason: OpenSSLErrorQueue.drain())
        }
    }

    private func loadTrust() throws(TransportError) {
        let configuration = self.configuration
        if let roots = configuration.trustRoots {
            let certificates = try PEM.certificates(from: roots)
            defer { certificates.forEach { X509_free($0) } }
            guard !certificates.isEmpty else {
                throw TransportError(.invalidPEM, "\(roots.label): no CA certificate found in it")
            }
            let store = SSL_CTX_get_cert_store(context)
            for certificate in certificates where X509_STORE_add_cert(store, certificate) != 1 {
                throw TransportError(
                    .invalidPEM, "\(roots.label): a CA certificate cannot be added",
                    openSSLReason: OpenSSLErrorQueue.drain())
            }
        } else if configuration.pinnedPublicKeys.isEmpty,
            !configuration.isServer || configuration.clientCertificateRequirement == .required
        {
            // Only where peers are verified: a server that asks for no client certificate has no use for the system
            // store, and loading it makes OpenSSL rebuild the server's chain from it on every handshake.
            SSL_CTX_set_default_verify_paths(context)
        }
        let verifyPeer = !configuration.isServer || configuration.clientCertificateRequirement == .required
        let mode: Int32 =
            !verifyPeer
            ? rs_SSL_VERIFY_none()
            : configuration.isServer ? rs_SSL_VERIFY_peer() | rs_SSL_VERIFY_fail_if_no_peer_cert() : rs_SSL_VERIFY_peer()
        SSL_CTX_set_verify(context, mode, nil)
        // Our own chain check: pins when configured, OpenSSL's verification otherwise.
        SSL_CTX_set_cert_verify_callback(
            context,
            { storeContext, argument in
                guard let storeContext, let argument else { return 0 }
                let verifier = Unmanaged<PeerVerifier>.fromOpaque(argument).takeUnretainedValue()
                return verifier.verify(storeContext)
            }, Unmanaged.passUnretained(verifier).toOpaque())
    }

    private func configureALPN() throws(TransportError) {
        if configuration.isServer {
            SSL_CTX_set_alpn_select_cb(
                context,
                { _, out, outLength, offered, offeredLength, argument in
                    guard let out, let outLength, let offered, let argument else {
                        return rs_SSL_TLSEXT_ERR_ALERT_FATAL()
                    }
                    let ours = argument.assumingMemoryBound(to: UInt8.self)
                    let oursLength = Int(ours[0])
                    var index = 0
                    let count = Int(offeredLength)
                    while index < count {
                        let length = Int(offered[index])
                        if length == oursLength, index + 1 + length <= count,
                            memcmp(offered + index + 1, ours + 1, length) == 0
                        {
                            out.pointee = offered + index + 1
                            outLength.pointee = UInt8(length)
                            return rs_SSL_TLSEXT_ERR_OK()
                        }
                        index += 1 + length
                    }
                    // A client that does not offer our protocol is refused with a fatal alert, unless the protocol is
                    // optional for this server: then no ALPN is selected.
                    return ours[oursLength + 1] == 1 ? rs_SSL_TLSEXT_ERR_ALERT_FATAL() : rs_SSL_TLSEXT_ERR_NOACK()
                }, UnsafeMutableRawPointer(alpnWire.baseAddress))
            // The callback above runs only for a client that sends the ALPN extension; one that sends none is
            // refused the same way, in the handshake (SPEC §2, errata 1.0.1 no. 12).
            if configuration.requiresApplicationProtocol { rs_SSL_CTX_require_alpn_extension(context) }
        } else {
            // Note: returns 0 on success, unlike most OpenSSL calls.
            guard SSL_CTX_set_alpn_protos(context, alpnWire.baseAddress, UInt32(alpnWire.count - 1)) == 0 else {
                throw TransportError(.tls, "cannot set ALPN", openSSLReason: OpenSSLErrorQueue.drain())
            }
        }
    }

    /// Whether `ssl` negotiated our ALPN protocol.
    package func negotiatedOurProtocol(_ ssl: OpaquePointer) -> Bool {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, Int(length) == Int(alpnWire[0]) else { return false }
        return memcmp(data, alpnWire.baseAddress! + 1, Int(length)) == 0  // safe: allocated in init
    }

    /// Whether the peer's key must match a pin.
    package var usesPins: Bool { !verifier.pins.isEmpty }
    /// Whether the peer's chain is verified (to the configured CA, or the system's when there are no pins), host
    /// name included.
    package var checksChain: Bool { verifier.checksChain }
}

/// Checks a peer's certificate, by these rules (documented in docs/security.md, "Trusting the node"):
/// - CA only (`trustRoots`): OpenSSL's chain verification, with the host name and every certificate's validity window.
/// - Pins only: the leaf's public key must match a pin, and the leaf must be inside its validity window (an expired or
///   not-yet-valid certificate is refused even with the right key); host names are not checked: the key is the
///   identity.
/// - CA and pins: both — the key must match a pin and the chain must verify to the CA (host name and expiry
///   included). A wrong CA is never ignored because a pin matched.
/// - Neither: the system's CA store (a client of this library may want it; the device SDK refuses this, see
///   `DeviceNode`).
package final class PeerVerifier: Sendable {
    package let pins: [[UInt8]]
    /// Whether OpenSSL's chain verification runs (a CA was given, or no pins).
    package let checksChain: Bool
    package init(pins: [[UInt8]], checksChain: Bool) {
        self.pins = pins
        self.checksChain = checksChain
    }

    package func verify(_ storeContext: OpaquePointer) -> Int32 {
        if !pins.isEmpty {
            guard let leaf = X509_STORE_CTX_get0_cert(storeContext), let digest = PEM.publicKeyDigest(of: leaf),
                pins.contains(digest)
            else {
                X509_STORE_CTX_set_error(storeContext, rs_X509_V_ERR_APPLICATION_VERIFICATION())
                return 0
            }
            if !checksChain {
                // The pin is the identity, not a licence to use a certificate outside its validity window.
                if let notBefore = X509_get0_notBefore(leaf), X509_cmp_current_time(notBefore) >= 0 {
                    X509_STORE_CTX_set_error(storeContext, X509_V_ERR_CERT_NOT_YET_VALID)
                    return 0
                }
                if let notAfter = X509_get0_notAfter(leaf), X509_cmp_current_time(notAfter) <= 0 {
                    X509_STORE_CTX_set_error(storeContext, X509_V_ERR_CERT_HAS_EXPIRED)
                    return 0
                }
                X509_STORE_CTX_set_error(storeContext, rs_X509_V_OK())
                return 1
            }
        }
        return X509_verify_cert(storeContext)
    }
}

/// Checks a server's own leaf certificate at start, so that a node does not run for hours with a certificate every
/// client refuses.
package enum ServerCertificateCheck {
    package static func check(_ leaf: OpaquePointer, label: String) throws(TransportError) {
        if let notBefore = X509_get0_notBefore(leaf) {
            let comparison = X509_cmp_current_time(notBefore)
            if comparison == 0 {
                throw TransportError(.invalidConfiguration, "\(label): the certificate's notBefore date cannot be read")
            }
            if comparison > 0 {
                throw TransportError(
                    .invalidConfiguration,
                    "\(label): the certificate is not valid yet: valid from \(format(notBefore)); check the system "
                        + "clock or use a certificate that is valid now")
            }
        }
        if let notAfter = X509_get0_notAfter(leaf) {
            let comparison = X509_cmp_current_time(notAfter)
            if comparison == 0 {
                throw TransportError(.invalidConfiguration, "\(label): the certificate's notAfter date cannot be read")
            }
            if comparison < 0 {
                throw TransportError(
                    .invalidConfiguration,
                    "\(label): the certificate expired on \(format(notAfter)); renew it")
            }
        }
        // Computes and caches the extensions; EXFLAG_INVALID marks extensions OpenSSL could not parse.
        let flags = X509_get_extension_flags(leaf)
        if flags & rs_EXFLAG_INVALID() != 0 {
            throw TransportError(
                .invalidConfiguration, "\(label): the certificate has malformed extensions",
                openSSLReason: OpenSSLErrorQueue.drain())
        }
        if flags & rs_EXFLAG_CA() != 0 {
            throw TransportError(
                .invalidConfiguration,
                "\(label): the certificate is a CA certificate (basicConstraints CA:TRUE), not a server certificate; "
                    + "use a certificate that CA issued for this server")
        }
        if flags & rs_EXFLAG_XKUSAGE() != 0,
            X509_get_extended_key_usage(leaf) & (rs_XKU_SSL_SERVER() | rs_XKU_ANYEKU()) == 0
        {
            throw TransportError(
                .invalidConfiguration,
                "\(label): the certificate's extendedKeyUsage does not include serverAuth, so clients refuse it for a "
                    + "TLS server; use a certificate issued for TLS servers")
        }
        if flags & rs_EXFLAG_KUSAGE() != 0,
            X509_get_key_usage(leaf) & (rs_KU_DIGITAL_SIGNATURE() | rs_KU_KEY_ENCIPHERMENT()) == 0
        {
            throw TransportError(
                .invalidConfiguration,
                "\(label): the certificate's keyUsage has neither digitalSignature nor keyEncipherment, so it cannot "
                    + "authenticate a TLS server; use a certificate issued for TLS servers")
        }
    }

    /// An ASN.1 time as `2020-01-02 00:00:00 UTC`.
    static func format(_ time: UnsafePointer<ASN1_TIME>) -> String {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return "an unreadable date" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}
