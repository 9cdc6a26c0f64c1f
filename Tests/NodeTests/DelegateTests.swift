import DeviceNode
import Dispatch
import Synchronization
import SupporterNode
import Testing
import SupportSession
import SupportWire
import SampleAppModel
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary

extension NodeIntegration {
    /// The classic delegate and the AsyncSequence report the same events, in the same order, on the documented queue.
    @Suite(.serialized) struct DelegateTests {
        final class Recorder: DeviceSessionDelegate {
            let calls = Mutex<[String]>([])
            let queue: DispatchQueue
            let onQueue = Mutex<Bool>(true)
            init(queue: DispatchQueue) { self.queue = queue }

            private func record(_ call: String) {
                if DispatchQueue.getSpecific(key: Recorder.key) != "delegate" { onQueue.withLock { $0 = false } }
                calls.withLock { $0.append(call) }
            }
            static let key = DispatchSpecificKey<String>()

            func sessionCodeDidComeOnline(_ session: DeviceSession, codeType: SessionCodeType?, waitingMessage: String?) {
                record("online")
            }
            func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {
                record("request \(request.supporterName)")
                request.allow()
                request.allow()  // a second answer is ignored
            }
            func session(_ session: DeviceSession, supporterDidConnect supporterName: String, type: ConnectionType) {
                record("connected \(supporterName)")
            }
            func session(_ session: DeviceSession, voipStateDidChange state: VoIPCallState) { record("voip \(state)") }
            func session(_ session: DeviceSession, sessionError reason: ReasonCode, feature: Feature.ID?, text: String?) {
                record("session error \(reason)")
            }
            func session(_ session: DeviceSession, supporterDidDisconnect reason: ReasonCode, text: String?) {
                record("disconnected \(reason)")
            }
        }

        @Test func delegateAndStreamSeeTheSameEventsInOrderOnTheDelegateQueue() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let queue = DispatchQueue(label: "app.delegate")
            queue.setSpecific(key: Recorder.key, value: "delegate")
            var configuration = harness.deviceConfiguration(capabilities: [Feature(.screenShare), Feature(.voip)])
            configuration.delegateQueue = queue
            let node = try harness.device(configuration)
            let recorder = Recorder(queue: queue)
            let code = try await harness.supporter.createCode().code
            let session = try node.connect(toSessionCode: code, delegate: recorder)
            let streamed = EventLog<DeviceSessionEvent>()
            let collector = Task { for await event in session.events { streamed.append(event) } }
            #expect(await streamed.waitFor { $0 == .sessionCodeOnline(codeType: .remoteSupport, waitingMessage: nil) } != nil)
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Lee", type: .screenShare, features: [Feature(.voip), Feature(.remoteControl)])
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            #expect(await streamed.waitFor { $0 == .voipStateChanged(.started) } != nil)
            try await harness.supporter.endSession(code: code)
            await collector.value  // the stream finishes when the session is over
            let expected = [
                "online", "request Lee", "session error unsupported_feature", "connected Lee", "voip started",
                "disconnected ended_by_supporter",
            ]
            #expect(recorder.calls.withLock { $0 } == expected)
            #expect(recorder.onQueue.withLock { $0 })
            let kinds = streamed.all.map { event -> String in
                switch event {
                case .sessionCodeOnline: "online"
                case .connectionRequest(let info): "request \(info.supporterName)"
                case .sessionError(let reason, _, _): "session error \(reason)"
                case .supporterConnected(let name, _, _): "connected \(name)"
                case .voipStateChanged(let state): "voip \(state)"
                case .supporterDisconnected(let reason, _): "disconnected \(reason)"
                default: "other"
                }
            }
            #expect(kinds == expected)
            // The device answered once: exactly one CONNECTION_RESPONSE reached the supporter, so one `connected`.
            #expect(harness.supporterEvents.all.filter { $0.event == .connected(requestID: id) }.count == 1)
        }
    }
}
