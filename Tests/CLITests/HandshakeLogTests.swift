import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// What the node logs about connections that fail before they are devices.
@Suite("handshake log", .serialized)
struct HandshakeLogTests {
    @Test("failed TLS handshakes are logged at info with the source and reason, rate-limited per source")
    func failedHandshakesAreLoggedRateLimited() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(certificate: certificates.server, extra: ["--log-level", "info"])
            defer { Task { await server.close() } }
            for _ in 0..<20 {
                let fd = connectedLoopbackSocket(port: server.port)
                let request = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                var buffer = [UInt8](repeating: 0, count: 256)
                _ = read(fd, &buffer, buffer.count)
                close(fd)
            }
            var lines: [String] { server.process.stderrLines.filter { $0.contains("TLS handshake with 127.0.0.1 failed") } }
            _ = await waitUntil { !lines.isEmpty }
            #expect(lines.first?.contains("plaintext HTTP") == true, "\(server.process.transcript)")
            // Every line the node would write about these 20 failures is written once it has exited (and its stderr
            // read to the end): no wall-clock wait for lines that should not come.
            await server.process.stop()
            #expect(lines.count == 1, "20 failures in under 10 s make one line: \(lines)")
        }
    }
}
