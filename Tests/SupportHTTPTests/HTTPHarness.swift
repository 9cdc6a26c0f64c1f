// HTTPHarness.swift — a real HTTPServer over TLS on loopback, and real client processes (curl, python3, openssl).
//
// Client processes are awaited through their termination handler and write to temporary files, so no cooperative
// thread blocks while they run (the server's handlers need those threads).

import Foundation
import Synchronization
import Testing
import TestSupport
@testable import SupportHTTP
import SupportRuntime

/// Parent of every suite that opens sockets; serialized so the timing tests do not compete for the 2 cores.
@Suite(.serialized, .timeLimit(.minutes(3))) enum HTTPIntegration {}

/// A running server with its certificates and loops; `stop()` frees all three.
final class HTTPFixture: Sendable {
    let certificates: TestCertificates
    let group: EventLoopGroup
    let server: HTTPServer

    var port: UInt16 { server.localAddress.port }
    var caPath: String { certificates.caPath }
    func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    init(configuration: HTTPServerConfiguration, handler: @escaping HTTPServer.Handler) throws {
        certificates = try TestCertificates.make()
        do {
            group = try EventLoopGroup(loopCount: 2)
        } catch {
            certificates.remove()
            throw error
        }
        do {
            let tls = HTTPServer.makeTLSConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath))
            server = try HTTPServer(
                host: "127.0.0.1", port: 0, context: try TLSContext(tls), group: group, configuration: configuration,
                handler: handler)
        } catch {
            group.shutdown()
            certificates.remove()
            throw error
        }
    }

    func stop() {
        server.close()
        group.shutdown()
        certificates.remove()
    }
}

/// Runs `body` against a fresh server and always stops it.
func withServer(
    configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    handler: @escaping HTTPServer.Handler = echoHandler,
    _ body: (HTTPFixture) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration()
    configure(&configuration)
    let fixture = try HTTPFixture(configuration: configuration, handler: handler)
    defer { fixture.stop() }
    try await body(fixture)
}

/// Answers every request with JSON describing it.
@Sendable func echoHandler(_ request: HTTPRequest) async -> HTTPResponse {
    var object: [String: Any] = [
        "method": request.method.rawValue, "path": request.path, "segments": request.pathSegments,
        "query": Dictionary(request.queryItems.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
        "version": request.version.description, "keepAlive": request.keepAlive,
    ]
    if !request.body.isEmpty {
        object["json"] = (try? JSONSerialization.jsonObject(with: Data(request.body), options: [.fragmentsAllowed]))
            ?? NSNull()
        object["bodyBytes"] = request.body.count
    }
    return .json(.ok, object)
}

/// What a client process did.
struct ProcessResult: Sendable, CustomStringConvertible {
    let status: Int32
    let stdout: String
    let stderr: String
    let elapsed: Duration
    var description: String { "exit \(status) after \(elapsed)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

struct ProcessFailure: Error, CustomStringConvertible { let description: String }

/// Runs `executable` with `arguments`, stdin from `input` (kept open until the process ends when `holdStdinOpen`), and
/// waits for it without blocking a thread; kills it after `timeout`.
func run(
    _ executable: String, _ arguments: [String], input: [UInt8] = [], holdStdinOpen: Bool = false,
    timeout: Duration = waitDeadline
) async throws -> ProcessResult {
    guard FileManager.default.isExecutableFile(atPath: executable) else {
        throw ProcessFailure(description: "\(executable) is missing (scripts/install-deps.sh installs it)")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-http-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("out").path
    let errPath = directory.appendingPathComponent("err").path
    let clock = ContinuousClock()
    let started = clock.now
    let process = try ChildProcess(
        executable, arguments, stdin: .pipe, stdout: .file(outPath), stderr: .file(errPath))
    if !input.isEmpty { process.write(input) }
    if !holdStdinOpen { process.closeStdin() }
    let watchdog = afterDeadline(timeout) { process.signal(SIGKILL) }  // cancelled when the process ends
    defer { watchdog.cancel() }
    let status: Int32 = await withCheckedContinuation { continuation in
        process.onExit { continuation.resume(returning: $0) }
    }
    process.closeStdin()
    let elapsed = clock.now - started
    return ProcessResult(
        status: status,
        stdout: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self),
        stderr: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self),
        elapsed: elapsed)
}

/// curl against the fixture: HTTP/1.1 over TLS verified with the test CA, quiet but showing errors.
func curl(_ fixture: HTTPFixture, _ arguments: [String]) async throws -> ProcessResult {
    try await run(
        "/usr/bin/curl", ["--silent", "--show-error", "--cacert", fixture.caPath, "--max-time", "60"] + arguments)
}

/// Runs a Python 3 script with `sys.argv[1:] = [port, caPath] + extra`; its last stdout line must be JSON.
func python(_ fixture: HTTPFixture, _ script: String, _ extra: [String] = []) async throws -> [String: Any] {
    let prelude = """
        import json, select, socket, ssl, sys, time
        PORT = int(sys.argv[1]); CA = sys.argv[2]
        CTX = ssl.create_default_context(cafile=CA)
        def tls():
            raw = socket.create_connection(("127.0.0.1", PORT), timeout=60)
            return CTX.wrap_socket(raw, server_hostname="127.0.0.1")
        def closed_by_server(s):
            s.setblocking(False)
            try:
                return s.recv(1) == b""
            except (BlockingIOError, ssl.SSLWantReadError):
                return False
            except OSError:
                return True
        def wait_closes(socks, count=1, timeout=60):
            # Until the server has closed `count` of `socks`: select wakes at a FIN, RST or close_notify (no polling).
            end = time.time() + timeout; pending = list(socks); closed = 0
            while True:
                still = []
                for c in pending:
                    if closed_by_server(c): closed += 1
                    else: still.append(c)
                pending = still
                if closed >= count: return True
                if not pending or end <= time.time(): return False
                select.select(pending, [], [], end - time.time())
        def read_all(s):
            chunks = []
            while True:
                try:
                    data = s.recv(65536)
                except (ConnectionResetError, ssl.SSLError):
                    break
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode("latin-1")

        """
    let result = try await run(
        "/usr/bin/env", ["python3", "-c", prelude + script, String(fixture.port), fixture.caPath] + extra)
    guard result.status == 0, let line = result.stdout.split(separator: "\n").last,
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { throw ProcessFailure(description: "python failed: \(result)") }
    return object
}

/// Polls `condition` until true or `timeout` passes.
func eventually(_ what: String, timeout: Duration = waitDeadline, _ condition: () -> Bool) async throws {
    guard await waitUntil(timeout: timeout, condition) else {
        throw ProcessFailure(description: "timed out after \(timeout) waiting for \(what)")
    }
}

/// A Python 3 client script that runs beside the test: it gets `sys.argv[1:] = [port, caPath] + extra` and the
/// prelude of ``python(_:_:_:)``, and may block on `wait_go()` until the test calls ``go()`` (after waiting for the
/// server's state the script cannot see). Its last stdout line must be JSON.
final class PythonClient: Sendable {
    private let process: ChildProcess
    private let directory: URL

    init(_ fixture: HTTPFixture, _ script: String, _ extra: [String] = []) throws {
        let prelude = """
            import json, select, socket, ssl, sys, time
            PORT = int(sys.argv[1]); CA = sys.argv[2]
            CTX = ssl.create_default_context(cafile=CA)
            def tcp(source):
                s = socket.socket(); s.bind((source, 0)); s.connect(("127.0.0.1", PORT)); return s
            def tls(source="127.0.0.1"):
                raw = tcp(source); raw.settimeout(60)
                return CTX.wrap_socket(raw, server_hostname="127.0.0.1")
            def closed_by_server(s):
                s.setblocking(False)
                try:
                    return s.recv(1) == b""
                except (BlockingIOError, ssl.SSLWantReadError):
                    return False
                except OSError:
                    return True
            def wait_go():
                print("ready", flush=True); sys.stdin.readline()
            def wait_closes(socks, count=1, timeout=60):
                # Until the server has closed `count` of `socks`: select wakes at a FIN, RST or close_notify (no polling).
                end = time.time() + timeout; pending = list(socks); closed = 0
                while True:
                    still = []
                    for c in pending:
                        if closed_by_server(c): closed += 1
                        else: still.append(c)
                    pending = still
                    if closed >= count: return True
                    if not pending or end <= time.time(): return False
                    select.select(pending, [], [], end - time.time())

            """
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = try ChildProcess(
            "/usr/bin/env", ["python3", "-c", prelude + script, String(fixture.port), fixture.caPath] + extra,
            stdin: .pipe, stdout: .file(directory.appendingPathComponent("out").path),
            stderr: .file(directory.appendingPathComponent("err").path))
    }

    private func read(_ name: String) -> String {
        String(decoding: (try? Data(contentsOf: directory.appendingPathComponent(name))) ?? Data(), as: UTF8.self)
    }

    /// Waits until the script called `wait_go()`.
    func waitReady() async throws {
        try await eventually("the client script to be ready", timeout: .seconds(30)) {
            read("out").contains("ready\n") || process.exitStatus != nil
        }
        if let status = process.exitStatus { throw ProcessFailure(description: "python exited \(status): \(read("err"))") }
    }

    /// Lets the script go on from `wait_go()`.
    func go() { process.write(Array("go\n".utf8)) }

    /// Waits for the script to end (killing it after `timeout`) and returns its last line.
    func result(timeout: Duration = .seconds(60)) async throws -> [String: Any] {
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let status = await process.waitForExit(timeout: timeout) else {
            process.signal(SIGKILL)
            throw ProcessFailure(description: "python did not finish: \(read("out")) \(read("err"))")
        }
        process.closeStdin()
        guard status == 0, let line = read("out").split(separator: "\n").last,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw ProcessFailure(description: "python failed (\(status)): \(read("out")) \(read("err"))") }
        return object
    }
}
