import Foundation
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities

extension TransportIntegration {
    /// Peers that do not speak TLS, stop half-way, go silent or stop reading: each is closed alone, with a clean
    /// error, no crash and no leaked file descriptor, and the listener keeps serving.
    @Suite struct HostilePeerTests {
        /// A full normal dial and close, so lazily opened process-wide resources exist before the fd baseline.
        private func warmUp(_ fixture: TransportFixture, _ server: TestServer) async throws {
            let (link, recorder) = try await fixture.dial(server)
            link.close()
            _ = try await recorder.waitForClose()
            for (_, serverRecorder) in server.links { _ = try await serverRecorder.waitForClose() }
        }

        /// After a hostile peer, a normal device still gets through.
        private func expectListenerStillServes(_ fixture: TransportFixture, _ server: TestServer) async throws {
            let (link, recorder) = try await fixture.dial(server, settings: .device("after-the-hostile-peer"))
            #expect(recorder.parameters?.peerRole == .supporter)
            link.close()
            _ = try await recorder.waitForClose()
        }

        private func closeAllServerLinks(_ server: TestServer) async throws {
            for (link, recorder) in server.links {
                link.close()
                _ = try await recorder.waitForClose()
            }
        }

        @Test(arguments: [
            "plain text instead of a TLS ClientHello\r\n",
            "GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n",
            "\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}",
        ])
        func nonTLSBytesCloseThatConnectionAndTheListenerKeepsServing(bytes: String) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                try await warmUp(fixture, server)
                let baseline = await listenerBaseline(server.port)
                #expect(baseline.count == 1, "only the listener: \(baseline)")

                let raw = try RawSocket(port: server.port)
                raw.send(bytes)
                let closedAt = await raw.waitUntilPeerCloses(timeout: .seconds(10))
                #expect(closedAt != nil, "the server did not close a connection that sent non-TLS bytes")
                raw.close()
                let (_, hostileRecorder) = try await server.link(1)
                let error = try await hostileRecorder.waitForClose().transportError
                #expect(error?.kind == .handshakeFailed, "\(String(describing: error))")
                #expect(hostileRecorder.parameters == nil)

                try await expectListenerStillServes(fixture, server)
                try await closeAllServerLinks(server)
                await expectNoLeakedSockets(on: server.port, baseline: baseline)
            }
        }

        @Test func peerVanishingMidHandshakeIsACleanErrorWithoutLeaks() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                try await warmUp(fixture, server)
                let baseline = await listenerBaseline(server.port)
                #expect(baseline.count == 1, "only the listener: \(baseline)")

                let raw = try RawSocket(port: server.port)
                // A TLS handshake record announcing 512 bytes of ClientHello, of which only the start arrives.
                raw.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + Array(repeating: 0x42, count: 40))
                // Accepted (the server is in its handshake) before the peer vanishes.
                let (_, hostileRecorder) = try await server.link(1)
                raw.close()
                let error = try await hostileRecorder.waitForClose().transportError
                #expect(error?.kind == .handshakeFailed, "\(String(describing: error))")

                try await expectListenerStillServes(fixture, server)
                try await closeAllServerLinks(server)
                await expectNoLeakedSockets(on: server.port, baseline: baseline)
            }
        }

        @Test func peerVanishingMidFrameIsAnUncleanShutdownWithoutLeaks() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                try await warmUp(fixture, server)
                let baseline = await listenerBaseline(server.port)
                #expect(baseline.count == 1, "only the listener: \(baseline)")

                let (link, _) = try await fixture.dial(server, settings: .device("half-a-frame"))
                let (_, serverRecorder) = try await server.link(1)
                _ = try await serverRecorder.waitForOpen()
                let frame = try frames([.register(Register(sessionCode: "123", apiToken: "token"))])
                // Half a REGISTER frame, then the TCP connection ends without close_notify or GOAWAY.
                await onLoop(link.loop) {
                    try? link.connection.write(Array(frame.prefix(frame.count / 2)))
                    link.connection.abort(TransportError(.closed, "the test pulled the plug"))
                }
                let error = try await serverRecorder.waitForClose().transportError
                #expect(
                    error?.kind == .uncleanShutdown || error?.kind == .connectionReset, "\(String(describing: error))")
                #expect(serverRecorder.messages.isEmpty)

                try await expectListenerStillServes(fixture, server)
                try await closeAllServerLinks(server)
                await expectNoLeakedSockets(on: server.port, baseline: baseline)
            }
        }

        @Test func externalTLSPeerKilledMidFrameIsAnUncleanShutdown() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let client = try OpenSSLClient(port: server.port, arguments: ["-alpn", "rsup/1"])
                let hello = try frames([.hello(Hello(role: .device, nodeName: "s_client"))])
                let register = try frames([.register(Register(sessionCode: "123", apiToken: "token"))])
                client.write(hello + register.prefix(register.count / 2))
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForOpen().peerName == "s_client")
                await client.kill()
                let error = try await serverRecorder.waitForClose().transportError
                #expect(
                    error?.kind == .uncleanShutdown || error?.kind == .connectionReset, "\(String(describing: error))")
                #expect(serverRecorder.messages.isEmpty)
            }
        }

        @Test func silentTCPPeerIsClosedAfterTheHandshakeTimeout() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext { $0.handshakeTimeout = .milliseconds(300) })
                try await warmUp(fixture, server)
                let baseline = await listenerBaseline(server.port)
                #expect(baseline.count == 1, "only the listener: \(baseline)")

                let clock = ContinuousClock()
                let start = clock.now
                let raw = try RawSocket(port: server.port)
                let closedAt = await raw.waitUntilPeerCloses(timeout: .seconds(10))
                raw.close()
                let closed = try #require(closedAt, "the server never closed a silent connection")
                #expect(closed - start >= .milliseconds(250))
                #expect(closed - start < .seconds(8))
                let error = try await server.link(1).recorder.waitForClose().transportError
                #expect(error?.kind == .handshakeTimeout, "\(String(describing: error))")

                try await closeAllServerLinks(server)
                await expectNoLeakedSockets(on: server.port, baseline: baseline)
            }
        }

        @Test func peerThatCompletesTLSButNeverSendsHelloIsClosedAfterTheHelloTimeout() async throws {
            try await withTransport { fixture in
                var settings = LinkSettings.supporter()
                settings.helloTimeout = .milliseconds(300)
                let server = try fixture.startServer(settings: settings)
                let client = try OpenSSLClient(port: server.port, arguments: ["-alpn", "rsup/1"])
                let reason = try await server.link().recorder.waitForClose()
                #expect(reason == .helloTimeout)
                #expect(reason.reasonCode == .protocolError)
                // s_client sees the connection end (GOAWAY, close_notify) and exits.
                _ = try await client.waitForExit(timeout: .seconds(10))
                await client.kill()
            }
        }

        @Test func peerThatStopsAnsweringIsDeclaredDeadAfterTwoKeepaliveIntervals() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter(keepalive: .milliseconds(200)))
                let client = try OpenSSLClient(port: server.port, arguments: ["-alpn", "rsup/1"])
                // A valid HELLO, then silence: s_client never answers PING with PONG.
                client.write(try frames([.hello(Hello(role: .device, nodeName: "silent", keepaliveMilliseconds: 100))]))
                let serverRecorder = try await server.link().recorder
                let parameters = try await serverRecorder.waitForOpen()
                #expect(parameters.keepaliveInterval == .milliseconds(200))
                let clock = ContinuousClock()
                let opened = clock.now
                let reason = try await serverRecorder.waitForClose()
                let elapsed = clock.now - opened
                guard case .keepaliveTimeout(let silent) = reason else {
                    Issue.record("expected a keepalive timeout, got \(reason)")
                    await client.kill()
                    return
                }
                #expect(silent >= .milliseconds(400))
                #expect(reason.reasonCode == .connectionLost)
                #expect(elapsed < .seconds(8))
                await client.kill()
            }
        }

        /// s_client copies what it reads to a pipe nobody reads: once the pipe and the kernel's socket buffers are
        /// full it stops reading, and our sender's queue must hit its cap instead of growing without bound.
        @Test func peerThatStopsReadingIsDisconnectedWithWriteBufferFull() async throws {
            try await withTransport { fixture in
                var settings = LinkSettings.supporter()
                settings.maxBufferedBytes = 64 << 10
                let server = try fixture.startServer(settings: settings)
                let client = try OpenSSLClient(port: server.port, arguments: ["-alpn", "rsup/1"], captureOutput: true)
                client.write(try frames([.hello(Hello(role: .device, nodeName: "never-reads"))]))
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()

                // Send ~16 KB frames from the loop thread until the link gives up (at most 512 MiB).
                let frame = Message.register(
                    Register(sessionCode: "flood", apiToken: "t", capabilities: TLSLinkTests.features(count: 4000, seed: 9)))
                let outcome = await onLoop(serverLink.loop) { () -> (sentBytes: Int, maxQueued: Int, error: TransportError?) in
                    var sent = 0
                    var maxQueued = 0
                    while sent < 512 << 20 {
                        do throws(TransportError) {
                            try serverLink.send(frame)
                        } catch {
                            return (sent, maxQueued, error)
                        }
                        sent += 16_000
                        maxQueued = max(maxQueued, serverLink.connection.bufferedByteCount)
                    }
                    return (sent, maxQueued, nil)
                }
                #expect(outcome.error?.kind == .writeBufferFull, "\(String(describing: outcome.error))")
                // What the kernel and s_client hold is a few MiB; what we hold is bounded by the cap plus a frame.
                #expect(outcome.sentBytes < 256 << 20)
                #expect(outcome.maxQueued <= settings.maxBufferedBytes + 16_100)
                let reason = try await serverRecorder.waitForClose()
                #expect(reason.transportError?.kind == .writeBufferFull)
                #expect(reason.reasonCode == .connectionLost)
                #expect {
                    try serverLink.send(frame)
                } throws: { ($0 as? TransportError)?.kind == .closed }
                await client.kill()
            }
        }

        /// Writing to a connection the peer has closed raises SIGPIPE (after the peer's RST) in a process that does
        /// not handle it: the transport must report connection_reset, not kill the process.
        @Test func writingToAPeerThatClosedEndsTheLinkWithoutKillingTheProcess() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, _) = try await fixture.dial(server)
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()
                // Hold the server's loop so it cannot notice the client's FIN before it writes.
                let clientGone = DispatchSemaphore(value: 0)
                let frame = Message.sessionEnd(SessionEnd(reason: .endedBySupporter, text: "are you there?"))
                let result = Task {
                    await onLoop(serverLink.loop) { () -> TransportError? in
                        clientGone.wait()
                        // Sends until the client's kernel has answered with RST and a send fails.
                        var failure: TransportError?
                        _ = waitUntilBlocking {
                            do throws(TransportError) { try serverLink.send(frame) } catch { failure = error }
                            return failure != nil
                        }
                        return failure
                    }
                }
                await onLoop(link.loop) { link.connection.abort(TransportError(.closed, "the test pulled the plug")) }
                clientGone.signal()
                let error = await result.value
                #expect(error != nil)
                let reason = try await serverRecorder.waitForClose()
                let kind = reason.transportError?.kind
                #expect(kind == .connectionReset || kind == .uncleanShutdown, "\(reason)")
            }
        }
    }
}
