import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-supporter` run as a program: help, usage errors, the errors a person hits, JSON output, Ctrl-C.
@Suite("rsup-supporter", .serialized)
struct SupporterCLITests {
    @Test(
        "--help on every command exits 0 and prints usage",
        arguments: [
            ["--help"], ["help"], ["serve", "--help"], ["create", "--help"], ["list", "--help"], ["connect", "--help"],
            ["cancel", "--help"], ["end", "--help"], ["close", "--help"], ["token", "--help"], ["token", "list", "--help"],
        ])
    func helpExitsZero(arguments: [String]) async throws {
        let result = try await runCommand(Binaries.supporter, arguments)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdout.first?.hasPrefix("usage: rsup-supporter") == true, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    @Test(
        "an unknown command or option is a usage error: exit 2",
        arguments: [
            (["bogus"], "unknown command 'bogus'"), (["serve", "--bogus"], "unknown option --bogus"),
            (["list", "--bogus"], "unknown option --bogus"), (["serve", "--json=yes"], "--json takes no value"),
            (["connect", "--code"], "--code needs a value"), (["serve", "--cert", "a.pem"], "--key is required"),
            (["serve", "--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2"], "--listen is given twice"),
            (["token", "--scope", "root"], "--scope 'root': say device or admin"),
            (["serve", "--cert", "a.pem", "--key", "a.key", "--keepalive", "1ms"], "--keepalive takes 1s to 120s"),
            (["audit", "--from", "yesterday"], "RFC 3339"),
        ])
    func unknownCommandOrOptionExitsTwo(arguments: [String], words: String) async throws {
        let result = try await runCommand(Binaries.supporter, arguments)
        expectError(result, exitCode: 2, mentions: [words])
    }

    @Test("no command at all: usage on stderr, exit 2")
    func noCommandExitsTwo() async throws {
        let result = try await supporter()
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.first?.hasPrefix("usage: rsup-supporter") == true, "\(result)")
    }

    @Test("a missing certificate file is named, exit 1")
    func missingCertificate() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let missing = folder.file("missing.pem")
            let result = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"),
                "--cert", missing, "--key", certificates.server.keyPath)
            expectError(result, exitCode: 1, mentions: [missing, "No such file", "check the path"])
        }
    }

    @Test("a missing key file is named, exit 1")
    func missingKey() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let missing = folder.file("missing.key")
            let result = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"),
                "--cert", certificates.server.certificatePath, "--key", missing)
            expectError(result, exitCode: 1, mentions: [missing, "No such file"])
        }
    }

    @Test("a certificate file that is a folder is unreadable, exit 1")
    func unreadableCertificate() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            // A folder cannot be read as a file, even by root (who reads files of any mode).
            let result = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"),
                "--cert", folder.path, "--key", certificates.server.keyPath)
            expectError(result, exitCode: 1, mentions: [folder.path])
        }
    }

    @Test("a certificate file that is not PEM says so, exit 1")
    func garbageCertificate() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let result = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"),
                "--cert", certificates.garbagePEMPath, "--key", certificates.server.keyPath)
            expectError(result, exitCode: 1, mentions: [certificates.garbagePEMPath, "PEM"])
        }
    }

    @Test("a key that does not belong to the certificate is refused, exit 1")
    func keyNotMatchingCertificate() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let result = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--non-interactive", "--data", folder.file("data"),
                "--cert", certificates.server.certificatePath, "--key", certificates.mismatchedKeyPath)
            expectError(
                result, exitCode: 1,
                mentions: [certificates.mismatchedKeyPath, "does not match the certificate", "give the key"])
        }
    }

    @Test("a port another node listens on: 'address … already in use', exit 1")
    func addressInUse() async throws {
        try await withSupporter { certificates, server in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let result = try await supporter(
                "serve", "--listen", server.address, "--non-interactive", "--data", folder.file("data"),
                "--cert", certificates.server.certificatePath, "--key", certificates.server.keyPath)
            expectError(result, exitCode: 1, mentions: [server.address, "already in use"])
        }
    }

    @Test(
        "a control command without a running node says to start one, exit 1",
        arguments: [["list"], ["create"], ["token"], ["end", "--code", "123-456-789"]])
    func nodeNotRunning(arguments: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let result = try await runCommand(Binaries.supporter, arguments + ["--data", folder.path])
        expectError(result, exitCode: 1, mentions: ["no supporter node is serving", "rsup-supporter serve"])
    }

    @Test(
        "a malformed session code is a usage error, exit 2",
        arguments: [["connect", "--code", "12", "--as", "Alice"], ["end", "--code", "123456789"],
                    ["close", "--code", "abc-def-ghi"], ["cancel", "--code", "123-456-78"]])
    func wrongCodeFormat(arguments: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let result = try await runCommand(Binaries.supporter, arguments + ["--data", folder.path])
        expectError(result, exitCode: 2, mentions: ["is not a session code", "123-456-789"])
    }

    @Test("a well-formed code the node does not know fails with one line, exit 1")
    func unknownCode() async throws {
        try await withSupporter { _, server in
            let result = try await supporter("end", "--code", "123-456-789", "--data", server.data)
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.stderr.count == 1 && result.stderr[0].hasPrefix("error: "), "\(result)")
        }
    }

    @Test("--json output of serve and of the control commands is JSON lines")
    func jsonOutputIsJSONLines() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            for command in [["list"], ["token"], ["create", "--type", "assist"]] {
                let result = try await runCommand(Binaries.supporter, command + ["--data", server.data, "--json"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(!result.stdout.isEmpty)
                for line in result.stdout {
                    #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
                }
            }
            let device = try server.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath], extra: ["--auto-accept"])
            #expect(await server.waitForEvent("device_online", code: code) != nil, "\(server.process.transcript)")
            _ = try await server.connect(code)
            #expect(await server.waitForEvent("connected", code: code) != nil, "\(server.process.transcript)")
            _ = try await server.control(["end", "--code", code])
            #expect(await server.waitForEvent("ended", code: code) != nil, "\(server.process.transcript)")
            #expect(await device.waitForExit() == 0, "\(device.transcript)")
            let events = server.process.events  // records an issue for any line that is not JSON
            #expect(events.count == server.process.stdoutLines.count)
            let listening = try #require(events.first)
            #expect(listening["event"] as? String == "listening")
            #expect(listening["address"] as? String == server.address)
            #expect(device.events.count == device.stdoutLines.count, "\(device.transcript)")
        }
    }

    @Test("Ctrl-C stops serve with exit 0; a connected device is told to resume, keeps its session and waits")
    func ctrlCStopsServe() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            let device = try server.startDevice(
                code: code, token: token, trust: ["--ca", certificates.caPath], extra: ["--auto-accept"])
            _ = try #require(await server.waitForEvent("device_online", code: code), "\(server.process.transcript)")
            _ = try await server.connect(code)
            _ = try #require(await device.waitForEvent("connected"), "\(device.transcript)")
            _ = try #require(await server.waitForEvent("connected", code: code))

            server.process.signal(SIGINT)
            #expect(await server.process.waitForExit() == 0, "\(server.process.transcript)")
            let stopping = await server.process.waitForEvent("stopping")
            #expect(stopping?["hands_over"] as? Bool == true, "\(server.process.transcript)")
            // Handed over (to this node's next process), not ended: no "ended" event, no going_away.
            #expect(
                !server.process.events.contains { $0["event"] as? String == "ended" }, "\(server.process.transcript)")
            // Log lines of level warning may come and go with timing; an error may not.
            #expect(!server.process.stderrLines.contains { $0.hasPrefix("error:") || $0.contains(" error ") },
                    "\(server.process.transcript)")

            _ = try #require(await device.waitForEvent("reconnecting"), "\(device.transcript)")
            #expect(!device.events.contains { $0["event"] as? String == "disconnected" }, "\(device.transcript)")
            #expect(device.exitStatus == nil, "\(device.transcript)")
            #expect(!FileManager.default.fileExists(atPath: server.data + "/control.sock"))
        }
    }

    @Test("Ctrl-C stops an idle serve with exit 0")
    func ctrlCStopsIdleServe() async throws {
        try await withSupporter { _, server in
            server.process.signal(SIGINT)
            #expect(await server.process.waitForExit() == 0, "\(server.process.transcript)")
            #expect(server.process.stderrLines.isEmpty, "\(server.process.transcript)")
        }
    }
}
