import COpenSSL  // the socket constants: once RawTLSPeer loads OpenSSL, they are seen through it
import Foundation
import Glibc
import Synchronization
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities

extension TransportIntegration {
    /// What a listener reports: failed handshakes (with OpenSSL's reason), exactly one linkDidClose per accepted link,
    /// closing at loop shutdown, and accepting again after running out of descriptors.
    @Suite struct TLSListenerTests {
        enum FailingPeer: String, CaseIterable, Sendable {
            case plaintextHTTP, notTLS, wrongALPN, noALPN, silent
        }

        /// Starts a peer that fails the handshake in the given way; returns what keeps it alive and its local port.
        private static func startFailingPeer(_ peer: FailingPeer, port: UInt16) throws -> (AnyObject, UInt16?) {
            switch peer {
            case .plaintextHTTP:
                let raw = try RawSocket(port: port)
                raw.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return (raw, SocketAddress.of(raw.fd, peer: false)?.port)
            case .notTLS:
                let raw = try RawSocket(port: port)
                raw.send("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
                return (raw, SocketAddress.of(raw.fd, peer: false)?.port)
            case .wrongALPN:
                return (try OpenSSLClient(port: port, arguments: ["-alpn", "http/1.1"]), nil)
            case .noALPN:
                // SPEC §2, errata 1.0.1 no. 12: no ALPN extension at all is refused in the handshake too.
                return (try OpenSSLClient(port: port, arguments: []), nil)
            case .silent:
                let raw = try RawSocket(port: port)
                return (raw, SocketAddress.of(raw.fd, peer: false)?.port)
            }
        }

        private static func expectedWords(_ peer: FailingPeer) -> String {
            switch peer {
            case .plaintextHTTP: "plaintext HTTP"
            case .notTLS: "wrong version number"
            case .wrongALPN, .noALPN: "no application protocol"
            case .silent: "timeout"
            }
        }

        @Test(arguments: FailingPeer.allCases)
        func failedHandshakeIsReportedWithTheReasonAndClosesTheLinkOnce(peer: FailingPeer) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext { $0.handshakeTimeout = .milliseconds(300) })
                let (keepAlive, localPort) = try Self.startFailingPeer(peer, port: server.port)
                let failure = try await eventually("the handshake failure report") {
                    server.handshakeFailures.withLock { $0.first }
                }
                #expect(failure.reason.contains(Self.expectedWords(peer)), "\(failure.reason)")
                #expect(failure.address?.host == "127.0.0.1")
                if let localPort { #expect(failure.address?.port == localPort) }

                let (link, recorder) = try await server.link()
                _ = try await recorder.waitForClose()
                // Past the 300 ms handshake deadline again: a timer the link left armed would have fired by then.
                #expect(await loopTimerFires(on: link.loop, after: .milliseconds(400)))
                #expect(recorder.events.count == 1, "only linkDidClose: \(recorder.events)")
                #expect(recorder.callsAfterClose == 0)
                #expect(server.handshakeFailures.withLock { $0.count } == 1)
                if let client = keepAlive as? OpenSSLClient { await client.kill() }
                withExtendedLifetime(keepAlive) {}
            }
        }

        @Test func successfulLinksAndLinksWithoutHelloAreNotHandshakeFailuresButCloseOnceToo() async throws {
            try await withTransport { fixture in
                var settings = LinkSettings.supporter()
                settings.helloTimeout = .milliseconds(300)
                let server = try fixture.startServer(settings: settings)
                // TLS up, no HELLO: a HELLO timeout, not a handshake failure.
                let silentTLS = try OpenSSLClient(port: server.port, arguments: ["-alpn", "rsup/1"])
                let (hellolessLink, helloless) = try await server.link(0)
                #expect(try await helloless.waitForClose() == .helloTimeout)
                await silentTLS.kill()
                // A normal link, closed by the client.
                let (link, _) = try await fixture.dial(server)
                let opened = try await server.link(1).recorder
                _ = try await opened.waitForOpen()
                link.close()
                _ = try await opened.waitForClose()
                // Past the 300 ms HELLO deadline again: a timer either link left armed would have fired by then.
                #expect(await loopTimerFires(on: hellolessLink.loop, after: .milliseconds(400)))
                for recorder in [helloless, opened] {
                    let closes = recorder.events.filter { if case .closed = $0 { true } else { false } }
                    #expect(closes.count == 1, "\(recorder.events)")
                    #expect(recorder.callsAfterClose == 0)
                }
                #expect(server.handshakeFailures.withLock { $0.isEmpty })
            }
        }

        @Test func streamListenerReportsHandshakeFailuresAndClosesTheStreamOnce() async throws {
            try await withTransport { fixture in
                let failures = Locked<[String]>([])
                let recorder = StreamRecorder()
                let listener = try TLSListener(
                    host: "127.0.0.1", port: 0, context: fixture.serverContext(), group: fixture.serverGroup,
                    onHandshakeFailure: { _, reason in failures.withLock { $0.append(reason) } }
                ) { stream in
                    stream.delegate = recorder
                    return true
                }
                defer { listener.close() }
                let raw = try RawSocket(port: listener.localAddress.port)
                raw.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let reason = try await eventually("the failure report") { failures.withLock { $0.first } }
                #expect(reason.contains("plaintext HTTP"), "\(reason)")
                _ = try await eventually("streamDidClose") { recorder.closes.load(ordering: .relaxed) > 0 ? true : nil }
                // A loop timer 200 ms on: a second close queued or timed on that loop would have come by then.
                #expect(await loopTimerFires(on: fixture.serverGroup.loops[0], after: .milliseconds(200)))
                let closes = recorder.closes.load(ordering: .relaxed)
                #expect(closes == 1)
                raw.close()
            }
        }

        @Test func loopShutdownClosesEveryAcceptedLinkOnceAndTheListeningSocket() async throws {
            try await withTransport { fixture in
                let group = try EventLoopGroup(loopCount: 1)
                let accepted = Locked<[(FramedLink, LinkRecorder)]>([])
                let listener = try TLSListener(
                    host: "127.0.0.1", port: 0, context: fixture.serverContext(), settings: .supporter(), group: group
                ) { link in
                    let recorder = LinkRecorder()
                    link.delegate = recorder
                    accepted.withLock { $0.append((link, recorder)) }
                    return true
                }
                let port = listener.localAddress.port
                let midHandshake = try RawSocket(port: port)
                let recorder = LinkRecorder()
                let link = try await TLSDialer.connect(
                    host: "127.0.0.1", port: port, context: try fixture.clientContext(), settings: .device(),
                    loop: fixture.clientLoop, delegate: recorder)
                let links = try await eventually("two accepted links") { () -> [(FramedLink, LinkRecorder)]? in
                    let links = accepted.withLock { $0 }
                    return links.count == 2 ? links : nil
                }
                try group.shutdownAndWait()
                for (serverLink, serverRecorder) in links {
                    let closes = serverRecorder.events.compactMap { if case .closed(let reason) = $0 { reason } else { nil } }
                    #expect(closes.count == 1, "\(serverRecorder.events)")
                    #expect(closes.first?.transportError?.kind == .eventLoopShutDown)
                    #expect(serverLink.isTransportClosed)
                }
                // The listening socket was closed with its loop: nothing accepts there any more.
                #expect(throws: (any Error).self) { _ = try RawSocket(port: port) }
                _ = try await recorder.waitForClose()
                midHandshake.close()
                link.close()
                listener.close()  // after the loop stopped: nothing to do, and no double close
            }
        }

        // MARK: running out of descriptors

        static let childEnvironment = "RSUP_TEST_EMFILE_CHILD"
        static let childDone = "RSUP-EMFILE-CHILD-DONE"

        /// Lowers RLIMIT_NOFILE and exhausts descriptors: only in a child process of its own (the parent test below),
        /// since the limit is process-wide and would break tests running in parallel.
        @Test(.enabled(if: ProcessInfo.processInfo.environment[childEnvironment] != nil))
        func acceptResumesAfterDescriptorExhaustionInAChildProcess() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                _ = try await fixture.dial(server)  // warm: the TLS stack and the loops are up
                // A client socket made before exhaustion, connected after it (connect needs no new descriptor).
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                try #require(client >= 0)
                defer { close(client) }

                var saved = rlimit()
                getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
                var lowered = saved
                lowered.rlim_cur = rlim_t(openFileDescriptors().count + 64)
                try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
                var hoarded: [Int32] = []
                while true {
                    let fd = dup(0)
                    if fd < 0 { break }
                    hoarded.append(fd)
                }
                let clock = ContinuousClock()
                let exhaustedAt = clock.now
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = server.port.bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                // The listener cannot accept it: it pauses, and says so once per pause (two pauses waited for). A
                // blocking wait while exhausted: a task's sleep may need libdispatch to make a timerfd, which it cannot do
                // now (and then it traps).
                _ = waitUntilBlocking { server.acceptErrors.withLock { $0.count } >= 2 }
                let first = server.acceptErrors.withLock { $0.first }
                let reports = server.acceptErrors.withLock { $0.count }
                let pausesPossible = Int((clock.now - exhaustedAt) / TLSListener.exhaustionPause) + 2
                let acceptedWhileExhausted = server.links.count
                for fd in hoarded { close(fd) }
                setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)

                #expect(connected == 0)
                #expect(hoarded.count > 10, "descriptors were exhausted")
                #expect(first?.message.contains("out of file descriptors") == true, "\(String(describing: first))")
                #expect(reports >= 2 && reports <= pausesPossible, "\(reports) reports, at most \(pausesPossible)")
                #expect(acceptedWhileExhausted == 1, "nothing accepted while exhausted")
                // The waiting connection is accepted, and new links work.
                _ = try await server.link(1)
                let (_, recorder) = try await fixture.dial(server)
                #expect(recorder.parameters != nil)
                print(Self.childDone)
            }
        }

        @Test func acceptResumesAfterDescriptorExhaustion() async throws {
            var environment = ProcessInfo.processInfo.environment
            environment[Self.childEnvironment] = "1"
            var path = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/exe", &path, path.count - 1)
            try #require(length > 0)
            let executable = String(decoding: path[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let child = try ChildProcess(
                executable,
                ["--testing-library", "swift-testing", "--filter", "acceptResumesAfterDescriptorExhaustionInAChildProcess"],
                environment: environment, stdout: .pipe, stderr: .sameAsStdout)
            let output = await Task.detached { String(decoding: ChildProcess.readAll(child.stdoutFD), as: UTF8.self) }.value
            let status = await child.waitForExit(timeout: .seconds(90))
            #expect(status == 0, "\(output)")
            #expect(output.contains(Self.childDone), "the child did not run the scenario:\n\(output)")
        }
    }
}

/// Counts streamDidClose calls.
private final class StreamRecorder: TLSStreamDelegate {
    let closes = Atomic<Int>(0)
    func streamDidBecomeActive(_ stream: TLSStream) {}
    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {}
    func streamDidClose(_ stream: TLSStream, error: TransportError?) { closes.wrappingAdd(1, ordering: .relaxed) }
}
