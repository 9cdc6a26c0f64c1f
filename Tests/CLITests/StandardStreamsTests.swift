import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// What the programs do when their standard output is gone (a closed pipe, a full disk), and when a second node is
/// started on a data folder that one serves already: one clear error, never a crash, never a second node.
@Suite("standard streams and the data folder lock", .serialized)
struct StandardStreamsTests {
    /// Runs `arguments` with its standard output on a pipe whose reader has already gone away (the read end closed
    /// before the program starts, so its first write fails whatever the timing) or on /dev/full; its exit status and
    /// standard error.
    static func withLostOutput(_ arguments: [String], into sink: String) async throws -> (status: Int32?, stderr: [String]) {
        let command = [Binaries.supporter] + arguments
        let result: CommandResult
        if sink == "pipe" {
            let script = """
                import os, subprocess, sys
                reader, writer = os.pipe()
                os.close(reader)
                status = subprocess.call(sys.argv[1:], stdout=writer)
                print("status", status if status >= 0 else 128 - status, file=sys.stderr, flush=True)
                """
            result = try await runCommand("/usr/bin/env", ["python3", "-c", script] + command)
        } else {
            let quoted = command.map { "'\($0)'" }.joined(separator: " ")
            result = try await runCommand("/bin/bash", ["-c", "\(quoted) > \(sink); echo \"status $?\" >&2"])
        }
        let status = result.stderr.last.flatMap { $0.hasPrefix("status ") ? Int32($0.dropFirst(7)) : nil }
        return (status, result.stderr.filter { !$0.hasPrefix("status ") })
    }

    @Test("a token nobody could see is revoked again, and the command fails with one error line")
    func aTokenWrittenNowhereIsRevoked() async throws {
        try await withSupporter { _, server in
            for sink in ["/dev/full", "pipe"] {
                let (status, stderr) = try await Self.withLostOutput(["token", "--data", server.data], into: sink)
                #expect(status == 1, "\(sink): \(stderr)")
                #expect(stderr.last?.hasPrefix("error: cannot write to standard output") == true, "\(sink): \(stderr)")
                #expect(stderr.contains { $0.contains("nobody could see was revoked again") }, "\(sink): \(stderr)")
            }
            let listed = try await supporter("token", "list", "--data", server.data)
            #expect(listed.stdout.count == 2 && listed.stdout.allSatisfy { $0.contains(" revoked ") }, "\(listed)")
        }
    }

    @Test("a second node on a data folder one serves is refused; a command whose output is lost fails, once")
    func aSecondNodeIsRefusedAndLostOutputIsAnError() async throws {
        try await withSupporter { _, server in
            let second = try await supporter(
                "serve", "--listen", "127.0.0.1:0", "--data", server.data, "--non-interactive",
                "--cert", "/nonexistent.pem", "--key", "/nonexistent.key")
            expectError(second, exitCode: 1, mentions: ["another supporter node is serving with this data folder"])
            let created = try await Self.withLostOutput(["create", "--data", server.data], into: "pipe")
            #expect(created.status == 1, "\(created)")
            #expect(created.stderr == ["error: cannot write to standard output (Broken pipe): what it should have shown is lost"])
        }
    }

    @Test("a node whose standard output goes away keeps serving and says so once in its log")
    func aNodeOutlivesItsStandardOutput() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let data = folder.file("data")
            // `| head -1`: the reader goes away after the `listening` line.
            let node = try CLIProcess(
                "/bin/bash",
                [
                    "-c", "\"$0\" \"$@\" 2> '\(folder.file("node.log"))' | head -1", Binaries.supporter, "serve",
                    "--listen", "127.0.0.1:0", "--data", data, "--non-interactive", "--json",
                    "--cert", certificates.server.certificatePath, "--key", certificates.server.keyPath,
                ])
            defer { Task { await node.stop() } }
            let pid = { () -> Int32? in
                (try? String(contentsOfFile: data + "/serve.lock", encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            defer { if let pid = pid() { kill(pid, SIGKILL) } }
            let listening = try #require(await node.waitForLine { $0.contains("\"listening\"") }, "\(node.transcript)")
            let port = try #require(
                (try? JSONSerialization.jsonObject(with: Data(listening.utf8)) as? [String: Any])?["port"] as? Int)
            let token = try #require(try await supporter("token", "--data", data).stdout.first)
            let code = try #require(try await supporter("create", "--data", data).stdout.first?.split(separator: " ").first)
            // The device coming online is an event the node prints, to a reader that is gone.
            let device = try CLIProcess(
                Binaries.device,
                ["connect", "127.0.0.1:\(port)", "--code", String(code), "--token", token, "--ca", certificates.caPath,
                 "--json"])
            defer { Task { await device.stop() } }
            #expect(await device.waitForEvent("online") != nil, "\(device.transcript)")
            func log() -> String { (try? String(contentsOfFile: folder.file("node.log"), encoding: .utf8)) ?? "" }
            // The node tried to print the event (and logged that it cannot) before it is asked anything else.
            _ = await waitUntil { log().contains("standard output cannot be written (Broken pipe)") }
            let listed = try await supporter("list", "--data", data)
            #expect(listed.exitCode == 0 && listed.stdout.first?.contains("online") == true, "the node still answers: \(listed)")
            let log = log()
            #expect(log.components(separatedBy: "standard output cannot be written (Broken pipe)").count == 2, "\(log)")
        }
    }
}
