import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// Tokens from a file (`serve --api-token-file`, `connect --token-file`), the minimum length of `serve --api-token`,
/// and the help texts that steer people away from tokens on the command line.
@Suite("token options", .serialized)
struct TokenFileTests {
    static let someCode = "123-456-789"
    /// Long enough for `serve --api-token` (24 characters at least).
    static let longToken = "rsk_test_0123456789abcdefghij"

    /// Writes `text` to `name` in `folder` with `mode`, and returns the path.
    static func write(_ text: String, _ name: String, in folder: TemporaryFolder, mode: Int = 0o600) throws -> String {
        let path = folder.file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    @Test(
        "--help says a token on the command line shows in ps and names the file option",
        arguments: [
            (Binaries.supporter, ["serve", "--help"], "--api-token-file"),
            (Binaries.device, ["connect", "--help"], "--token-file"),
        ])
    func helpRecommendsTheFile(executable: String, arguments: [String], option: String) async throws {
        let result = try await runCommand(executable, arguments)
        #expect(result.exitCode == 0, "\(result)")
        let text = result.stdout.joined(separator: "\n")
        #expect(text.contains("'ps'") && text.contains("prefer \(option)"), "\(result)")
    }

    @Test("serve refuses an --api-token shorter than 24 characters with a usage error naming the minimum")
    func serveRefusesAShortToken() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let result = try await supporter(
            "serve", "--cert", "c.pem", "--key", "k.pem", "--data", folder.file("data"), "--api-token",
            String(Self.longToken.prefix(23)))
        expectError(result, exitCode: 2, mentions: ["--api-token", "at least 24 characters", "has 23"])
        #expect(!FileManager.default.fileExists(atPath: folder.file("data")), "nothing is created before the check")
    }

    @Test("serve refuses a short token in --api-token-file too")
    func serveRefusesAShortTokenFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = try Self.write("short-token\n", "token", in: folder)
        let result = try await supporter(
            "serve", "--cert", "c.pem", "--key", "k.pem", "--data", folder.file("data"), "--api-token-file", path)
        expectError(result, exitCode: 2, mentions: ["--api-token-file", "at least 24 characters"])
    }

    @Test(
        "a token on the command line and in a file at once is a usage error",
        arguments: [
            (
                Binaries.supporter,
                ["serve", "--cert", "c", "--key", "k", "--api-token", longToken, "--api-token-file", "f"],
                "give --api-token or --api-token-file, not both"
            ),
            (
                Binaries.device,
                ["connect", "127.0.0.1", "--code", someCode, "--token", "t", "--token-file", "f", "--ca", "x"],
                "give --token or --token-file, not both"
            ),
        ])
    func bothFormsAreAUsageError(executable: String, arguments: [String], words: String) async throws {
        let result = try await runCommand(executable, arguments)
        expectError(result, exitCode: 2, mentions: [words])
    }

    @Test("a missing token file is named, exit 1")
    func missingTokenFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let missing = folder.file("missing-token")
        let result = try await device(
            "connect", "127.0.0.1:1", "--code", Self.someCode, "--token-file", missing, "--ca", "/dev/null")
        expectError(result, exitCode: 1, mentions: [missing, "No such file", "--token-file"])
    }

    @Test("a token file whose first line is blank is refused, exit 1", arguments: ["", "\n", "   \nrsk_second_line\n"])
    func blankTokenFile(contents: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = try Self.write(contents, "token", in: folder)
        let result = try await device(
            "connect", "127.0.0.1:1", "--code", Self.someCode, "--token-file", path, "--ca", "/dev/null")
        expectError(result, exitCode: 1, mentions: [path, "holds no token on its first line"])
    }

    @Test("serve --api-token-file and connect --token-file: the first line, trimmed, is the token")
    func tokenFilesAreUsed() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let serverFile = try Self.write("  \(Self.longToken)  \r\nignored second line\n", "api-token", in: folder)
            let server = try await SupporterServer(
                certificate: certificates.server, extra: ["--api-token-file", serverFile])
            do {
                let code = try await server.createCode()
                // The token the node took from its file, given to the device in a file of its own.
                let deviceFile = try Self.write("\(Self.longToken)\n", "device-token", in: folder)
                let device = try CLIProcess(
                    Binaries.device,
                    [
                        "connect", server.address, "--code", code, "--token-file", deviceFile, "--json",
                        "--auto-reject", "--ca", certificates.caPath,
                    ])
                let online = await device.waitForEvent("online")
                #expect(online != nil, "\(device.transcript)\n\(server.process.transcript)")
                #expect(device.stderrLines.isEmpty, "no warning for a private file: \(device.stderrLines)")
                await device.stop()
                await server.close()
            } catch {
                await server.close()
                throw error
            }
        }
    }

    @Test("a token file other users can read is used, with a warning that says how to make it private")
    func readableTokenFileWarns() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            let path = try Self.write(token + "\n", "token", in: server.folder, mode: 0o644)
            let device = try CLIProcess(
                Binaries.device,
                [
                    "connect", server.address, "--code", code, "--token-file", path, "--json", "--auto-reject",
                    "--ca", certificates.caPath,
                ])
            let online = await device.waitForEvent("online")
            #expect(online != nil, "\(device.transcript)")
            await device.stop()
            let warning = device.stderrLines.first
            #expect(warning?.hasPrefix("warning: the token file \(path) can be read by other users (mode 644)") == true,
                "\(device.transcript)")
            #expect(warning?.contains("chmod 600 \(path)") == true, "\(device.transcript)")
        }
    }
}
