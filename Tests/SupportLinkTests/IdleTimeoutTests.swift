import COpenSSL  // the socket constants: once RawTLSPeer loads OpenSSL, they are seen through it
import Glibc
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import TestSupport

extension TransportIntegration {
    /// The listener's idle timeout: a connection that sends nothing for that long is dropped.
    @Suite struct IdleTimeoutTests {
        @Test func silentConnectionIsClosedAfterTheIdleTimeout() async throws {
            try await withTransport { fixture in
                // Keepalive far longer than the idle timeout, so no PING keeps the link busy.
                let server = try fixture.startServer(
                    settings: .supporter(keepalive: .seconds(600)), idleTimeout: .milliseconds(400))
                let clock = ContinuousClock()
                let started = clock.now
                let client = try await fixture.dial(server, settings: .device(keepalive: .seconds(600)))
                let (_, serverRecorder) = try await server.link()
                guard case .transport(let error) = try await serverRecorder.waitForClose(timeout: .seconds(10)) else {
                    Issue.record("the server side closed for another reason")
                    return
                }
                #expect(error.kind == .idleTimeout)
                #expect(clock.now - started >= .milliseconds(400))
                // The client learns the connection is gone.
                _ = try await client.recorder.waitForClose(timeout: .seconds(10))
            }
        }

        @Test func trafficKeepsAConnectionPastTheIdleTimeout() async throws {
            // Virtual time: 1.6 s of ticks 200 ms apart against a 600 ms idle timeout, at exactly those times.
            try await VirtualTimeLinkTests.withPair(keepalive: .seconds(600), idleTimeout: .milliseconds(600)) { pair in
                for index in 0..<8 {
                    try pair.client.send(.sessionEnd(SessionEnd(reason: .endedByDevice, text: "tick \(index)")))
                    pair.advance(by: .milliseconds(200))
                }
                #expect(pair.advance(until: { pair.serverRecorder.messages.count >= 8 }))
                #expect(pair.serverRecorder.messages.count == 8)
                #expect(pair.serverRecorder.closeReason == nil)
                #expect(!pair.client.isClosed)
            }
        }
    }
}

extension TransportIntegration {
    /// The dialer's TCP connect timeout, against a listener whose accept queue is full (Linux then drops SYNs).
    @Suite struct ConnectTimeoutTests {
        @Test func connectToAFullAcceptQueueTimesOut() async throws {
            try await withTransport { fixture in
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
                }
                #expect(listen(fd, 0) == 0)
                _ = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
                let port = UInt16(bigEndian: address.sin_port)
                // Fill the queue with connections nobody accepts.
                var fillers: [Int32] = []
                defer { fillers.forEach { close($0) } }
                for _ in 0..<4 {
                    let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                    _ = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
                    }
                    fillers.append(filler)
                }
                // No wait for the queue to fill: TLS cannot complete against a listener that never accepts, so the
                // dial ends in one of the two timeouts below whichever way the kernel treats its SYN.
                let context = try fixture.clientContext { $0.handshakeTimeout = .seconds(2) }
                let clock = ContinuousClock()
                let started = clock.now
                do throws(TransportError) {
                    _ = try await TLSDialer.connect(
                        host: "127.0.0.1", port: port, context: context, settings: .device(),
                        loop: fixture.clientLoop, connectTimeout: .milliseconds(500), delegate: nil)
                    Issue.record("the dial succeeded against a full accept queue")
                } catch {
                    // Either the SYN was dropped (connect timeout) or the kernel completed TCP into the queue and
                    // the TLS handshake timed out; both must come back as a timeout, never a hang.
                    #expect([TransportError.Kind.connectTimeout, .handshakeTimeout].contains(error.kind), "\(error)")
                }
                // 500 ms and 2 s timeouts: 60 s is generous on a loaded machine and still tells a timeout from a hang.
                #expect(clock.now - started < waitDeadline)
            }
        }
    }
}
