internal import COpenSSL

/// A password's stored form: scrypt (memory-hard, RFC 7914) from the system's OpenSSL, with its parameters and salt
/// kept in the text, so that stronger parameters can be set later while old hashes still verify (and are upgraded
/// at the next sign-in, ``needsUpgrade``).
///
/// Text form: `$scrypt$ln=15,r=8,p=1$<salt>$<key>` (salt 16 bytes, key 32 bytes, both standard Base64), where
/// N = 2^ln. The default costs 32 MiB and about 50–100 ms per hash on one core.
public struct PasswordHash: Sendable, Hashable, CustomStringConvertible {
    /// scrypt's cost parameters.
    public struct Parameters: Sendable, Hashable {
        /// log2 of N, the CPU/memory cost.
        public var logN: Int
        /// The block size.
        public var r: Int
        /// Parallelism.
        public var p: Int

        public init(logN: Int, r: Int, p: Int) {
            self.logN = logN
            self.r = r
            self.p = p
        }

        /// N = 2^15, r = 8, p = 1: 32 MiB (OWASP's minimum for scrypt is N = 2^17 with r = 8, p = 1 at 128 MiB; we
        /// choose a quarter of that so that a 2-core node can verify several sign-ins a second).
        public static let standard = Parameters(logN: 15, r: 8, p: 1)

        /// Memory scrypt needs with these parameters (128 · N · r · p bytes, plus its working space).
        var memory: UInt64 { 128 * (UInt64(1) << UInt64(logN)) * UInt64(r) * UInt64(p) + 128 * UInt64(r) * 256 }

        /// Parameters a stored hash may carry: bounded, so a tampered row cannot make the node allocate gigabytes.
        var isAcceptable: Bool { (10...20).contains(logN) && (1...32).contains(r) && (1...16).contains(p) }
    }

    public let parameters: Parameters
    package let salt: [UInt8]
    package let key: [UInt8]

    /// The stored text.
    public var description: String {
        "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Base64.encode(salt))$\(Base64.encode(key))"
    }

    /// Hashes `password` with a fresh random salt. Takes tens of milliseconds: not on an event loop.
    public static func make(password: String, parameters: Parameters = .standard) throws(PasswordHashError) -> PasswordHash {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let key = try derive(password: password, salt: salt, parameters: parameters)
        return PasswordHash(parameters: parameters, salt: salt, key: key)
    }

    /// Reads a stored hash; nil when `text` is not one this code can verify.
    public init?(_ text: String) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else { return nil }
        var values: [String: Int] = [:]
        for item in parts[2].split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1]) else { return nil }
            values[String(pair[0])] = value
        }
        guard let logN = values["ln"], let r = values["r"], let p = values["p"], values.count == 3,
            let salt = Base64.decode(String(parts[3])), let key = Base64.decode(String(parts[4])),
            (8...64).contains(salt.count), (16...64).contains(key.count)
        else { return nil }
        let parameters = Parameters(logN: logN, r: r, p: p)
        guard parameters.isAcceptable else { return nil }
        self.init(parameters: parameters, salt: salt, key: key)
    }

    private init(parameters: Parameters, salt: [UInt8], key: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.key = key
    }

    /// Whether `password` is the one hashed; compares in constant time. Takes as long as ``make(password:parameters:)``.
    public func verify(_ password: String) -> Bool {
        guard let candidate = try? Self.derive(password: password, salt: salt, parameters: parameters, length: key.count)
        else { return false }
        return ConstantTime.equal(candidate, key)
    }

    /// HMAC-SHA256 (RFC 2104) of `message` keyed by this hash's derived key: a proof that whoever made it could read
    /// the stored hash (the node), which no one can make without it, and which a new password (a new salt and key)
    /// invalidates. Cheap (two SHA-256): it costs nothing like checking a password.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        SHA256.authenticationCode(key: key, message: message)
    }

    /// Whether this hash was made with weaker parameters than `parameters`: re-hash the password after a sign-in.
    public func needsUpgrade(to parameters: Parameters = .standard) -> Bool {
        self.parameters.logN < parameters.logN || self.parameters.r < parameters.r || self.parameters.p < parameters.p
    }

    private static func derive(
        password: String, salt: [UInt8], parameters: Parameters, length: Int = 32
    ) throws(PasswordHashError) -> [UInt8] {
        guard parameters.isAcceptable else {
            throw PasswordHashError(
                .invalidParameters, "scrypt parameters ln=\(parameters.logN) r=\(parameters.r) p=\(parameters.p) are out of range")
        }
        var key = [UInt8](repeating: 0, count: length)
        // A terminating NUL keeps the pointer valid for an empty password; it is not part of the length.
        let password = Array(password.utf8) + [0]
        let ok = password.withUnsafeBufferPointer { passwordBytes in
            salt.withUnsafeBufferPointer { saltBytes in
                passwordBytes.withMemoryRebound(to: CChar.self) { passwordChars in
                    EVP_PBE_scrypt(
                        passwordChars.baseAddress, passwordBytes.count - 1, saltBytes.baseAddress, saltBytes.count,
                        UInt64(1) << UInt64(parameters.logN), UInt64(parameters.r), UInt64(parameters.p),
                        parameters.memory + (1 << 20), &key, length)
                }
            }
        }
        guard ok == 1 else { throw PasswordHashError(.openSSL, "scrypt failed in OpenSSL (out of memory?)") }
        return key
    }
}
