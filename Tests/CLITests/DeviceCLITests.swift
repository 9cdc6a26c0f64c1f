import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-device` run as a program against a real `rsup-supporter serve` on loopback.
@Suite("rsup-device", .serialized)
struct DeviceCLITests {
    static let someCode = "123-456-789"

    @Test("--help exits 0 and prints usage", arguments: [["--help"], ["-h"], ["help"], ["connect", "--help"]])
    func helpExitsZero(arguments: [String]) async throws {
        let result = try await runCommand(Binaries.device, arguments)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdout.first?.hasPrefix("usage: rsup-device") == true, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    @Test(
        "an unknown command or option, or a missing one, is a usage error: exit 2",
        arguments: [
            ([], "no command"), (["bogus"], "unknown command 'bogus'"),
            (["connect", "127.0.0.1", "--bogus"], "unknown option --bogus"),
            (["connect", "--code", someCode, "--token", "t", "--ca", "x"], "HOST[:PORT]"),
            (["connect", "127.0.0.1", "--token", "t", "--ca", "x"], "--code is required"),
            (["connect", "127.0.0.1", "--code", someCode, "--ca", "x"], "--token is required"),
            (["connect", "127.0.0.1", "--code", someCode, "--token", "t"], "--ca FILE or --pin PIN"),
            (["connect", "127.0.0.1:99999", "--code", someCode, "--token", "t", "--ca", "x"], "port"),
            (["connect", "127.0.0.1", "--code", someCode, "--token", "t", "--pin", "sha256/xx"], "not valid base64"),
            (
                ["connect", "127.0.0.1", "--code", someCode, "--token", "t", "--ca", "x", "--auto-accept",
                 "--auto-reject"], "exclude each other"
            ),
        ])
    func usageErrorsExitTwo(arguments: [String], words: String) async throws {
        let result = try await runCommand(Binaries.device, arguments)
        expectError(result, exitCode: 2, mentions: [words])
    }

    @Test(
        "a malformed session code is a usage error, exit 2",
        arguments: ["12", "123456789", "abc-def-ghi", "123-456-7890", "123_456_789"])
    func wrongCodeFormat(code: String) async throws {
        let result = try await device("connect", "127.0.0.1:1", "--code", code, "--token", "t", "--ca", "/dev/null")
        expectError(result, exitCode: 2, mentions: ["'\(code)' is not a session code", "123-456-789"])
    }

    @Test("connect --media-file hands its bytes to the app in SESSION_STARTED; a file over 4096 bytes is refused")
    func aMediaDescriptorReachesTheApp() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            let device = try server.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath], extra: ["--auto-accept"])
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try #require(await server.waitForEvent("device_online", code: code), "\(server.process.transcript)")
            let folder = try TemporaryFolder()
            let tooBig = folder.file("too-big")
            try Data(repeating: 7, count: 4_097).write(to: URL(fileURLWithPath: tooBig))
            let refused = try? await server.connect(code, extra: ["--media-file", tooBig])
            #expect(refused == nil, "a 4097-byte descriptor must be refused: \(String(describing: refused))")
            let media = folder.file("media")
            try Data("room=42;token=short-lived".utf8).write(to: URL(fileURLWithPath: media))
            _ = try await server.connect(code, extra: ["--media-file", media])
            let connected = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
            #expect(connected["media_descriptor_bytes"] as? Int == 25, "\(connected)")
            #expect(!server.process.transcript.contains("room=42"), "the descriptor is never logged")
            device.signal(SIGINT)
            _ = await device.waitForExit()
        }
    }

    @Test("a missing CA file is named, exit 1")
    func missingCAFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let missing = folder.file("missing-ca.pem")
        let result = try await device("connect", "127.0.0.1:1", "--code", Self.someCode, "--token", "t", "--ca", missing)
        expectError(result, exitCode: 1, mentions: [missing, "No such file", "check the path"])
    }

    @Test("a CA file without a certificate says so, exit 1")
    func garbageCAFile() async throws {
        try await withCertificates { certificates in
            let result = try await device(
                "connect", "127.0.0.1:1", "--code", Self.someCode, "--token", "t", "--ca", certificates.garbagePEMPath)
            expectError(result, exitCode: 1, mentions: [certificates.garbagePEMPath, "PEM"])
        }
    }

    @Test("a missing client key file is named, exit 1")
    func missingClientKey() async throws {
        try await withCertificates { certificates in
            let missing = certificates.directory + "/missing-client.key"
            let result = try await device(
                "connect", "127.0.0.1:1", "--code", Self.someCode, "--token", "t", "--ca", certificates.caPath,
                "--cert", certificates.client.certificatePath, "--key", missing)
            expectError(result, exitCode: 1, mentions: [missing, "No such file"])
        }
    }

    @Test("a client key not matching the client certificate is refused, exit 1")
    func clientKeyNotMatchingCertificate() async throws {
        try await withCertificates { certificates in
            let result = try await device(
                "connect", "127.0.0.1:1", "--code", Self.someCode, "--token", "t", "--ca", certificates.caPath,
                "--cert", certificates.client.certificatePath, "--key", certificates.mismatchedKeyPath)
            expectError(
                result, exitCode: 1, mentions: [certificates.mismatchedKeyPath, "does not match the certificate"])
        }
    }

    @Test("nothing listening: 'is the supporter node running?', exit 1")
    func supporterNotRunning() async throws {
        try await withCertificates { certificates in
            let address = "127.0.0.1:\(freeLoopbackPort())"
            let result = try await device(
                "connect", address, "--code", Self.someCode, "--token", "t", "--ca", certificates.caPath)
            expectError(result, exitCode: 1, mentions: [address, "is the supporter node running?"])
        }
    }

    @Test("an unreachable host: says so and what to check, exit 1")
    func hostUnreachable() async throws {
        try await withCertificates { certificates in
            // TCP to a multicast address fails at once with ENETUNREACH on Linux: no routing needed, no waiting.
            let result = try await device(
                "connect", "224.0.0.1:7443", "--code", Self.someCode, "--token", "t", "--ca", certificates.caPath)
            expectError(result, exitCode: 1, mentions: ["224.0.0.1:7443", "unreachable", "check the address"])
        }
    }

    @Test("a wrong API token: 'the API token was refused', exit 1")
    func wrongToken() async throws {
        try await withSupporter { certificates, server in
            let code = try await server.createCode()
            let device = try server.startDevice(code: code, token: "rsk_not-a-token", trust: ["--ca", certificates.caPath])
            let exit = await device.waitForExit()
            expectError(
                CommandResult(exitCode: exit, stdout: device.stdoutLines, stderr: device.stderrLines,
                              transcript: device.transcript),
                exitCode: 1, mentions: ["API token was refused"])
            #expect(device.events.last?["event"] as? String == "error", "\(device.transcript)")
        }
    }

    @Test("a code the node does not know: says so, exit 1")
    func unknownCode() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let result = try await device(
                "connect", server.address, "--code", Self.someCode, "--token", token, "--ca", certificates.caPath)
            expectError(result, exitCode: 1, mentions: ["session code is not known", "check the code"])
        }
    }

    enum TLSCase: String, CaseIterable, Sendable {
        case untrustedCA, otherCAServer, selfSignedServer, wrongHostName, wrongHostCertificate, expired, pinMismatch
    }

    @Test("a TLS failure names which one, exit 1", arguments: TLSCase.allCases)
    func tlsFailure(_ failure: TLSCase) async throws {
        if failure == .expired {
            // The supporter node refuses to serve an expired certificate (see serveRefusesAnExpiredCertificate), so
            // the device meets one on a plain openssl s_server.
            try await withCertificates { certificates in
                let server = try await ExpiredCertificateServer(certificate: certificates.serverExpired)
                defer { server.stop() }
                let result = try await runCommand(
                    Binaries.device,
                    ["connect", server.address, "--code", Self.someCode, "--token", "t", "--json", "--ca",
                     certificates.caPath])
                expectError(result, exitCode: 1, mentions: ["TLS", "expired", server.address])
            }
            return
        }
        let serverCertificate: (TestCertificates) -> CertificateFile =
            switch failure {
            case .otherCAServer: { $0.serverOtherCA }
            case .selfSignedServer: { $0.selfSigned }
            case .wrongHostCertificate: { $0.serverWrongHost }
            case .expired: { $0.serverExpired }
            default: { $0.server }
            }
        try await withSupporter(certificate: serverCertificate) { certificates, server in
            let trust: [String]
            let words: [String]
            switch failure {
            case .untrustedCA:
                trust = ["--ca", certificates.otherCAPath]
                words = ["TLS", "not trusted", "--ca"]
            case .otherCAServer, .selfSignedServer:
                trust = ["--ca", certificates.caPath]
                words = ["TLS", "not trusted", "--ca"]
            case .wrongHostName:
                trust = ["--ca", certificates.caPath, "--server-name", "wrong.example"]
                words = ["TLS", "not for this host name"]
            case .wrongHostCertificate:
                trust = ["--ca", certificates.caPath]
                words = ["TLS", "not for this host name"]
            case .expired:
                trust = ["--ca", certificates.caPath]
                words = ["TLS", "expired"]
            case .pinMismatch:
                trust = ["--pin", pin(certificates.selfSigned)]
                words = ["TLS", "pin mismatch", "pin is wrong"]
            }
            let result = try await runCommand(
                Binaries.device,
                ["connect", server.address, "--code", Self.someCode, "--token", "t", "--json"] + trust)
            expectError(result, exitCode: 1, mentions: words + [server.address])
            for line in result.stdout {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
            }
        }
    }

    @Test("serve refuses an expired certificate, saying when it expired")
    func serveRefusesAnExpiredCertificate() async throws {
        try await withCertificates { certificates in
            let folder = NSTemporaryDirectory() + "rsup-expired-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let result = try await runCommand(
                Binaries.supporter,
                ["serve", "--listen", "127.0.0.1:0", "--cert", certificates.serverExpired.certificatePath, "--key",
                 certificates.serverExpired.keyPath, "--data", folder, "--non-interactive"])
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.stderr.joined().contains("expired"), "\(result)")
        }
    }

    @Test("the right pin is enough to trust the node")
    func rightPinConnects() async throws {
        try await withSupporter(certificate: { $0.selfSigned }) { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            let device = try server.startDevice(code: code, token: token, trust: ["--pin", pin(certificates.selfSigned)])
            #expect(await device.waitForEvent("online") != nil, "\(device.transcript)")
            device.signal(SIGINT)
            #expect(await device.waitForExit() == 0, "\(device.transcript)")
        }
    }

    enum DeviceState: String, CaseIterable, Sendable { case waitingOnline, requestPending, sessionActive }

    @Test(
        "Ctrl-C leaves cleanly in every state: exit 0, the supporter sees ended_by_device",
        arguments: DeviceState.allCases)
    func ctrlCLeaves(in state: DeviceState) async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            // Without --auto-accept the request waits for an answer on stdin, which stays open and silent.
            let device = try server.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath],
                extra: state == .sessionActive ? ["--auto-accept"] : [], keepStdinOpen: state == .requestPending)
            _ = try #require(await device.waitForEvent("online"), "\(device.transcript)")
            _ = try #require(await server.waitForEvent("device_online", code: code), "\(server.process.transcript)")
            switch state {
            case .waitingOnline:
                break
            case .requestPending:
                _ = try await server.connect(code)
                _ = try #require(await device.waitForEvent("request"), "\(device.transcript)")
            case .sessionActive:
                _ = try await server.connect(code)
                _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
                _ = try #require(await server.waitForEvent("connected", code: code), "\(server.process.transcript)")
            }

            device.signal(SIGINT)
            #expect(await device.waitForExit() == 0, "\(device.transcript)")
            #expect(device.stderrLines.isEmpty, "\(device.transcript)")
            let left = device.events.last
            #expect(left?["event"] as? String == "disconnected", "\(device.transcript)")
            #expect(left?["reason"] as? String == "ended_by_device", "\(device.transcript)")

            let ended = await server.waitForEvent("ended", code: code)
            #expect(ended?["reason"] as? String == "ended_by_device", "\(server.process.transcript)")
            // The node goes on serving: the code's state is back to open for a new device.
            let list = try await server.control(["list"])
            let codes = list["codes"] as? [[String: Any]] ?? []
            #expect(codes.contains { $0["code"] as? String == code }, "\(list)")
        }
    }
}

extension DeviceCLITests {
    /// Ctrl-C on an active device once sent SESSION_END and then, now and then, let the program exit before the
    /// GOAWAY and close_notify left: the supporter node saw TCP drop. Each run here must end cleanly on the supporter
    /// side: `ended_by_device`, the device's GOAWAY, and TLS closed with close_notify. With the device pinned to one
    /// CPU the old code failed 4 to 6 runs of 100.
    @Test("Ctrl-C on an active session always closes cleanly: GOAWAY and close_notify reach the supporter (100 runs)")
    func ctrlCOnAnActiveSessionAlwaysClosesCleanly() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(certificate: certificates.server, extra: ["--log-level", "debug"])
            do {
                let token = try await server.issueToken()
                let code = try await server.createCode()
                for run in 1...100 {
                    try await Self.leaveActiveSessionWithCtrlC(
                        run: run, server: server, code: code, token: token, caPath: certificates.caPath)
                }
                await server.close()
            } catch {
                await server.close()
                throw error
            }
        }
    }

    /// One run: join with --auto-accept, get connected, Ctrl-C, and check what the supporter node saw.
    private static func leaveActiveSessionWithCtrlC(
        run: Int, server: SupporterServer, code: String, token: String, caPath: String
    ) async throws {
        func count(_ event: String, reason: String? = nil) -> Int {
            server.process.stdoutLines.filter { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    return false
                }
                return object["event"] as? String == event && object["code"] as? String == code
                    && (reason == nil || object["reason"] as? String == reason)
            }.count
        }
        func until(_ what: String, _ condition: @escaping () -> Bool) async throws {
            guard await waitUntil(timeout: patience, condition) else {
                throw HarnessError("run \(run): no \(what)\n\(server.process.transcript)")
            }
        }
        var disconnects: [String] {
            server.process.stderrLines.filter { $0.contains("device at ") && $0.contains(" disconnected: ") }
        }
        // On one CPU the loop thread, which sends the GOAWAY and close_notify, competes with the threads that end the
        // program: the race shows up far more often than on an idle machine with many cores.
        let device = try CLIProcess(
            "/usr/bin/taskset",
            ["-c", "0", Binaries.device, "connect", server.address, "--code", code, "--token", token, "--name",
             "cli-test-device", "--json", "--ca", caPath, "--auto-accept"])
        defer { Task { await device.stop() } }
        _ = try #require(await device.waitForEvent("online"), "run \(run)\n\(device.transcript)")
        try await until("device_online") { count("device_online") >= run }
        _ = try await server.connect(code)
        _ = try #require(await device.waitForEvent("connected"), "run \(run)\n\(device.transcript)")
        try await until("connected") { count("connected") >= run }

        device.signal(SIGINT)
        #expect(await device.waitForExit() == 0, "run \(run)\n\(device.transcript)")
        try await until("ended") { count("ended") >= run }
        #expect(count("ended", reason: "ended_by_device") == run, "run \(run)\n\(server.process.transcript)")
        #expect(count("ended", reason: "connection_lost") == 0, "run \(run)")
        try await until("the link's close") { disconnects.count >= run }
        let line = disconnects.last ?? ""
        #expect(line.contains("the peer went away (normal_close)"), "run \(run): \(line)")
        #expect(line.hasSuffix("; TLS closed cleanly"), "run \(run): \(line)")
    }
}

/// `openssl s_server` with ALPN `rsup/1` on a free loopback port: a TLS peer outside our stack.
final class ExpiredCertificateServer: Sendable {
    let process: ChildProcess
    let address: String

    init(certificate: CertificateFile) async throws {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var bound = sockaddr_in()
        bound.sin_family = sa_family_t(AF_INET)
        bound.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
        }
        close(probe)
        let port = UInt16(bigEndian: bound.sin_port)
        address = "127.0.0.1:\(port)"
        process = try ChildProcess(
            TestCertificates.opensslPath,
            ["s_server", "-accept", address, "-cert", certificate.certificatePath, "-key", certificate.keyPath, "-quiet",
             "-alpn", "rsup/1"], stdin: .pipe)
        // s_server says nothing when it listens (-quiet): it is ready once a connect succeeds.
        let target = bound
        _ = await waitUntil {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(client) }
            var address = target
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0
        }
    }

    func stop() {
        process.signal(SIGKILL)
        process.closeStdin()
    }
}
