import Testing
import SupportWire
import TestSupport
@testable import SupportRuntime
import SupportUtilities

/// Every configuration error is reported when the context is built, with the file and reason in words.
@Suite struct TLSContextTests {
    private func withCertificates(_ body: (TestCertificates) throws -> Void) throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try body(certificates)
    }

    private func buildError(_ configuration: TLSConfiguration) -> TransportError? {
        do {
            _ = try TLSContext(configuration)
            return nil
        } catch {
            return error
        }
    }

    @Test func buildsValidServerAndClientContexts() throws {
        try withCertificates { certificates in
            let server = try TLSContext(
                .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            #expect(server.configuration.isServer)
            let client = try TLSContext(.makeClientConfiguration(trustRoots: .file(certificates.caPath)))
            #expect(!client.configuration.isServer)
            #expect(client.configuration.minimumVersion == .tls13)
        }
    }

    @Test func missingCertificateFileIsNamedInTheError() throws {
        try withCertificates { certificates in
            let missing = certificates.directory + "/no-such-cert.pem"
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(missing), privateKey: .file(certificates.server.keyPath)))
            #expect(error?.kind == .fileUnreadable)
            #expect(error?.message.contains(missing) == true)
            #expect(error?.message.contains("No such file") == true)
        }
    }

    @Test func missingTrustRootsFileIsNamedInTheError() throws {
        try withCertificates { certificates in
            let missing = certificates.directory + "/no-such-ca.pem"
            let error = buildError(.makeClientConfiguration(trustRoots: .file(missing)))
            #expect(error?.kind == .fileUnreadable)
            #expect(error?.message.contains(missing) == true)
        }
    }

    @Test func garbageCertificateIsInvalidPEM() throws {
        try withCertificates { certificates in
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(certificates.garbagePEMPath),
                    privateKey: .file(certificates.server.keyPath)))
            #expect(error?.kind == .invalidPEM)
            #expect(error?.message.contains(certificates.garbagePEMPath) == true)
        }
    }

    @Test func garbagePrivateKeyIsInvalidPEM() throws {
        try withCertificates { certificates in
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.garbagePEMPath)))
            #expect(error?.kind == .invalidPEM)
            #expect(error?.message.contains(certificates.garbagePEMPath) == true)
        }
    }

    @Test func garbageTrustRootsAreInvalidPEM() throws {
        try withCertificates { certificates in
            let error = buildError(.makeClientConfiguration(trustRoots: .file(certificates.garbagePEMPath)))
            #expect(error?.kind == .invalidPEM)
        }
    }

    @Test func keyNotMatchingTheCertificateIsKeyMismatch() throws {
        try withCertificates { certificates in
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.mismatchedKeyPath)))
            #expect(error?.kind == .keyMismatch)
            #expect(error?.message.contains(certificates.mismatchedKeyPath) == true)
            #expect(error?.openSSLReason != nil)
        }
    }

    // MARK: the server's own certificate, checked at start

    /// Server certificates a node must refuse to start with, and words its error must contain.
    enum UnusableServerCertificate: String, CaseIterable, Sendable {
        case expired, notYetValid, clientAuthOnly, keyAgreementOnly, caCertificate
    }

    private func make(_ kind: UnusableServerCertificate, in certificates: TestCertificates) throws -> (
        CertificateFile, [String]
    ) {
        switch kind {
        case .expired:
            return (certificates.serverExpired, ["expired on 2020-01-02 00:00:00 UTC"])
        case .notYetValid:
            let file = try certificates.issueCertificate(
                name: "not-yet-valid", notBefore: "20990101000000Z", notAfter: "21000101000000Z")
            return (file, ["not valid yet", "2099-01-01 00:00:00 UTC"])
        case .clientAuthOnly:
            return (certificates.client, ["extendedKeyUsage", "serverAuth"])
        case .keyAgreementOnly:
            let file = try certificates.issueCertificate(name: "key-agreement-only", keyUsage: "critical,keyAgreement")
            return (file, ["keyUsage", "digitalSignature", "keyEncipherment"])
        case .caCertificate:
            // A CA certificate with nothing else against it (no keyUsage, no extendedKeyUsage), as `req -x509` makes.
            let file = try certificates.issueCertificate(
                name: "ca-as-server", keyUsage: nil, extendedKeyUsage: nil, basicConstraints: "critical,CA:TRUE")
            return (file, ["CA certificate", "CA:TRUE"])
        }
    }

    @Test(arguments: UnusableServerCertificate.allCases)
    func serverCertificateUnusableForTLSServersIsRefusedNamingTheFile(kind: UnusableServerCertificate) throws {
        try withCertificates { certificates in
            let (file, words) = try make(kind, in: certificates)
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(file.certificatePath), privateKey: .file(file.keyPath)))
            #expect(error?.kind == .invalidConfiguration, "\(String(describing: error))")
            #expect(error?.message.contains(file.certificatePath) == true, "\(String(describing: error))")
            for word in words {
                #expect(error?.message.contains(word) == true, "'\(word)' in \(String(describing: error))")
            }
        }
    }

    @Test(arguments: [
        ("critical,digitalSignature", "serverAuth"), ("critical,keyEncipherment", "serverAuth,clientAuth"),
        ("critical,digitalSignature", "anyExtendedKeyUsage"), (nil, nil),
    ] as [(String?, String?)])
    func serverCertificateUsableForTLSServersIsAccepted(keyUsage: String?, extendedKeyUsage: String?) throws {
        try withCertificates { certificates in
            let file = try certificates.issueCertificate(
                name: "usable", keyUsage: keyUsage, extendedKeyUsage: extendedKeyUsage)
            #expect(
                buildError(
                    .makeServerConfiguration(
                        certificateChain: .file(file.certificatePath), privateKey: .file(file.keyPath))) == nil)
        }
    }

    @Test func clientCertificatesAreNotCheckedForServerUse() throws {
        try withCertificates { certificates in
            // A client (mutual TLS) presenting a clientAuth-only certificate is exactly right.
            var configuration = TLSConfiguration.makeClientConfiguration(trustRoots: .file(certificates.caPath))
            configuration.certificateChain = .file(certificates.client.certificatePath)
            configuration.privateKey = .file(certificates.client.keyPath)
            #expect(buildError(configuration) == nil)
        }
    }

    @Test func serverKeyNotMatchingAnOtherwiseValidCertificateIsStillKeyMismatch() throws {
        try withCertificates { certificates in
            let file = try certificates.issueCertificate(name: "valid")
            let error = buildError(
                .makeServerConfiguration(
                    certificateChain: .file(file.certificatePath), privateKey: .file(certificates.mismatchedKeyPath)))
            #expect(error?.kind == .keyMismatch)
            #expect(error?.message.contains(file.certificatePath) == true)
        }
    }

    @Test func serverWithoutKeyIsRejected() throws {
        try withCertificates { certificates in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath))
            configuration.privateKey = nil
            #expect(buildError(configuration)?.kind == .invalidConfiguration)
        }
    }

    @Test func serverWithoutCertificateIsRejected() throws {
        try withCertificates { certificates in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath))
            configuration.certificateChain = nil
            configuration.privateKey = nil
            #expect(buildError(configuration)?.kind == .invalidConfiguration)
        }
    }

    @Test func clientKeyWithoutCertificateIsRejected() throws {
        try withCertificates { certificates in
            var configuration = TLSConfiguration.makeClientConfiguration(trustRoots: .file(certificates.caPath))
            configuration.privateKey = .file(certificates.client.keyPath)
            #expect(buildError(configuration)?.kind == .invalidConfiguration)
        }
    }

    @Test(arguments: ["", String(repeating: "x", count: 256)])
    func unusableALPNIdIsRejected(protocolID: String) throws {
        try withCertificates { certificates in
            var configuration = TLSConfiguration.makeClientConfiguration(trustRoots: .file(certificates.caPath))
            configuration.applicationProtocol = protocolID
            #expect(buildError(configuration)?.kind == .invalidConfiguration)
        }
    }
}

/// Pins: parsing from text, and the pin of a certificate.
@Suite struct PublicKeyPinTests {
    @Test(arguments: [
        "sha256/",
        "sha256/abc",
        "sha256/!!!!",
        "sha256/AAAA",  // 3 bytes, not 32
        "not a pin",
        String(repeating: "0", count: 63),
        String(repeating: "g", count: 64),
        String(repeating: "0", count: 66),
    ])
    func badPinTextIsInvalidPin(text: String) {
        #expect {
            _ = try PublicKeyPin(text)
        } throws: { error in
            (error as? TransportError)?.kind == .invalidPin
        }
    }

    @Test func pinOfACertificateMatchesItsSubjectPublicKeyInfoDigest() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let pin = try PublicKeyPin.of(certificate: .file(certificates.selfSigned.certificatePath))
        #expect(pin.digest == certificates.selfSigned.spkiSHA256)
        #expect(try PublicKeyPin(pin.description) == pin)
        let hex = certificates.selfSigned.spkiSHA256.map { String($0, radix: 16).leftPadded(to: 2) }
        #expect(try PublicKeyPin(hex.joined()) == pin)
        #expect(try PublicKeyPin(hex.joined(separator: ":").uppercased()) == pin)
        #expect(try PublicKeyPin("  " + pin.description + "\n") == pin)
    }

    @Test func pinOfAMissingFileIsFileUnreadable() {
        #expect {
            _ = try PublicKeyPin.of(certificate: .file("/nonexistent/rsup-cert.pem"))
        } throws: { error in
            (error as? TransportError)?.kind == .fileUnreadable
        }
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
