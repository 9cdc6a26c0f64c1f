// HTTPClientTests.swift — the blocking HTTP client against real receivers: a Python 3 server (plain or TLS with the
// test CA's certificates) started per test as a child process, which prints its port, serves one connection as its
// mode says, and prints a JSON report of what it saw when the connection is over.

import Foundation
import Glibc
import Testing
import TestSupport
@testable import SupportHTTP
@testable import SupportRuntime

/// Runs the blocking `body` on a thread of its own, as the webhook sender does, never on the cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// A one-connection receiver in a Python process.
final class Receiver: Sendable {
    let process: ChildProcess
    let port: UInt16
    let address: SocketAddress

    static let script = #"""
        import json, socket, ssl, sys
        mode = sys.argv[1]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        print(listener.getsockname()[1], flush=True)
        conn, _ = listener.accept()
        report = {"mode": mode}

        def read_request(c):
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(65536)
                if not chunk:
                    return data
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(body) < length:
                chunk = c.recv(65536)
                if not chunk:
                    break
                body += chunk
            return head + b"\r\n\r\n" + body

        def wait_for_close(c):
            # Until the client closes (EOF, close_notify or a reset): proves it does not keep the connection.
            try:
                while c.recv(65536):
                    pass
                report["clientClosed"] = True
            except OSError as error:
                report["clientClosed"] = True
                report["closeError"] = type(error).__name__

        try:
            conn.settimeout(60)
            if len(sys.argv) > 3:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(sys.argv[2], sys.argv[3])
                conn = context.wrap_socket(conn, server_side=True)
            request = read_request(conn)
            report["request"] = request.decode("latin-1")
            if mode == "echo":
                conn.sendall(b"HTTP/1.1 201 Created\r\nX-Reply: yes\r\nContent-Type: application/octet-stream\r\n"
                             + b"Content-Length: %d\r\n\r\n" % len(request) + request)
                wait_for_close(conn)
            elif mode == "silent":
                wait_for_close(conn)
            elif mode == "hangup":
                pass
            elif mode == "garbage":
                conn.sendall(b"FOO\r\n\r\n")
                wait_for_close(conn)
            elif mode == "continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-After: interim\r\n\r\n")
                wait_for_close(conn)
            elif mode == "bigheaders":
                pad = b"".join(b"X-Pad-%03d: %s\r\n" % (i, b"a" * 90) for i in range(200))
                conn.sendall(b"HTTP/1.1 200 OK\r\n" + pad + b"Content-Length: 0\r\n\r\n")
                wait_for_close(conn)
            elif mode == "flood":
                total = 10 * 1024 * 1024
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
                block = b"x" * 65536
                sent = 0
                try:
                    while sent < total:
                        sent += conn.send(block[: total - sent])
                except OSError as error:
                    report["sendError"] = type(error).__name__
                report["sent"] = sent
        except Exception as error:
            report["error"] = "%s: %s" % (type(error).__name__, error)
        try:
            conn.close()
        except Exception:
            pass
        print(json.dumps(report), flush=True)
        """#

    /// Starts a receiver in `mode`, over TLS with `certificate` when given, and waits for its port.
    init(_ mode: String, certificate: CertificateFile? = nil) async throws {
        var arguments = ["python3", "-c", Self.script, mode]
        if let certificate { arguments += [certificate.certificatePath, certificate.keyPath] }
        let process = try ChildProcess(
            "/usr/bin/env", arguments, stdin: .null, stdout: .pipe, stderr: .sameAsStdout)
        self.process = process
        let watchdog = afterDeadline { process.signal(SIGKILL) }  // a receiver that never prints its port
        defer { watchdog.cancel() }
        let line = await onOwnThread { Receiver.readLine(process.stdoutFD) }
        guard let port = UInt16(line) else {
            process.signal(SIGKILL)
            throw ProcessFailure(description: "the receiver did not start: \(line)")
        }
        self.port = port
        address = try SocketAddress.resolve(host: "127.0.0.1", port: port)[0]
    }

    /// One line from `fd`, read a byte at a time so that the rest stays in the pipe.
    private static func readLine(_ fd: Int32) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(fd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Waits for the receiver to finish its connection and returns its report.
    func report() async throws -> [String: Any] {
        guard await process.waitForExit(timeout: waitDeadline) != nil else {
            process.signal(SIGKILL)
            throw ProcessFailure(description: "the receiver did not finish")
        }
        let fd = process.stdoutFD
        let output = String(decoding: await onOwnThread { ChildProcess.readAll(fd) }, as: UTF8.self)
        guard let line = output.split(separator: "\n").last,
            let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw ProcessFailure(description: "the receiver's report is not JSON: \(output)") }
        return report
    }
}

/// A socket bound to a loopback port that does not listen: connecting to it is refused, and nothing else can take the
/// port while the test holds it.
final class RefusingPort {
    let fd: Int32
    let address: SocketAddress

    init() throws {
        let any = try SocketAddress.resolve(host: "127.0.0.1", port: 0)[0]
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0, any.withSockaddr({ bind(fd, $0, $1) }) == 0, let bound = SocketAddress.of(fd, peer: false) else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw ProcessFailure(description: "cannot bind a loopback port: \(reason)")
        }
        self.fd = fd
        address = bound
    }

    deinit { close(fd) }
}

extension HTTPIntegration {
    @Suite struct HTTPClientTests {
        typealias Outcome = Result<HTTPClientResponse, HTTPClientError>

        /// The exchange on a thread of its own, with how long it took.
        private func exchange(
            _ request: HTTPClientRequest, to address: SocketAddress, tls: TLSContext? = nil, serverName: String? = nil,
            timeout: Duration = waitDeadline, maxHeaderBytes: Int = 16_384, maxBodyBytes: Int = 4_096
        ) async -> (outcome: Outcome, elapsed: Duration) {
            await onOwnThread {
                let clock = ContinuousClock()
                let started = clock.now
                let outcome = Outcome { () throws(HTTPClientError) in
                    try HTTPClient.exchange(
                        request, to: address, tls: tls, serverName: serverName, timeout: timeout,
                        maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes)
                }
                return (outcome, clock.now - started)
            }
        }

        private func withCertificates(_ body: (TestCertificates, TLSContext) async throws -> Void) async throws {
            let certificates = try TestCertificates.make()
            defer { certificates.remove() }
            let context = try TLSContext(HTTPClient.makeTLSConfiguration(trustRoots: .file(certificates.caPath)))
            try await body(certificates, context)
        }

        private func webhook(port: UInt16) -> HTTPClientRequest {
            HTTPClientRequest(
                method: "POST", target: "/hooks/abc?delivery=7", host: "127.0.0.1:\(port)",
                headers: [
                    (name: "Content-Type", value: "application/json"),
                    (name: "X-RSup-Signature", value: "t=1700000000, v1=5257a869e7ecebeda32affa62cdca3fa"),
                ],
                body: Array(#"{"event":"session.ended","code":"123456789"}"#.utf8))
        }

        /// The request exactly as it must arrive.
        private func wire(port: UInt16) -> String {
            "POST /hooks/abc?delivery=7 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "X-RSup-Signature: t=1700000000, v1=5257a869e7ecebeda32affa62cdca3fa\r\nContent-Length: 44\r\n"
                + "Connection: close\r\n\r\n{\"event\":\"session.ended\",\"code\":\"123456789\"}"
        }

        private func expectEcho(_ outcome: Outcome, _ receiver: Receiver) async throws {
            let response = try outcome.get()
            let expected = wire(port: receiver.port)
            #expect(response.status == 201)
            #expect(response.reason == "Created")
            #expect(response.headerValue("x-reply") == "yes")
            #expect(response.headerValue("Content-Length") == String(expected.utf8.count))
            #expect(response.headers.map(\.name) == ["X-Reply", "Content-Type", "Content-Length"])
            #expect(response.bodyPrefix == Array(expected.utf8))
            #expect(!response.isBodyTruncated)
            let report = try await receiver.report()
            #expect(report["request"] as? String == expected)
            #expect(report["clientClosed"] as? Bool == true)
            #expect(report["error"] == nil)
        }

        @Test func postsOverTLSVerifiedByTheTestCAAndReadsTheAnswer() async throws {
            try await withCertificates { certificates, context in
                let receiver = try await Receiver("echo", certificate: certificates.server)
                let (outcome, _) = await exchange(
                    webhook(port: receiver.port), to: receiver.address, tls: context, serverName: "localhost")
                try await expectEcho(outcome, receiver)
            }
        }

        @Test func postsOverPlainHTTP() async throws {
            let receiver = try await Receiver("echo")
            let (outcome, _) = await exchange(webhook(port: receiver.port), to: receiver.address)
            try await expectEcho(outcome, receiver)
        }

        @Test func aRefusedConnectionIsAConnectErrorAtOnce() async throws {
            let refusing = try RefusingPort()
            let (outcome, elapsed) = await exchange(webhook(port: refusing.address.port), to: refusing.address)
            guard case .failure(let error) = outcome else {
                Issue.record("a refused connection must fail")
                return
            }
            #expect(error.kind == .connect)
            #expect(error.underlying?.kind == .connectionRefused)
            #expect(error.address == refusing.address)
            #expect(error.description.contains("cannot connect to \(refusing.address)"))
            #expect(error.description.contains("connection refused"))
            #expect(elapsed < .seconds(10))
        }

        @Test func aSilentReceiverTimesOutWaitingForTheStatusLine() async throws {
            let receiver = try await Receiver("silent")
            let (outcome, elapsed) = await exchange(
                webhook(port: receiver.port), to: receiver.address, timeout: .seconds(1))
            guard case .failure(let error) = outcome else {
                Issue.record("a silent receiver must time out")
                return
            }
            #expect(error.kind == .timeout)
            #expect(error.phase == .waitingForStatusLine)
            #expect(error.message.contains("waiting for the status line"), "\(error)")
            #expect(error.description.contains(receiver.address.description))
            #expect(elapsed >= .seconds(1))
            #expect(elapsed < .seconds(10))
            let report = try await receiver.report()
            #expect(report["request"] as? String == wire(port: receiver.port))
            #expect(report["clientClosed"] as? Bool == true)
        }

        /// A receiver answering 10 MB as fast as it can: the client reads the head and 4 KiB, closes, and the
        /// receiver's sending breaks off long before the 10 MB (the kernel's buffers take a few MB at most).
        @Test(arguments: [false, true])
        func aFloodingReceiverCostsOnlyTheBodyLimit(overTLS: Bool) async throws {
            try await withCertificates { certificates, context in
                let receiver = try await Receiver("flood", certificate: overTLS ? certificates.server : nil)
                let (outcome, elapsed) = await exchange(
                    webhook(port: receiver.port), to: receiver.address, tls: overTLS ? context : nil)
                let response = try outcome.get()
                #expect(response.status == 200)
                #expect(response.isBodyTruncated)
                #expect(response.bodyPrefix == [UInt8](repeating: UInt8(ascii: "x"), count: 4_096))
                #expect(elapsed < .seconds(30))
                let report = try await receiver.report()
                let sent = try #require(report["sent"] as? Int, "\(report)")
                #expect(report["sendError"] != nil, "\(report)")
                #expect(sent < 10 * 1024 * 1024)
            }
        }

        @Test(arguments: [
            ("other CA", "unable to get local issuer certificate", nil),
            ("wrong host", "hostname mismatch", "localhost"),
        ] as [(String, String, String?)])
        func anUntrustedCertificateIsATLSErrorNamingWhy(
            _ which: String, _ reason: String, _ serverName: String?
        ) async throws {
            try await withCertificates { certificates, context in
                let certificate = which == "other CA" ? certificates.serverOtherCA : certificates.serverWrongHost
                let receiver = try await Receiver("echo", certificate: certificate)
                let (outcome, _) = await exchange(
                    webhook(port: receiver.port), to: receiver.address, tls: context, serverName: serverName)
                guard case .failure(let error) = outcome else {
                    Issue.record("an untrusted certificate must fail")
                    return
                }
                #expect(error.kind == .tls)
                #expect(error.underlying?.kind == .certificateVerification)
                #expect(error.message.contains("certificate verification"), "\(error)")
                #expect(error.message.contains(reason), "\(error)")
                let report = try await receiver.report()
                #expect(report["request"] == nil)  // nothing was sent
            }
        }

        @Test func interimResponsesAreSkipped() async throws {
            let receiver = try await Receiver("continue")
            let (outcome, _) = await exchange(webhook(port: receiver.port), to: receiver.address)
            let response = try outcome.get()
            #expect(response.status == 204)
            #expect(response.reason == "No Content")
            #expect(response.headerValue("X-After") == "interim")
            #expect(response.bodyPrefix.isEmpty)
            #expect(!response.isBodyTruncated)
            _ = try await receiver.report()
        }

        @Test func twentyKilobytesOfHeadersAreTooLarge() async throws {
            let receiver = try await Receiver("bigheaders")
            let (outcome, _) = await exchange(webhook(port: receiver.port), to: receiver.address)
            guard case .failure(let error) = outcome else {
                Issue.record("20 KB of headers must fail")
                return
            }
            #expect(error.kind == .headersTooLarge)
            #expect(error.message.contains("16384 bytes"))
            #expect(error.address == receiver.address)
            _ = try await receiver.report()
        }

        @Test func aResponseThatIsNotHTTPIsMalformed() async throws {
            let receiver = try await Receiver("garbage")
            let (outcome, _) = await exchange(webhook(port: receiver.port), to: receiver.address)
            guard case .failure(let error) = outcome else {
                Issue.record("FOO must fail")
                return
            }
            #expect(error.kind == .malformedResponse)
            #expect(
                error.description == "\(receiver.address) sent a malformed response: the status line 'FOO' is not HTTP/1.x NNN")
            _ = try await receiver.report()
        }

        @Test func aReceiverThatHangsUpClosedEarly() async throws {
            let receiver = try await Receiver("hangup")
            let (outcome, _) = await exchange(webhook(port: receiver.port), to: receiver.address)
            guard case .failure(let error) = outcome else {
                Issue.record("a hang-up must fail")
                return
            }
            #expect(error.kind == .closedEarly)
            #expect(error.message.contains("closed the connection without answering"), "\(error)")
            _ = try await receiver.report()
        }

        /// The request is checked before any connection: the refusing port would otherwise say `connect`.
        @Test func aHeaderValueWithCRLFIsRefusedWithoutConnecting() async throws {
            let refusing = try RefusingPort()
            var request = webhook(port: refusing.address.port)
            request.headers.append((name: "X-Evil", value: "a\r\nInjected: yes"))
            let (outcome, _) = await exchange(request, to: refusing.address)
            guard case .failure(let error) = outcome else {
                Issue.record("CR LF in a header value must be refused")
                return
            }
            #expect(error.kind == .invalidRequest)
            #expect(error.message.contains("'X-Evil'"))
            #expect(error.address == refusing.address)
        }

        @Test func aContextThatRequiresItsOwnALPNIsRefusedWithoutConnecting() async throws {
            try await withCertificates { certificates, _ in
                let refusing = try RefusingPort()
                let context = try TLSContext(.makeClientConfiguration(trustRoots: .file(certificates.caPath)))
                let (outcome, _) = await exchange(webhook(port: refusing.address.port), to: refusing.address, tls: context)
                guard case .failure(let error) = outcome else {
                    Issue.record("an rsup/1 context must be refused")
                    return
                }
                #expect(error.kind == .invalidRequest)
                #expect(error.message.contains("HTTPClient.makeTLSConfiguration"))
            }
        }
    }
}
