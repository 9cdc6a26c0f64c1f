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

        @Test func pausedLinkDeliversNothingUntilResumedThenEverythingInOrder() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, _) = try await fixture.dial(server)
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()
                await onLoop(serverLink.loop) { serverLink.pauseReading() }

                let sent = Self.numbered(500)
                for message in sent { try link.send(message) }
                // The peer keeps sending; give the bytes time to arrive and be (not) read.
                try await Task.sleep(for: .milliseconds(600))
                #expect(serverRecorder.messages.isEmpty)
                #expect(!serverLink.isClosed)

                serverLink.resumeReading()
                #expect(try await serverRecorder.waitForMessages(sent.count) == sent)
                #expect(serverRecorder.callsOffLoop == 0)
            }
        }

        @Test func pausingInsideDeliveryHoldsBackFramesAlreadyReadInTheSameChunk() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, _) = try await fixture.dial(server)
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()
                let pauser = PausingDelegate(recorder: serverRecorder)
                serverLink.delegate = pauser

                // Twenty frames in one TLS record: one read hands all of them to the link's decoder at once.
                let sent = Self.numbered(20)
                let bytes = try frames(sent)
                await onLoop(link.loop) { try? link.connection.write(bytes) }
                _ = try await serverRecorder.waitForMessages(1)
                try await Task.sleep(for: .milliseconds(300))
                #expect(serverRecorder.messages == [sent[0]])

                serverLink.resumeReading()
                #expect(try await serverRecorder.waitForMessages(sent.count) == sent)
                serverLink.delegate = serverRecorder  // the fixture's tear-down waits for its close
                withExtendedLifetime(pauser) {}
            }
        }

        @Test func pausedLinkOutlivesManyKeepaliveIntervalsAndResumesNormally() async throws {
            try await withTransport { fixture in
                let interval = Duration.milliseconds(200)
                let server = try fixture.startServer(settings: .supporter(keepalive: interval))
                let (link, recorder) = try await fixture.dial(server, settings: .device(keepalive: interval))
                let (serverLink, serverRecorder) = try await server.link()
                _ = try await serverRecorder.waitForOpen()
                serverLink.pauseReading()
                // Five intervals: without the paused link's own PINGs the device would declare it dead after two, and
                // without suspending its dead-peer check the paused link would close the device.
                try await Task.sleep(for: interval * 5)
                #expect(recorder.closeReason == nil, "\(String(describing: recorder.closeReason))")
                #expect(serverRecorder.closeReason == nil, "\(String(describing: serverRecorder.closeReason))")

                serverLink.resumeReading()
                let message = Message.sessionEnd(SessionEnd(reason: .endedByDevice))
                try link.send(message)
                #expect(try await serverRecorder.waitForMessages(1) == [message])
                try await Task.sleep(for: interval * 4)
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
