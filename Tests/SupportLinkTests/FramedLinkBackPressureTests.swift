import Foundation
import Synchronization
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities

extension TransportIntegration {
    /// pauseReading / resumeReading: nothing is delivered while paused, everything in order after, keepalive survives.
    @Suite struct FramedLinkBackPressureTests {
        private static func numbered(_ count: Int) -> [Message] {
            (0..<count).map { .register(Register(sessionCode: "code-\($0)", apiToken: "t")) }
        }

        // These three run on an embedded loop (virtual time): a turn of the loop reads everything loopback has
        // delivered, so "nothing was delivered while paused" is a fact after a turn, not a guess after a wall-clock wait.

        @Test func pausedLinkDeliversNothingUntilResumedThenEverythingInOrder() async throws {
            try await VirtualTimeLinkTests.withPair(keepalive: .seconds(15)) { pair in
                let (link, serverLink, serverRecorder) = (pair.client, pair.serverLink, pair.serverRecorder)
                serverLink.pauseReading()
                pair.loop.advance()

                let sent = Self.numbered(500)
                for message in sent { try link.send(message) }
                // The client's turns write every byte, which loopback delivers at once; a second of virtual time
                // passes, with turns that would have read them were reading not paused.
                pair.advance(by: .seconds(1))
                #expect(serverRecorder.messages.isEmpty)
                #expect(!serverLink.isClosed)

                serverLink.resumeReading()
                #expect(pair.advance(until: { serverRecorder.messages.count >= sent.count }))
                #expect(serverRecorder.messages == sent)
                #expect(serverRecorder.callsOffLoop == 0)
            }
        }

        @Test func pausingInsideDeliveryHoldsBackFramesAlreadyReadInTheSameChunk() async throws {
            try await VirtualTimeLinkTests.withPair(keepalive: .seconds(15)) { pair in
                let (link, serverLink, serverRecorder) = (pair.client, pair.serverLink, pair.serverRecorder)
                let pauser = PausingDelegate(recorder: serverRecorder)
                serverLink.delegate = pauser

                // Twenty frames in one TLS record: one read hands all of them to the link's decoder at once.
                let sent = Self.numbered(20)
                let bytes = try frames(sent)
                pair.loop.execute { try? link.connection.write(bytes) }
                #expect(pair.advance(until: { !serverRecorder.messages.isEmpty }))
                // Turns and virtual time that would deliver the other nineteen were the link not paused.
                pair.advance(by: .seconds(1))
                #expect(serverRecorder.messages == [sent[0]])

                serverLink.resumeReading()
                #expect(pair.advance(until: { serverRecorder.messages.count >= sent.count }))
                #expect(serverRecorder.messages == sent)
                serverLink.delegate = serverRecorder
                withExtendedLifetime(pauser) {}
            }
        }

        @Test func pausedLinkOutlivesManyKeepaliveIntervalsAndResumesNormally() async throws {
            let interval = Duration.milliseconds(200)
            try await VirtualTimeLinkTests.withPair(keepalive: interval) { pair in
                let (link, recorder, serverLink, serverRecorder) =
                    (pair.client, pair.clientRecorder, pair.serverLink, pair.serverRecorder)
                serverLink.pauseReading()
                // Fifty intervals of virtual time: without the paused link's own PINGs the device would declare it
                // dead after two, and without suspending its dead-peer check the paused link would close the device.
                pair.advance(by: interval * 50)
                #expect(recorder.closeReason == nil, "\(String(describing: recorder.closeReason))")
                #expect(serverRecorder.closeReason == nil, "\(String(describing: serverRecorder.closeReason))")

                serverLink.resumeReading()
                let message = Message.sessionEnd(SessionEnd(reason: .endedByDevice))
                try link.send(message)
                #expect(pair.advance(until: { serverRecorder.messages == [message] }))
                pair.advance(by: interval * 20)
                #expect(recorder.closeReason == nil)
                #expect(serverRecorder.closeReason == nil)
            }
        }
    }

    /// The HELLO keepalive cap of the responder (LinkSettings.maxPeerKeepaliveInterval).
    @Suite struct KeepaliveCapTests {
        @Test func helloProposingMoreThanTheDefaultCapIsRefusedWithATextNamingIt() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let error = await fixture.dialExpectingFailure(
                    server, context: try fixture.clientContext(), settings: .device(keepalive: .seconds(121)))
                #expect(error?.description.contains("protocol_error") == true, "\(String(describing: error))")
                #expect(error?.description.contains("at most 120000 ms") == true, "\(String(describing: error))")
                let reason = try await server.link().recorder.waitForClose()
                guard case .protocolError(.protocolError, let text) = reason else {
                    Issue.record("closed for \(reason)")
                    return
                }
                #expect(text.contains("121000 ms"))
            }
        }

        @Test(arguments: [(30, true), (31, false)])
        func aConfiguredCapAcceptsUpToItAndRefusesAbove(deviceSeconds: Int, accepted: Bool) async throws {
            try await withTransport { fixture in
                var settings = LinkSettings.supporter()
                settings.maxPeerKeepaliveInterval = .seconds(30)
                let server = try fixture.startServer(settings: settings)
                let error = await fixture.dialExpectingFailure(
                    server, context: try fixture.clientContext(), settings: .device(keepalive: .seconds(deviceSeconds)))
                #expect((error == nil) == accepted, "\(String(describing: error))")
                if !accepted { #expect(error?.description.contains("at most 30000 ms") == true) }
            }
        }
    }
}

/// Records like a LinkRecorder and pauses reading when the first message arrives.
private final class PausingDelegate: FramedLinkDelegate {
    let recorder: LinkRecorder
    init(recorder: LinkRecorder) { self.recorder = recorder }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {
        recorder.linkDidOpen(link, parameters: parameters)
    }

    func link(_ link: FramedLink, didReceive message: Message) {
        recorder.link(link, didReceive: message)
        if recorder.messages.count == 1 { link.pauseReading() }
    }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {
        recorder.linkDidClose(link, reason: reason)
    }
}
