import SupportUtilities
internal import COpenSSL

/// Reads certificates and keys from PEM files or bytes, naming the source in every error.
package enum PEM {
    package static func bytes(of source: PEMSource) throws(TransportError) -> [UInt8] {
        switch source {
        case .bytes(let bytes): return bytes
        case .file(let path): return try FileBytes.read(path)
        }
    }

    private static func withBIO<Result>(
        _ bytes: [UInt8], _ body: (OpaquePointer) throws(TransportError) -> Result
    ) throws(TransportError) -> Result {
        let result: Swift.Result<Result, TransportError> = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                return .failure(TransportError(.tls, "cannot allocate a memory BIO"))
            }
            defer { BIO_free(bio) }
            do throws(TransportError) { return .success(try body(bio)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Every certificate in the source, in order. The caller frees them.
    package static func certificates(from source: PEMSource) throws(TransportError) -> [OpaquePointer] {
        let bytes = try bytes(of: source)
        OpenSSLErrorQueue.clear()
        let certificates = try withBIO(bytes) { bio throws(TransportError) -> [OpaquePointer] in
            var found: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { found.append(certificate) }
            return found
        }
        // Reading stops with "no start line" at the end of the input; that is how PEM reading ends, not an error,
        // unless nothing at all was read.
        let reason = OpenSSLErrorQueue.drain()
        if certificates.isEmpty {
            throw TransportError(
                .invalidPEM, "\(source.label): no PEM certificate could be read", openSSLReason: reason)
        }
        return certificates
    }

    /// The private key in the source. The caller frees it.
    package static func privateKey(from source: PEMSource) throws(TransportError) -> OpaquePointer {
        let bytes = try bytes(of: source)
        OpenSSLErrorQueue.clear()
        let key = try withBIO(bytes) { bio throws(TransportError) in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        guard let key else {
            throw TransportError(
                .invalidPEM, "\(source.label): no PEM private key could be read",
                openSSLReason: OpenSSLErrorQueue.drain())
        }
        return key
    }

    /// SHA-256 over the DER SubjectPublicKeyInfo of `certificate`: the pin value.
    package static func publicKeyDigest(of certificate: OpaquePointer) -> [UInt8]? {
        guard let key = X509_get0_pubkey(certificate) else { return nil }
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(key, &der)
        guard length > 0, let der else { return nil }
        defer { rs_OPENSSL_free(der) }
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        guard EVP_Digest(der, Int(length), &digest, &digestLength, EVP_sha256(), nil) == 1, digestLength == 32 else {
            return nil
        }
        return digest
    }

    /// The pin of the first certificate in `source`.
    package static func publicKeyPin(ofCertificateIn source: PEMSource) throws(TransportError) -> PublicKeyPin {
        let certificates = try certificates(from: source)
        defer { certificates.forEach { X509_free($0) } }
        guard let digest = publicKeyDigest(of: certificates[0]) else {
            throw TransportError(.invalidPEM, "\(source.label): the certificate's public key cannot be read")
        }
        return try PublicKeyPin(digest: digest)
    }
}

extension PublicKeyPin {
    /// The pin of the (first) certificate in `source`, as `certs/make-dev-certs.sh` prints it.
    public static func of(certificate source: PEMSource) throws(TransportError) -> PublicKeyPin {
        try PEM.publicKeyPin(ofCertificateIn: source)
    }
}
