// TestCertificates.swift — certificates made at test time with the openssl CLI.
//
// `TestCertificates.make()` makes a fresh temporary folder and fills it with a
// small test PKI (EC P-256 keys) by running /usr/bin/openssl through Foundation's
// `Process`. Nothing here is checked in: every run gets new keys. Call
// `remove()` when done to delete the folder.
//
// Needs OpenSSL 3.0+ (`req -x509 -CA`, `-noenc`). Uses only Foundation.

import Foundation

/// A certificate (PEM) and its private key (PEM, unencrypted PKCS#8), plus the
/// SHA-256 of the certificate's DER SubjectPublicKeyInfo (the SPKI pin).
public struct CertificateFile: Sendable {
    public let certificatePath: String
    public let keyPath: String
    /// SHA-256 over the DER SubjectPublicKeyInfo; 32 bytes. Equal to
    /// `openssl x509 -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256`.
    public let spkiSHA256: [UInt8]

    public init(certificatePath: String, keyPath: String, spkiSHA256: [UInt8]) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.spkiSHA256 = spkiSHA256
    }
}

/// Why making the test certificates failed; `description` says which openssl
/// command failed and what it printed.
public struct TestCertificatesError: Error, CustomStringConvertible {
    public let description: String
}

/// One temporary folder of test certificates. Immutable; delete it with `remove()`.
public final class TestCertificates: Sendable {
    /// The folder holding every file below.
    public let directory: String
    /// The development CA certificate (PEM). Its key is `directory/ca.key`.
    public let caPath: String
    /// An unrelated CA certificate (PEM); nothing below chains to it except `serverOtherCA`.
    public let otherCAPath: String
    /// Signed by the CA; SAN DNS:localhost, IP:127.0.0.1, IP:::1; serverAuth.
    public let server: CertificateFile
    /// Signed by the CA; SAN only DNS:wrong.example; serverAuth.
    public let serverWrongHost: CertificateFile
    /// Signed by the CA; valid 2020-01-01 to 2020-01-02 (expired); same SANs as `server`.
    public let serverExpired: CertificateFile
    /// Signed by the unrelated CA (`otherCAPath`); same SANs as `server`.
    public let serverOtherCA: CertificateFile
    /// Self-signed; SAN DNS:localhost, IP:127.0.0.1, IP:::1; serverAuth; for pin tests.
    public let selfSigned: CertificateFile
    /// Signed by the CA; clientAuth (device client certificate).
    public let client: CertificateFile
    /// An EC P-256 key that does not match `server`'s certificate.
    public let mismatchedKeyPath: String
    /// A file that is not PEM at all.
    public let garbagePEMPath: String

    public static let opensslPath = "/usr/bin/openssl"

    private init(
        directory: String, caPath: String, otherCAPath: String,
        server: CertificateFile, serverWrongHost: CertificateFile,
        serverExpired: CertificateFile, serverOtherCA: CertificateFile,
        selfSigned: CertificateFile, client: CertificateFile,
        mismatchedKeyPath: String, garbagePEMPath: String
    ) {
        self.directory = directory
        self.caPath = caPath
        self.otherCAPath = otherCAPath
        self.server = server
        self.serverWrongHost = serverWrongHost
        self.serverExpired = serverExpired
        self.serverOtherCA = serverOtherCA
        self.selfSigned = selfSigned
        self.client = client
        self.mismatchedKeyPath = mismatchedKeyPath
        self.garbagePEMPath = garbagePEMPath
    }

    /// Deletes the temporary folder and everything in it. Safe to call twice.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Makes a new temporary folder with every certificate and key. Throws
    /// `TestCertificatesError` (and deletes the folder) if anything fails.
    public static func make() throws -> TestCertificates {
        let fm = FileManager.default
        guard fm.isExecutableFile(atPath: opensslPath) else {
            throw TestCertificatesError(description: "TestCertificates: \(opensslPath) not found or not executable")
        }
        let dir = fm.temporaryDirectory
            .appendingPathComponent("rsup-test-certs-\(UUID().uuidString)", isDirectory: true).path
        do {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                   attributes: [.posixPermissions: 0o700])
        } catch {
            throw TestCertificatesError(description: "TestCertificates: cannot create \(dir): \(error)")
        }
        do {
            return try build(in: dir)
        } catch {
            try? fm.removeItem(atPath: dir)
            throw error
        }
    }

    /// A new certificate signed by the test CA with the same SANs as `server`, for tests of certificate checks.
    ///
    /// - Parameters:
    ///   - name: the files' base name in ``directory`` (must be new).
    ///   - keyUsage: the keyUsage extension's value (e.g. `"critical,keyAgreement"`), or nil for none.
    ///   - extendedKeyUsage: the extendedKeyUsage value (e.g. `"clientAuth"`), or nil for none.
    ///   - notBefore / notAfter: `YYYYMMDDHHMMSSZ`; by default from now for 3650 days.
    ///   - basicConstraints: the basicConstraints value (`"critical,CA:TRUE"` makes a CA certificate).
    public func issueCertificate(
        name: String, keyUsage: String? = "critical,digitalSignature", extendedKeyUsage: String? = "serverAuth",
        notBefore: String? = nil, notAfter: String? = nil, basicConstraints: String = "critical,CA:FALSE"
    ) throws -> CertificateFile {
        func path(_ file: String) -> String { directory + "/" + file }
        var lines = ["[ext]", "basicConstraints = \(basicConstraints)", "subjectAltName = DNS:localhost,IP:127.0.0.1,IP:::1"]
        if let keyUsage { lines.append("keyUsage = \(keyUsage)") }
        if let extendedKeyUsage { lines.append("extendedKeyUsage = \(extendedKeyUsage)") }
        try Self.write(lines.joined(separator: "\n") + "\n", to: path(name + ".ext"))
        let config = path("openssl.cnf")
        try Self.openssl(["req", "-new", "-config", config] + Self.ecKey + [
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/O=RemoteSupport Tests/CN=localhost",
        ], in: directory)
        var validity = ["-days", "3650"]
        if notBefore != nil || notAfter != nil {
            validity = []
            if let notBefore { validity += ["-startdate", notBefore] }
            validity += notAfter.map { ["-enddate", $0] } ?? ["-days", "3650"]
        }
        try Self.openssl(["ca", "-config", config, "-batch", "-notext", "-extfile", path(name + ".ext"),
                          "-extensions", "ext"] + validity + [
            "-in", path(name + ".csr"), "-out", path(name + ".pem"),
        ], in: directory)
        return try Self.certificateFile(path(name + ".pem"), key: path(name + ".key"))
    }

    // MARK: - Making the files

    private static let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-noenc"]

    private static func build(in dir: String) throws -> TestCertificates {
        func path(_ name: String) -> String { dir + "/" + name }
        let config = path("openssl.cnf")
        let caDB = path("ca-db")
        try FileManager.default.createDirectory(atPath: caDB, withIntermediateDirectories: false)
        try write("", to: caDB + "/index.txt")
        try write("1000\n", to: caDB + "/serial")
        try write(configText(dir: dir, caDB: caDB), to: config)

        // Self-signed certificate (CA or self-signed leaf) with a new key.
        func selfSignedCert(_ name: String, subject: String, ext: String) throws {
            try openssl(["req", "-x509", "-config", config] + ecKey + [
                "-keyout", path(name + ".key"), "-out", path(name + ".pem"),
                "-subj", subject, "-days", "3650", "-extensions", ext,
            ], in: dir)
        }
        // Certificate with a new key, signed by the CA `ca` (ca.pem / ca.key).
        func issuedCert(_ name: String, by ca: String, subject: String, ext: String) throws -> CertificateFile {
            try openssl(["req", "-x509", "-config", config,
                         "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key")] + ecKey + [
                "-keyout", path(name + ".key"), "-out", path(name + ".pem"),
                "-subj", subject, "-days", "3650", "-extensions", ext,
            ], in: dir)
            return try certificateFile(path(name + ".pem"), key: path(name + ".key"))
        }

        try selfSignedCert("ca", subject: "/O=RemoteSupport Tests/CN=RemoteSupport Test CA", ext: "ca_ext")
        try selfSignedCert("other-ca", subject: "/O=Unrelated Tests/CN=Unrelated Test CA", ext: "ca_ext")
        try selfSignedCert("self-signed", subject: "/O=RemoteSupport Tests/CN=localhost", ext: "self_signed_ext")

        let server = try issuedCert("server", by: "ca",
                                    subject: "/O=RemoteSupport Tests/CN=localhost", ext: "server_ext")
        let wrongHost = try issuedCert("server-wrong-host", by: "ca",
                                       subject: "/O=RemoteSupport Tests/CN=wrong.example", ext: "wrong_host_ext")
        let otherCA = try issuedCert("server-other-ca", by: "other-ca",
                                     subject: "/O=Unrelated Tests/CN=localhost", ext: "server_ext")
        let client = try issuedCert("client", by: "ca",
                                    subject: "/O=RemoteSupport Tests/CN=RemoteSupport Test Device", ext: "client_ext")

        // Expired: `req -x509` cannot back-date in OpenSSL 3.0, `openssl ca` can.
        try openssl(["req", "-new", "-config", config] + ecKey + [
            "-keyout", path("server-expired.key"), "-out", path("server-expired.csr"),
            "-subj", "/O=RemoteSupport Tests/CN=localhost",
        ], in: dir)
        try openssl(["ca", "-config", config, "-batch", "-notext",
                     "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
                     "-extensions", "server_ext",
                     "-in", path("server-expired.csr"), "-out", path("server-expired.pem")], in: dir)
        let expired = try certificateFile(path("server-expired.pem"), key: path("server-expired.key"))

        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-out", path("mismatched.key")], in: dir)

        try write("This is not a PEM file.\n\u{0}\u{1}\u{2}garbage\u{7F}\n-----END CERTIFICATE-----\n",
                  to: path("garbage.pem"))

        return TestCertificates(
            directory: dir,
            caPath: path("ca.pem"),
            otherCAPath: path("other-ca.pem"),
            server: server,
            serverWrongHost: wrongHost,
            serverExpired: expired,
            serverOtherCA: otherCA,
            selfSigned: try certificateFile(path("self-signed.pem"), key: path("self-signed.key")),
            client: client,
            mismatchedKeyPath: path("mismatched.key"),
            garbagePEMPath: path("garbage.pem"))
    }

    private static func configText(dir: String, caDB: String) -> String {
        let sans = "DNS:localhost,IP:127.0.0.1,IP:::1"
        return """
        [req]
        distinguished_name = req_dn
        prompt = no

        [req_dn]

        [ca]
        default_ca = test_ca

        [test_ca]
        database = \(caDB)/index.txt
        serial = \(caDB)/serial
        new_certs_dir = \(caDB)
        certificate = \(dir)/ca.pem
        private_key = \(dir)/ca.key
        default_md = sha256
        policy = policy_any
        unique_subject = no
        copy_extensions = none
        email_in_dn = no

        [policy_any]
        commonName = supplied
        organizationName = optional

        [ca_ext]
        basicConstraints = critical,CA:TRUE
        keyUsage = critical,keyCertSign,cRLSign
        subjectKeyIdentifier = hash

        [server_ext]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = \(sans)
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always

        [wrong_host_ext]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:wrong.example
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always

        [client_ext]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = clientAuth
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always

        # No keyUsage: with keyUsage lacking keyCertSign OpenSSL would not treat
        # the certificate as self-issued, so it could not be its own trust anchor.
        [self_signed_ext]
        basicConstraints = critical,CA:FALSE
        extendedKeyUsage = serverAuth
        subjectAltName = \(sans)
        subjectKeyIdentifier = hash

        """
    }

    private static func write(_ text: String, to path: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw TestCertificatesError(description: "TestCertificates: cannot write \(path): \(error)")
        }
    }

    /// Runs /usr/bin/openssl with `arguments` in `dir`; throws with its output if it fails.
    private static func openssl(_ arguments: [String], in dir: String) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["OPENSSL_CONF"] = dir + "/openssl.cnf"
        let process: ChildProcess
        do {
            process = try ChildProcess(
                opensslPath, arguments, environment: environment, directory: dir, stdout: .pipe, stderr: .sameAsStdout)
        } catch {
            throw TestCertificatesError(description: "TestCertificates: cannot run \(opensslPath): \(error)")
        }
        let output = ChildProcess.readAll(process.stdoutFD)
        let status = process.waitForExit()
        guard status == 0 else {
            let text = String(decoding: output, as: UTF8.self)
            throw TestCertificatesError(description: """
                TestCertificates: `openssl \(arguments.joined(separator: " "))` failed (status \(status)):
                \(text)
                """)
        }
    }

    private static func certificateFile(_ certificatePath: String, key keyPath: String) throws -> CertificateFile {
        let pem: String
        do {
            pem = try String(contentsOfFile: certificatePath, encoding: .utf8)
        } catch {
            throw TestCertificatesError(description: "TestCertificates: cannot read \(certificatePath): \(error)")
        }
        guard let der = TestCertificateDER.firstCertificate(inPEM: pem),
              let spki = TestCertificateDER.subjectPublicKeyInfo(ofCertificate: der) else {
            throw TestCertificatesError(description: "TestCertificates: cannot parse \(certificatePath)")
        }
        return CertificateFile(certificatePath: certificatePath, keyPath: keyPath,
                               spkiSHA256: TestCertificateSHA256.hash(spki))
    }
}

// MARK: - Minimal DER walking (certificate -> SubjectPublicKeyInfo)

private enum TestCertificateDER {
    /// The DER bytes of the first CERTIFICATE block of a PEM text.
    static func firstCertificate(inPEM pem: String) -> [UInt8]? {
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        guard let start = pem.range(of: begin),
              let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex) else { return nil }
        let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: String(body)) else { return nil }
        return [UInt8](data)
    }

    /// One TLV at `offset`: (tag, offset of contents, length of contents).
    private static func element(_ b: [UInt8], at offset: Int) -> (tag: UInt8, body: Int, length: Int)? {
        guard offset + 2 <= b.count else { return nil }
        let tag = b[offset]
        let first = Int(b[offset + 1])
        var body = offset + 2
        var length = first
        if first >= 0x80 {
            let count = first & 0x7F
            guard count >= 1, count <= 4, body + count <= b.count else { return nil }
            length = 0
            for i in 0..<count { length = (length << 8) | Int(b[body + i]) }
            body += count
        }
        guard length >= 0, body + length <= b.count else { return nil }
        return (tag, body, length)
    }

    /// The full DER TLV of the subjectPublicKeyInfo in a DER X.509 certificate.
    static func subjectPublicKeyInfo(ofCertificate b: [UInt8]) -> [UInt8]? {
        guard let cert = element(b, at: 0), cert.tag == 0x30,
              let tbs = element(b, at: cert.body), tbs.tag == 0x30 else { return nil }
        var offset = tbs.body
        // version [0] EXPLICIT (optional), serialNumber, signature, issuer, validity, subject
        if let version = element(b, at: offset), version.tag == 0xA0 {
            offset = version.body + version.length
        }
        for expected: UInt8 in [0x02, 0x30, 0x30, 0x30, 0x30] {
            guard let field = element(b, at: offset), field.tag == expected else { return nil }
            offset = field.body + field.length
        }
        guard let spki = element(b, at: offset), spki.tag == 0x30 else { return nil }
        return Array(b[offset..<(spki.body + spki.length)])
    }
}

// MARK: - SHA-256 (FIPS 180-4), enough for SPKI pins

private enum TestCertificateSHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }

    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                           0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var data = message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for i in (0..<8).reversed() { data.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }

        var w = [UInt32](repeating: 0, count: 64)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let j = chunk + i * 4
                w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<64 {
                let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d
            h[4] = h[4] &+ e; h[5] = h[5] &+ f; h[6] = h[6] &+ g; h[7] = h[7] &+ hh
        }
        return h.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - UInt32($0) * 8)) } }
    }
}
