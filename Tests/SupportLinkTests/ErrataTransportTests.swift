// The transport's share of the errata of SPEC 1.0.1 (§14), over real TLS on loopback: a frame cut short by the peer's
// close_notify (no. 1), IGNORABLE frames before HELLO (no. 2), the keepalive timeout's close_notify (no. 11), and
// the handshake refused without `rsup/1` (no. 12).
import Foundation
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities

extension TransportIntegration {
    @Suite struct ErrataTransportTests {
        /// How a device's stream is cut short before its close_notify.
        enum Cut: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case oneHeaderByte, sevenHeaderBytes, headerOnly, shortPayload
            var testDescription: String { rawValue }

            /// The bytes of an incomplete REGISTER frame, and the error they leave.
            func bytes() throws -> ([UInt8], WireError.Code) {
                let frame = try frames([.register(Register(sessionCode: "123-456-789", apiToken: "token"))])
                switch self {
                case .oneHeaderByte: return (Array(frame.prefix(1)), .truncatedHeader)
                case .sevenHeaderBytes: return (Array(frame.prefix(7)), .truncatedHeader)
                case .headerOnly: return (Array(frame.prefix(8)), .truncatedPayload)
                case .shortPayload: return (Array(frame.dropLast(3)), .truncatedPayload)
                }
            }
        }

        private static func goAwayReason(_ message: Message?) -> ReasonCode? {
            if case .goAway(let goAway) = message { goAway.reason } else { nil }
        }

        /// The HELLO a dialed `.device()` link sends first: the offset of whatever follows it.
        private static var deviceHelloLength: Int {
            get throws {
                // The fixture's device announces the 1.1 extensions (LinkSettings' default).
                try frames([
                    .hello(
                        Hello(
                            role: .device, nodeName: "test-device", features: ProtocolExtensions.all.announcement,
                            keepaliveMilliseconds: 15_000))
                ]).count
            }
        }

        /// Errata no. 1: the receiver answers the cut frame with GOAWAY `malformed_frame` (SPEC §10.1 text) after the
        /// peer's close_notify, then closes cleanly with its own close_notify.
        @Test(arguments: Cut.allCases)
        func frameCutShortByCloseNotifyGetsGoAwayMalformedFrame(_ cut: Cut) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server)
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()
                let (bytes, code) = try cut.bytes()
                // A peer that writes part of a frame, then closes TLS cleanly without GOAWAY.
                await onLoop(link.loop) {
                    try? link.connection.write(bytes)
                    link.connection.close()
                }
                let helloLength = try Self.deviceHelloLength
                let text = "\(code.name) offset \(helloLength)"
                // The device, still reading after its close_notify, hears why.
                #expect(try await recorder.waitForClose() == .peerWentAway(.malformedFrame, text))
                let serverReason = try await serverRecorder.waitForClose()
                #expect(serverReason.reasonCode == .malformedFrame, "\(serverReason)")
                guard case .protocolError(_, let detail) = serverReason else {
                    Issue.record("closed for another reason: \(serverReason)")
                    return
                }
                #expect(detail.hasPrefix("\(code.name) at offset \(helloLength)"), "\(detail)")
                // Both close_notify went out: a clean end on the server side.
                #expect(await onLoop(serverLink.loop) { serverLink.transportCloseError } == nil)
                #expect(serverRecorder.messages.isEmpty)
            }
        }

        /// Errata no. 1, from outside our stack: the GOAWAY and then the server's close_notify reach a plain OpenSSL
        /// client after its own close_notify.
        @Test func externalPeerReadsTheGoAwayAfterItsCloseNotify() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let port = server.port
                let (messages, end) = try await blockingAttempt { () throws(RawTLSPeer.Failure) -> ([Message], RawTLSPeer.End?) in
                    let peer = try RawTLSPeer(port: port)
                    let hello = try! frames([.hello(Hello(role: .device, nodeName: "raw"))])
                    peer.send(hello + [0x01, 0x10, 0x00])
                    _ = peer.readMessages(1, timeout: .seconds(10))  // HELLO_ACK
                    peer.sendCloseNotify()
                    return (peer.readMessages(2, timeout: .seconds(10)), peer.readUntilEnd(timeout: .seconds(10)))
                }.get()
                let helloLength = try frames([.hello(Hello(role: .device, nodeName: "raw"))]).count
                #expect(
                    messages.last
                        == .goAway(GoAway(reason: .malformedFrame, text: "truncated_header offset \(helloLength)")),
                    "\(messages)")
                #expect(end == .closeNotify)
            }
        }

        /// Errata no. 2: an undefined IGNORABLE frame before HELLO is discarded; the HELLO after it opens the link.
        @Test func ignorableFrameBeforeHelloIsDiscarded() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let port = server.port
                let messages = try await blockingAttempt { () throws(RawTLSPeer.Failure) -> [Message] in
                    let peer = try RawTLSPeer(port: port)
                    // Type 0x06 with the IGNORABLE flag, a 2-byte payload; then HELLO.
                    let ignorable: [UInt8] = [0x01, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x02, 0x76, 0x32]
                    peer.send(ignorable + (try! frames([.hello(Hello(role: .device, nodeName: "v2-device"))])))
                    return peer.readMessages(1, timeout: .seconds(10))
                }.get()
                guard case .helloAck = messages.first else {
                    Issue.record("no HELLO_ACK: \(messages)")
                    return
                }
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForOpen().peerName == "v2-device")
            }
        }

        /// Errata no. 2: discarded frames do not extend the HELLO timer.
        @Test func ignorableFramesDoNotExtendTheHelloTimer() async throws {
            try await withTransport { fixture in
                var settings = LinkSettings.supporter()
                settings.helloTimeout = .milliseconds(400)
                let server = try fixture.startServer(settings: settings)
                let port = server.port
                let (messages, end) = try await blockingAttempt { () throws(RawTLSPeer.Failure) -> ([Message], RawTLSPeer.End?) in
                    let peer = try RawTLSPeer(port: port)
                    let ignorable: [UInt8] = [0x01, 0x20, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]
                    for _ in 0..<60 where peer.end == nil {
                        peer.send(ignorable)
                        _ = peer.readUntilEnd(timeout: .milliseconds(100))
                    }
                    return (peer.messages, peer.end)
                }.get()
                #expect(end != nil, "still open after 6 s of IGNORABLE frames")
                #expect(Self.goAwayReason(messages.first) == .protocolError, "\(messages)")
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForClose() == .helloTimeout)
            }
        }

        /// Errata no. 11: a node whose peer stays silent for two intervals sends GOAWAY `keepalive_timeout` and a
        /// close_notify, then closes at once; a peer that was only slow sees a clean end.
        @Test func keepaliveTimeoutSendsGoAwayAndCloseNotify() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter(keepalive: .milliseconds(200)))
                let port = server.port
                let (messages, end) = try await blockingAttempt { () throws(RawTLSPeer.Failure) -> ([Message], RawTLSPeer.End?) in
                    let peer = try RawTLSPeer(port: port)
                    peer.send(.hello(Hello(role: .device, nodeName: "sleepy", keepaliveMilliseconds: 100)))
                    // Reads, never answers: no PONG, nothing at all.
                    return (peer.readMessages(Int.max, timeout: .seconds(10)), peer.end)
                }.get()
                let (_, serverRecorder) = try await server.link()
                guard case .keepaliveTimeout = try await serverRecorder.waitForClose() else {
                    Issue.record("closed for another reason: \(String(describing: serverRecorder.closeReason))")
                    return
                }
                #expect(Self.goAwayReason(messages.last) == .keepaliveTimeout, "\(messages)")
                #expect(end == .closeNotify)
            }
        }

        /// Errata no. 12: a ClientHello without `rsup/1` is refused in the handshake with alert 120, whether it offers
        /// other protocols or no ALPN extension at all.
        @Test(arguments: [nil, ["h2"], ["http/1.1", "h2"]] as [[String]?])
        func handshakeWithoutOurALPNIsRefusedWithAlert120(offered: [String]?) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let port = server.port
                let outcome = await blockingWork { () -> String in
                    do throws(RawTLSPeer.Failure) {
                        let peer = try RawTLSPeer(port: port, alpn: offered)
                        return "handshake completed, selected \(peer.selectedProtocol ?? "nothing")"
                    } catch {
                        return error.description
                    }
                }
                #expect(outcome.contains("alert no application protocol"), "\(outcome)")
                let failure = try await eventually("the handshake failure report") {
                    server.handshakeFailures.withLock { $0.first }
                }
                #expect(failure.reason.contains("no application protocol"), "\(failure.reason)")
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForClose().transportError?.kind == .handshakeFailed)
                #expect(serverRecorder.parameters == nil)
            }
        }

        @Test func handshakeOfferingOurALPNAmongOthersSucceeds() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let port = server.port
                let selected = try await blockingAttempt { () throws(RawTLSPeer.Failure) -> String? in
                    try RawTLSPeer(port: port, alpn: ["h2", "rsup/1"]).selectedProtocol
                }.get()
                #expect(selected == "rsup/1")
            }
        }
    }
}

/// Runs blocking work that may fail on its own thread.
func blockingAttempt<T: Sendable>(_ body: @escaping @Sendable () throws(RawTLSPeer.Failure) -> T) async
    -> Result<T, RawTLSPeer.Failure>
{
    await blockingWork { () -> Result<T, RawTLSPeer.Failure> in Result(catching: body) }
}
