import Foundation
import Synchronization
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import SupportVocabulary

extension TransportIntegration {
    /// A device dialing a supporter: HELLO, frames both ways, a long stream, keepalive, closing.
    @Suite struct TLSLinkTests {
        @Test func helloExchangeGivesBothSidesThePeersNameAndTheLargerKeepalive() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter("node-7", keepalive: .seconds(20)))
                let (_, recorder) = try await fixture.dial(
                    server, settings: .device("Alice's phone", keepalive: .seconds(30)))
                let clientParameters = try #require(recorder.parameters)
                #expect(clientParameters.peerName == "node-7")
                #expect(clientParameters.peerRole == .supporter)
                #expect(clientParameters.version == 1)
                #expect(clientParameters.keepaliveInterval == .seconds(30))
                let (_, serverRecorder) = try await server.link()
                let serverParameters = try await serverRecorder.waitForOpen()
                #expect(serverParameters.peerName == "Alice's phone")
                #expect(serverParameters.peerRole == .device)
                #expect(serverParameters.keepaliveInterval == .seconds(30))
            }
        }

        @Test(arguments: [(10, 25), (25, 10)])
        func effectiveKeepaliveIsTheLargerOfBoth(deviceSeconds: Int, supporterSeconds: Int) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter(keepalive: .seconds(supporterSeconds)))
                let (_, recorder) = try await fixture.dial(server, settings: .device(keepalive: .seconds(deviceSeconds)))
                let expected = Duration.seconds(max(deviceSeconds, supporterSeconds))
                #expect(recorder.parameters?.keepaliveInterval == expected)
                #expect(try await server.link().recorder.waitForOpen().keepaliveInterval == expected)
            }
        }

        @Test func sameRoleOnBothSidesIsRefused() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter())
                let error = await fixture.dialExpectingFailure(
                    server, context: try fixture.clientContext(), settings: .supporter("another-supporter"))
                #expect(error != nil)
                #expect(error?.description.contains("role_mismatch") == true, "\(String(describing: error))")
                let serverReason = try await server.link().recorder.waitForClose()
                #expect(serverReason.reasonCode == .roleMismatch)
            }
        }

        @Test func sessionFramesFlowBothWaysInOrderOnTheLoopThread() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server)
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()

                let register = Message.register(
                    Register(sessionCode: "123-456", apiToken: "token", capabilities: [Feature(.screenShare), Feature(.voip, version: 2)]))
                let upstream: [Message] = [register, .voipState(VoIPState(state: .started)), .sessionEnd(SessionEnd(reason: .endedByDevice))]
                for message in upstream { try link.send(message) }
                let downstream: [Message] = [
                    .sessionStarted(SessionStarted(requestID: 7)), .sessionEnd(SessionEnd(reason: .endedBySupporter, text: "bye")),
                ]
                for message in downstream { try serverLink.send(message) }

                #expect(try await serverRecorder.waitForMessages(upstream.count) == upstream)
                #expect(try await recorder.waitForMessages(downstream.count) == downstream)
                #expect(recorder.callsOffLoop == 0)
                #expect(serverRecorder.callsOffLoop == 0)
            }
        }

        @Test func sendingFromTheLoopThreadWorksToo() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, _) = try await fixture.dial(server)
                let serverRecorder = try await server.link().recorder
                let result = await onLoop(link.loop) { () -> TransportError? in
                    do throws(TransportError) {
                        try link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
                        return nil
                    } catch { return error }
                }
                #expect(result == nil)
                #expect(try await serverRecorder.waitForMessages(1) == [.sessionEnd(SessionEnd(reason: .endedByDevice))])
            }
        }

        @Test func aFrameBreakingAWireLimitThrowsAtSend() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, _) = try await fixture.dial(server)
                let tooLongCode = String(repeating: "1", count: WireLimits.sessionCodeLength + 1)
                #expect {
                    try link.send(.register(Register(sessionCode: tooLongCode, apiToken: "t")))
                } throws: { ($0 as? TransportError)?.kind == .protocolViolation }
                #expect(!link.isClosed)
            }
        }

        /// The supporter announced the default 16 KiB maximum: a larger frame must be refused to the caller, not
        /// silently dropped and not sent (the peer would close the link with frame_too_large).
        @Test func aFrameOverThePeersMaximumThrowsAtSendAndTheLinkStaysUsable() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(settings: .supporter())
                let (link, _) = try await fixture.dial(server)
                let serverRecorder = try await server.link().recorder
                let big = Message.register(
                    Register(sessionCode: "big", apiToken: "t", capabilities: Self.features(count: 8000, seed: 1)))
                #expect {
                    try link.send(big)
                } throws: { ($0 as? TransportError)?.kind == .protocolViolation }
                let small = Message.sessionEnd(SessionEnd(reason: .endedByDevice))
                try link.send(small)
                #expect(try await serverRecorder.waitForMessages(1) == [small])
                #expect(serverRecorder.closeReason == nil)
            }
        }

        /// A maximum below the wire's 16 KiB floor is announced as 16 KiB, so frames up to that must be accepted.
        @Test func maxFrameSizeBelowTheWireMinimumStillAcceptsWhatWasAnnounced() async throws {
            try await withTransport { fixture in
                var supporter = LinkSettings.supporter()
                supporter.maxFrameSize = 1000
                let server = try fixture.startServer(settings: supporter)
                let (link, recorder) = try await fixture.dial(server)
                #expect(recorder.parameters?.peerMaxFrameSize == WireLimits.defaultMaxFrameSize)
                let serverRecorder = try await server.link().recorder
                let message = Message.register(
                    Register(sessionCode: "10k", apiToken: "t", capabilities: Self.features(count: 2500, seed: 3)))
                try link.send(message)
                #expect(try await serverRecorder.waitForMessages(1) == [message])
                #expect(serverRecorder.closeReason == nil)
            }
        }

        static func features(count: Int, seed: UInt64) -> FeatureSet {
            var random = SplitMix64(state: seed)
            var set = FeatureSet()
            for id in 0..<count {
                set.insert(Feature(Feature.ID(rawValue: UInt16(id + 1)), version: UInt16.random(in: 1...UInt16.max, using: &random)))
            }
            return set
        }

        /// 16 MiB of REGISTER frames of random sizes (0 to ~64 KiB), paced by what the receiver has taken so the
        /// sender's 4 MiB cap is never the limit, all arriving intact and in order.
        @Test func sixteenMebibytesOfRandomSizedFramesArriveIntactAndInOrder() async throws {
            try await withTransport { fixture in
                var supporter = LinkSettings.supporter()
                supporter.maxFrameSize = WireLimits.largestMaxFrameSize
                let server = try fixture.startServer(settings: supporter)
                let (link, _) = try await fixture.dial(server)
                let (_, serverRecorderForOpen) = try await server.link()
                _ = try await serverRecorderForOpen.waitForOpen()
                // A digest-only receiver: keeping 16 MiB of decoded features around would only slow the test.
                let receiver = StreamDigest()
                let serverLink = try await server.link().link
                serverLink.delegate = receiver
                defer { serverLink.delegate = serverRecorderForOpen }

                let target = 16 << 20
                var random = SplitMix64(state: 0x5EED)
                var sent = StreamDigest.Digest()
                var index = 0
                while sent.bytes < target {
                    let count = Int.random(in: 0...16_000, using: &random)
                    let message = Message.register(
                        Register(
                            sessionCode: String(index), apiToken: "token",
                            capabilities: Self.features(count: count, seed: UInt64(index))))
                    try link.send(message)
                    sent.add(message, index: index)
                    index += 1
                    // Keep at most ~2 MiB in flight.
                    if sent.bytes - receiver.digest.bytes > 2 << 20 {
                        let want = sent.bytes - (1 << 20)
                        _ = try await eventually("the receiver to catch up", timeout: .seconds(60)) {
                            receiver.digest.bytes >= want ? true : nil
                        }
                    }
                }
                let final = sent
                let received = try await eventually("all \(index) frames", timeout: .seconds(60)) {
                    receiver.digest.count == final.count ? receiver.digest : nil
                }
                #expect(received == final)
                #expect(receiver.outOfOrder == 0)
                #expect(final.bytes >= target)
                #expect(!link.isClosed)
            }
        }

        @Test func idleLinkWithShortKeepaliveStaysOpenBecausePingsFlow() async throws {
            // Virtual time on an embedded loop: the PINGs and PONGs cross at their virtual times, however loaded the
            // machine (the real-time keepalive stays covered by the liveness tests of the nodes).
            try await VirtualTimeLinkTests.withPair(keepalive: .milliseconds(200)) { pair in
                let (link, recorder, serverRecorder) = (pair.client, pair.clientRecorder, pair.serverRecorder)
                #expect(recorder.parameters?.keepaliveInterval == .milliseconds(200))
                // Without PING/PONG each side would declare the other dead after 400 ms.
                pair.advance(by: .milliseconds(1500))
                #expect(recorder.closeReason == nil)
                #expect(serverRecorder.closeReason == nil)
                #expect(!link.isClosed)
                try link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
                #expect(pair.advance(until: { serverRecorder.messages.count == 1 }))
            }
        }

        @Test func framesSentRightBeforeCloseArriveBeforeThePeerSeesTheClose() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server)
                let serverRecorder = try await server.link().recorder
                let messages = (0..<200).map {
                    Message.register(Register(sessionCode: "code-\($0)", apiToken: "token"))
                }
                for message in messages { try link.send(message) }
                link.close()

                let serverReason = try await serverRecorder.waitForClose()
                #expect(serverReason == .peerWentAway(.normalClose, nil))
                #expect(serverRecorder.messages == messages)
                #expect(serverRecorder.callsAfterClose == 0)
                #expect(try await recorder.waitForClose() == .local(.normalClose))
            }
        }

        @Test func closeWithAReasonAndTextReachesThePeer() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (_, recorder) = try await fixture.dial(server)
                let serverLink = try await server.link().link
                serverLink.close(reason: .goingAway, text: "node restarting")
                #expect(try await recorder.waitForClose() == .peerWentAway(.goingAway, "node restarting"))
            }
        }

        @Test func sendAfterCloseThrowsClosed() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server)
                link.close()
                #expect(link.isClosed)
                #expect {
                    try link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
                } throws: { ($0 as? TransportError)?.kind == .closed }
                _ = try await recorder.waitForClose()
                #expect {
                    try link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
                } throws: { ($0 as? TransportError)?.kind == .closed }
                // Closing twice is harmless.
                link.close()
                #expect(recorder.callsAfterClose == 0)
            }
        }

        @Test func peerThatWentAwayIsReportedAndItsSendsThrowClosed() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server)
                try await server.link().link.close()
                _ = try await recorder.waitForClose()
                #expect(link.isClosed)
                #expect {
                    try link.send(.sessionEnd(SessionEnd(reason: .endedByDevice)))
                } throws: { ($0 as? TransportError)?.kind == .closed }
            }
        }

        @Test func manyLinksToOneListenerAreIndependent() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                var clients: [(FramedLink, LinkRecorder)] = []
                for index in 0..<8 { clients.append(try await fixture.dial(server, settings: .device("device-\(index)"))) }
                _ = try await server.link(7)
                clients[3].0.close()
                _ = try await clients[3].1.waitForClose()
                for (offset, client) in clients.enumerated() where offset != 3 {
                    try client.0.send(.sessionEnd(SessionEnd(reason: .endedByDevice, text: "from \(offset)")))
                }
                for (link, recorder) in server.links {
                    let parameters = try await recorder.waitForOpen()
                    if parameters.peerName == "device-3" {
                        #expect(try await recorder.waitForClose() == .peerWentAway(.normalClose, nil))
                    } else {
                        #expect(try await recorder.waitForMessages(1).count == 1)
                        #expect(!link.isClosed)
                    }
                }
            }
        }
    }
}

/// Receives the stream of the 16 MiB test: an order check and a running digest, nothing kept.
final class StreamDigest: FramedLinkDelegate {
    struct Digest: Equatable, Sendable {
        var count = 0
        var bytes = 0
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325

        private mutating func mix(_ value: UInt64) {
            hash = (hash ^ value) &* 0x0000_0100_0000_01B3
        }

        mutating func add(_ message: Message, index: Int) {
            guard case .register(let register) = message else {
                mix(0xDEAD)
                return
            }
            mix(UInt64(index))
            for byte in register.sessionCode.utf8 { mix(UInt64(byte)) }
            for feature in register.capabilities { mix(UInt64(feature.id.rawValue) << 16 | UInt64(feature.version)) }
            count += 1
            bytes += 8 + register.capabilities.count * 4 + register.sessionCode.utf8.count + 16
        }
    }

    private let state = Mutex((digest: Digest(), outOfOrder: 0))

    var digest: Digest { state.withLock { $0.digest } }
    var outOfOrder: Int { state.withLock { $0.outOfOrder } }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {}
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {}
    func link(_ link: FramedLink, didReceive message: Message) {
        state.withLock { state in
            let index = state.digest.count
            if case .register(let register) = message, register.sessionCode != String(index) { state.outOfOrder += 1 }
            state.digest.add(message, index: index)
        }
    }
}

