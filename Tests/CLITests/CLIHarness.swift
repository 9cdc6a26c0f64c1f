import Foundation
import Synchronization
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// How long anything may take on a loaded machine. Waits end early as soon as what they wait for happens.
let patience: Duration = .seconds(60)

/// Where `swift build` put the two programs: next to the test bundle (`swift test`, or running the xctest by hand),
/// else `.build/debug` of this package.
enum Binaries {
    static let directory: URL = {
        var candidates: [URL] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug"))
        return candidates.first {
            FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("rsup-supporter").path)
                && FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("rsup-device").path)
        } ?? package.appendingPathComponent(".build/debug")
    }()

    static var supporter: String { directory.appendingPathComponent("rsup-supporter").path }
    static var device: String { directory.appendingPathComponent("rsup-device").path }
}

/// A temporary folder, deleted by `remove()`.
struct TemporaryFolder: Sendable {
    let path: String

    init() throws {
        // Short: the control socket's path must fit in sun_path (108 bytes).
        path = "/tmp/rsup-cli-" + UUID().uuidString.prefix(8).lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A running program: its output collected line by line from both pipes, its exit awaited with a deadline.
final class CLIProcess: Sendable {
    let name: String
    private let process: ChildProcess
    private let output = Mutex<(stdout: [String], stderr: [String], open: Int)>(([], [], 2))
    /// Bumped at every new line, pipe close and the exit; the waiters of ``wait(timeout:until:)`` wake at each.
    private let changes = Mutex<(generation: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    /// Starts it; with `keepStdinOpen` its stdin is a pipe left open (so a prompt waits for an answer).
    /// `environment` adds to (or replaces variables of) this process's environment.
    init(
        _ executable: String, _ arguments: [String], keepStdinOpen: Bool = false, environment: [String: String] = [:]
    ) throws {
        name = URL(fileURLWithPath: executable).lastPathComponent + " " + arguments.joined(separator: " ")
        process = try ChildProcess(
            executable, arguments,
            environment: environment.isEmpty
                ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stdin: keepStdinOpen ? .pipe : .null, stdout: .pipe, stderr: .pipe)
        startReading(process.stdoutFD, isStdout: true)
        startReading(process.stderrFD, isStdout: false)
        process.onExit { [self] _ in changed() }
    }

    private func changed() {
        let woken = changes.withLock { changes -> [CheckedContinuation<Void, Never>] in
            changes.generation += 1
            defer { changes.waiters = [] }
            return changes.waiters
        }
        for waiter in woken { waiter.resume() }
    }

    /// Waits until `condition` holds, looking again at each line, pipe close and the exit (no polling); false once
    /// `timeout` has passed without it.
    private func wait(timeout: Duration, until condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        let timer = afterDeadline(timeout) { [self] in changed() }
        defer { timer.cancel() }
        while true {
            let seen = changes.withLock { $0.generation }
            if condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = changes.withLock { changes -> Bool in
                    if changes.generation != seen { return true }
                    changes.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    private func startReading(_ fd: Int32, isStdout: Bool) {
        let thread = Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    output.withLock { isStdout ? $0.stdout.append(line) : $0.stderr.append(line) }
                    changed()
                }
            }
            let rest = pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self)
            output.withLock {
                if let rest { isStdout ? $0.stdout.append(rest) : $0.stderr.append(rest) }
                $0.open -= 1
            }
            changed()
            close(fd)
        }
        thread.start()
    }

    var pid: Int32 { process.pid }
    /// The exit status, or nil while it runs.
    var exitStatus: Int32? { process.exitStatus }
    var stdoutLines: [String] { output.withLock { $0.stdout } }
    var stderrLines: [String] { output.withLock { $0.stderr } }

    /// Every stdout line parsed as a JSON object; a line that is not one is recorded as an issue.
    var events: [[String: Any]] {
        stdoutLines.compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            if object == nil { Issue.record("\(name): stdout line is not a JSON object: \(line)") }
            return object
        }
    }

    /// A short account of the output, for failure messages.
    var transcript: String {
        "\(name)\n--- stdout\n" + stdoutLines.joined(separator: "\n") + "\n--- stderr\n"
            + stderrLines.joined(separator: "\n")
    }

    /// Waits for a JSON event named `name` (whose fields satisfy `matching`); nil after `timeout` or at exit.
    func waitForEvent(
        _ event: String, timeout: Duration = patience, matching: ([String: Any]) -> Bool = { _ in true }
    ) async -> [String: Any]? {
        var found: [String: Any]?
        var checked = 0
        _ = await wait(timeout: timeout) {
            let lines = stdoutLines
            for line in lines[checked...] {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["event"] as? String == event, matching(object)
                {
                    found = object
                    return true
                }
            }
            checked = lines.count
            return output.withLock { $0.open == 0 }
        }
        return found
    }

    /// Waits until the JSON events on stdout so far satisfy `condition` (looked at again at each new line); false after
    /// `timeout` or at exit.
    func waitUntilEvents(timeout: Duration = patience, _ condition: ([[String: Any]]) -> Bool) async -> Bool {
        var holds = false
        _ = await wait(timeout: timeout) {
            let objects = stdoutLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            holds = condition(objects)
            return holds || output.withLock { $0.open == 0 }
        }
        return holds
    }

    /// Waits for a stdout line that satisfies `matching`; nil after `timeout` or at exit.
    func waitForLine(timeout: Duration = patience, _ matching: (String) -> Bool) async -> String? {
        await waitForLine(in: \.stdout, timeout: timeout, matching)
    }

    /// Like ``waitForLine(timeout:_:)``, on stderr (the log).
    func waitForErrorLine(timeout: Duration = patience, _ matching: (String) -> Bool) async -> String? {
        await waitForLine(in: \.stderr, timeout: timeout, matching)
    }

    private func waitForLine(
        in lines: KeyPath<(stdout: [String], stderr: [String], open: Int), [String]>, timeout: Duration,
        _ matching: (String) -> Bool
    ) async -> String? {
        var found: String?
        _ = await wait(timeout: timeout) {
            let (seen, open) = output.withLock { ($0[keyPath: lines], $0.open) }
            found = seen.first(where: matching)
            return found != nil || open == 0
        }
        return found
    }

    func signal(_ number: Int32) { process.signal(number) }

    /// Waits for the exit and for both pipes to close; nil if the program still runs after `timeout`.
    func waitForExit(timeout: Duration = patience) async -> Int32? {
        let ended = await wait(timeout: timeout) { process.exitStatus != nil && output.withLock { $0.open == 0 } }
        return ended ? process.exitStatus : nil
    }

    /// Writes `text` to its standard input (started with `keepStdinOpen`).
    func write(_ text: String) { process.write(Array(text.utf8)) }

    /// Ends the program if it still runs (SIGTERM, then SIGKILL) and closes its stdin.
    func stop() async {
        process.closeStdin()
        guard process.exitStatus == nil else { return }
        process.signal(SIGTERM)
        if await waitForExit(timeout: .seconds(10)) == nil {
            process.signal(SIGKILL)
            _ = await waitForExit(timeout: .seconds(10))
        }
    }
}

/// What a finished command left.
struct CommandResult: Sendable, CustomStringConvertible {
    let exitCode: Int32?
    let stdout: [String]
    let stderr: [String]
    let transcript: String
    var description: String { "exit \(exitCode.map(String.init) ?? "none (timed out)")\n\(transcript)" }

    /// The stderr lines that are not log lines of `--log-level`: what a person reads.
    var errorLine: String? { stderr.first }
}

/// Runs a command to its end (killed after `timeout`).
func runCommand(_ executable: String, _ arguments: [String], timeout: Duration = patience) async throws
    -> CommandResult
{
    let process = try CLIProcess(executable, arguments)
    let code = await process.waitForExit(timeout: timeout)
    if code == nil { await process.stop() }
    return CommandResult(
        exitCode: code, stdout: process.stdoutLines, stderr: process.stderrLines, transcript: process.transcript)
}

func supporter(_ arguments: String...) async throws -> CommandResult {
    try await runCommand(Binaries.supporter, arguments)
}

func device(_ arguments: String...) async throws -> CommandResult {
    try await runCommand(Binaries.device, arguments)
}

/// Checks the rule for errors a person hits: the exit code, and stderr exactly one `error: …` line (plus the
/// "see --help" line of a usage error) that holds every one of `words`.
func expectError(
    _ result: CommandResult, exitCode: Int32, mentions words: [String], sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.exitCode == exitCode, "\(result)", sourceLocation: sourceLocation)
    let expectedLines = exitCode == 2 ? 2 : 1
    #expect(result.stderr.count == expectedLines, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    guard let line = result.stderr.first else {
        Issue.record("nothing on stderr\n\(result)", sourceLocation: sourceLocation)
        return
    }
    #expect(line.hasPrefix("error: "), "\(line)", sourceLocation: sourceLocation)
    for word in words {
        #expect(line.contains(word), "'\(word)' not in: \(line)", sourceLocation: sourceLocation)
    }
    if exitCode == 2, result.stderr.count > 1 {
        #expect(result.stderr[1].hasPrefix("see '") && result.stderr[1].contains("--help"), sourceLocation: sourceLocation)
    }
}

/// A port on loopback where nothing listens (bound, read, released).
func freeLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length)
            return getsockname(fd, pointer, &length)
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// A plain TCP socket connected to 127.0.0.1:`port` (blocking; -1 when `socket` fails). The caller closes it.
/// Whether the peer closes any of `fds` (sockets the peer sends nothing on) within `timeout`: poll(2) wakes at the
/// FIN or reset, no polling loop. Runs off the cooperative pool.
func anyClosedByPeer(_ fds: [Int32], timeout: Duration = waitDeadline) async -> Bool {
    await Task.detached { () -> Bool in
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        return poll(&entries, nfds_t(entries.count), Int32(timeout.components.seconds * 1000)) > 0
    }.value
}

func connectedLoopbackSocket(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return fd
}

/// `sha256/<base64>` of a certificate's SPKI, as `--pin` takes it.
func pin(_ certificate: CertificateFile) -> String {
    "sha256/" + Data(certificate.spkiSHA256).base64EncodedString()
}

/// A supporter node (`rsup-supporter serve --json --non-interactive`) on loopback port 0, its data folder, and the
/// control commands that reach it. `close()` stops it and deletes the folder.
final class SupporterServer: Sendable {
    let folder: TemporaryFolder
    let process: CLIProcess
    let port: Int
    private let devices = Mutex<[CLIProcess]>([])

    var data: String { folder.file("data") }
    var address: String { "127.0.0.1:\(port)" }

    /// Starts the node with `certificate` and waits for its `listening` event; on `folder`'s data folder when given
    /// (a restart on the data of a node that was stopped with `close(keepingData: true)`, or killed). Without `json`
    /// the node prints its events for people, and the port is read from its `listening on HOST:PORT` line.
    /// With `fileLimit`, the node runs under `ulimit -n fileLimit` (through /bin/sh, which then execs it). `port` 0
    /// lets the kernel choose; another reuses a restarted node's port, so that its devices find it again.
    init(
        certificate: CertificateFile, extra: [String] = [], reusing folder: TemporaryFolder? = nil, json: Bool = true,
        fileLimit: Int? = nil, port listenPort: Int = 0, environment: [String: String] = [:]
    ) async throws {
        let isNew = folder == nil
        let folder = try folder ?? TemporaryFolder()
        self.folder = folder
        let arguments =
            [
                "serve", "--listen", "127.0.0.1:\(listenPort)", "--non-interactive", "--data", folder.file("data"),
                "--cert", certificate.certificatePath, "--key", certificate.keyPath,
            ] + (json ? ["--json"] : []) + extra
        let process =
            if let fileLimit {
                try CLIProcess("/bin/sh", ["-c", "ulimit -n \(fileLimit) && exec \"$0\" \"$@\"", Binaries.supporter] + arguments)
            } else {
                try CLIProcess(Binaries.supporter, arguments, environment: environment)
            }
        self.process = process
        let port: Int? =
            if json {
                await process.waitForEvent("listening")?["port"] as? Int
            } else {
                await process.waitForLine { $0.contains(" listening on ") }.flatMap(Self.port(inListeningLine:))
            }
        guard let port, port > 0 else {
            await process.stop()
            if isNew { folder.remove() }
            throw HarnessError("the supporter node never reported 'listening'\n\(process.transcript)")
        }
        self.port = port
    }

    /// The port in `… listening on 127.0.0.1:PORT (data: …)`.
    static func port(inListeningLine line: String) -> Int? {
        guard let address = line.components(separatedBy: " listening on ").last?.split(separator: " ").first,
            let port = address.split(separator: ":").last
        else { return nil }
        return Int(port)
    }

    /// Runs one control command (`--json`) and returns its reply.
    func control(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await runCommand(Binaries.supporter, arguments + ["--data", data, "--json"])
        guard result.exitCode == 0, let line = result.stdout.first,
            let reply = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw HarnessError("rsup-supporter \(arguments.joined(separator: " ")) failed\n\(result)") }
        return reply
    }

    /// Adds the supporter account `login` (display name `displayName`) unless the node has it; its password is in the
    /// node's test folder.
    func ensureAccount(_ login: String = "alice", displayName: String = "Alice", role: String = "supporter") async throws {
        let listed = try await control(["user", "list"])
        if (listed["users"] as? [[String: Any]] ?? []).contains(where: { $0["login"] as? String == login }) { return }
        let passwordFile = folder.file("password-\(login)")
        try Data("correct horse battery \(login)\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        _ = try await control(
            ["user", "add", login, "--display-name", displayName, "--role", role, "--password-file", passwordFile])
    }

    /// Sends a connection request on `code` as the account `login` (added first when missing, display name "Alice").
    func connect(_ code: String, as login: String = "alice", displayName: String = "Alice", extra: [String] = [])
        async throws -> [String: Any]
    {
        try await ensureAccount(login, displayName: displayName)
        return try await control(["connect", "--code", code, "--as", login] + extra)
    }

    func issueToken() async throws -> String {
        guard let token = try await control(["token"])["token"] as? String else { throw HarnessError("no token") }
        return token
    }

    func createCode() async throws -> String {
        let reply = try await control(["create", "--type", "remote", "--description", "CLI test"])
        guard let code = (reply["code"] as? [String: Any])?["code"] as? String else { throw HarnessError("no code") }
        return code
    }

    /// Waits for a supporter event about `code`.
    func waitForEvent(_ event: String, code: String, matching: @escaping ([String: Any]) -> Bool = { _ in true }) async
        -> [String: Any]?
    {
        await process.waitForEvent(event) { $0["code"] as? String == code && matching($0) }
    }

    /// Starts a device (`rsup-device connect … --json`) on `code`; `close()` stops it too if it still runs.
    func startDevice(
        code: String, token: String, trust: [String], extra: [String] = [], keepStdinOpen: Bool = false
    ) throws -> CLIProcess {
        let device = try CLIProcess(
            Binaries.device,
            ["connect", address, "--code", code, "--token", token, "--name", "cli-test-device", "--json"] + trust
                + extra,
            keepStdinOpen: keepStdinOpen)
        devices.withLock { $0.append(device) }
        return device
    }

    /// Stops the node and its devices and deletes the data, unless `keepingData` (to start a node on it again).
    func close(keepingData: Bool = false) async {
        for device in devices.withLock({ $0 }) { await device.stop() }
        await process.stop()
        if !keepingData { folder.remove() }
    }
}


struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with fresh certificates, deleting them afterwards.
func withCertificates<T>(_ body: (TestCertificates) async throws -> T) async throws -> T {
    let certificates = try TestCertificates.make()
    defer { certificates.remove() }
    return try await body(certificates)
}

/// Runs `body` with fresh certificates and a supporter node serving `certificates.server`; stops and deletes all.
func withSupporter<T>(
    certificate: (TestCertificates) -> CertificateFile = { $0.server },
    _ body: (TestCertificates, SupporterServer) async throws -> T
) async throws -> T {
    try await withCertificates { certificates in
        let server = try await SupporterServer(certificate: certificate(certificates))
        do {
            let result = try await body(certificates, server)
            await server.close()
            return result
        } catch {
            await server.close()
            throw error
        }
    }
}
