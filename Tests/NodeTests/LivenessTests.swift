import DeviceNode
import SupporterNode
import TestSupport
import Testing
import SampleAppModel
import SupportSession
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

extension NodeIntegration {
    /// Keepalive and the lifetime of session objects.
    @Suite(.serialized) struct LivenessTests {
        @Test func silentLinkIsDeclaredDeadOnBothSidesWithinTwoIntervals() async throws {
            // 500 ms: short for a test, long enough that a loaded 2-core machine (other suites run in parallel) keeps
            // a healthy link alive.
            let harness = try NodeHarness(keepalive: .milliseconds(500))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(keepalive: .milliseconds(500), port: proxy.port)),
                code: code)
            #expect(await device.online())
            // Idle but alive: PINGs and PONGs cross the proxy; a dozen of them (sent only after an interval of
            // silence) keep it up well past two intervals.
            let before = proxy.relayedChunks
            #expect(await waitUntil { proxy.relayedChunks >= before + 12 })
            #expect(device.session.isJoined)
            #expect(harness.supporter.code(code)?.state == .online)
            let frozenAt = ContinuousClock.now
            proxy.freeze()
            let failure = await device.event { if case .error = $0 { true } else { false } }
            guard case .error(let reason) = failure else {
                Issue.record("the device never reported the dead link")
                return
            }
            // The device found the silence itself (connection_lost) or heard the supporter's GOAWAY first.
            #expect([.connectionLost, .keepaliveTimeout].contains(reason.reason))
            let ended = await harness.supporterEvent(on: code) { if case .ended(.connectionLost, _) = $0 { true } else { false } }
            #expect(ended != nil)
            // Two intervals (1 s) plus generous slack for a loaded machine; TCP alone would take many minutes.
            #expect(ContinuousClock.now - frozenAt < .seconds(30))
            #expect(harness.supporter.code(code)?.state == .open)
            #expect(!device.session.isJoined)
        }

        @Test func droppingTheLastReferenceToASessionLeavesTheCode() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let node = try harness.device()
            weak var weakSession: DeviceSession?
            do {
                let device = try JoinedDevice(node: node, code: code)
                #expect(await device.online())
                weakSession = device.session
            }
            // The collector task may still hold the stream briefly; the session itself must go.
            #expect(await waitUntil { weakSession == nil })
            #expect(await harness.supporterEvent(on: code) { $0 == .ended(reason: .endedByDevice, text: nil) } != nil)
            #expect(harness.supporter.code(code)?.state == .open)
            #expect(node.currentSession == nil)
        }

        @Test func anEndedSessionIsNotKeptByTheSDK() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let node = try harness.device()
            weak var weakSession: DeviceSession?
            do {
                let device = try JoinedDevice(node: node, code: code)
                #expect(await device.online())
                try await harness.supporter.endSession(code: code)
                #expect(await device.event { if case .supporterDisconnected = $0 { true } else { false } } != nil)
                #expect(!device.session.isJoined)
                weakSession = device.session
            }
            #expect(await waitUntil { weakSession == nil })
        }
    }
}
