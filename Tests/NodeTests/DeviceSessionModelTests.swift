import DeviceNode
import Foundation
import Synchronization
import SupporterNode
import TestSupport
import Testing
import SupportSession
import SupportWire
import SampleAppModel
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary
import SupporterModel

/// Polls a main-actor condition (the main actor stays free between polls).
@MainActor
func eventually(timeout: Duration = waitDeadline, _ condition: @MainActor () -> Bool) async -> Bool {
    await waitUntil(timeout: timeout, condition)
}

extension NodeIntegration {
    /// The main-actor model, `async` join with typed errors, answer outcomes, VoIP reaching the app, and the late call
    /// hand-over, against a real supporter node.
    @Suite(.serialized) struct DeviceSessionModelTests {
        @MainActor @Test func theModelJoinsShowsThePromptAndGoesActiveOnTheMainActor() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let model = DeviceSessionModel(node: try harness.device())
            #expect(model.state == .offline)
            let code = try await harness.supporter.createCode(
                type: .remoteSupport, details: SessionCodeDetails(waitingMessage: "An agent will be with you shortly")
            ).code
            try await model.join(code: code)
            #expect(model.state == .online(codeType: .remoteSupport, waitingMessage: "An agent will be with you shortly"))
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Alice", type: .screenShare, features: [Feature(.voip)])
            #expect(await eventually { model.state.pendingRequest?.requestID == id })
            let voip = Mutex<[Bool]>([])
            model.onVoIP = { running in
                MainActor.assertIsolated()
                voip.withLock { $0.append(running) }
            }
            model.allow()
            #expect(await eventually { if case .active(supporterName: "Alice", _, _) = model.state { true } else { false } })
            #expect(model.lastAnswer == .sent)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            #expect(await eventually { model.isVoIPRunning && model.voipState == .started })
            #expect(voip.withLock { $0 } == [true])
            try await harness.supporter.endSession(code: code)
            #expect(await eventually { model.state.isEnded })
            guard case .ended(let ending) = model.state else { return }
            #expect(ending.outcome == .endedBySupporter)
            #expect(await eventually { !model.isVoIPRunning })
            #expect(voip.withLock { $0 } == [true, false])
        }

        @MainActor @Test func aSecondJoinWhileJoinedIsRefusedAndTheModelJoinsAgainAfterTheEnd() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let model = DeviceSessionModel(node: try harness.device())
            let code = try await harness.supporter.createCode().code
            try await model.join(code: code)
            await #expect(throws: JoinError.self) { try await model.join(code: code) }
            model.leave()
            #expect(await eventually { model.state.isEnded })
            guard case .ended(let ending) = model.state else { return }
            #expect(ending.outcome == .endedByUser)
            let next = try await harness.supporter.createCode().code
            try await model.join(code: next)
            #expect(model.state.isOnline)
        }

        enum Failure: String, CaseIterable, Sendable { case unknownCode, wrongToken, expiredCode, unreachable, emptyCode }

        @Test(arguments: Failure.allCases)
        func joinThrowsATypedErrorWithWordsForPeople(_ failure: Failure) async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            var configuration = harness.deviceConfiguration()
            var code = try await harness.supporter.createCode().code
            let expected: JoinError.Reason
            switch failure {
            case .unknownCode:
                code = "000-000-000"
                expected = .invalidSessionCode
            case .wrongToken:
                configuration = harness.deviceConfiguration(token: "rsk_wrong")
                expected = .invalidAPIToken
            case .expiredCode:
                code = try await harness.supporter.createCode(lifetime: .zero).code
                expected = .sessionCodeExpired
            case .unreachable:
                configuration = harness.deviceConfiguration(port: 1)
                expected = .network
            case .emptyCode:
                code = "   "
                expected = .invalidSessionCode
            }
            let node = try harness.device(configuration)
            do {
                _ = try await node.join(code: code)
                Issue.record("joined")
            } catch {
                #expect(error.reason == expected)
                #expect(error.errorDescription?.isEmpty == false)
                #expect(node.currentSession?.isJoined != true)
            }
        }

        @Test func answersSayWhetherTheyCounted() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let node = try harness.device()
            let code = try await harness.supporter.createCode().code
            let session = try await node.join(code: code)
            #expect(await session.answer(requestID: 99, .allow) == .notPending)
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Bo", type: .screenShare)
            #expect(await waitUntil { session.state.pendingRequest?.requestID == id })
            #expect(await session.answer(requestID: id, .reject) == .sent)
            #expect(await session.answer(requestID: id, .allow) == .notPending)  // counted once
            session.leave()
            #expect(await waitUntil { session.state.isEnded })
            #expect(await session.answer(requestID: id, .allow) == .sessionOver)
        }

        /// A request object the app kept after releasing its session: the answer reports it instead of vanishing.
        @Test func anAnswerThroughAReleasedSessionReportsSessionOver() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            final class Keeper: DeviceSessionDelegate {
                let request = Mutex<ConnectionRequestAuthentication?>(nil)
                func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {
                    self.request.withLock { $0 = request }
                }
            }
            let keeper = Keeper()
            let node = try harness.device()
            let code = try await harness.supporter.createCode().code
            var session: DeviceSession? = try await node.join(code: code, delegate: keeper)
            _ = try await harness.supporter.requestConnection(code: code, supporterName: "Cy", type: .screenShare)
            #expect(await waitUntil { keeper.request.withLock { $0 } != nil })
            #expect(session?.state.pendingRequest != nil)
            session = nil
            let request = try #require(keeper.request.withLock { $0 })
            #expect(await request.answer(.allow) == .sessionOver)
        }

        /// SPEC §8's call decision is made again when the app hands its call over after the session started.
        @Test func handingOverTheRunningCallLaterStartsVoIPAndTellsTheApp() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            final class VoIPRecorder: DeviceSessionDelegate {
                let calls = Mutex<[String]>([])
                func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {
                    request.allow()
                }
                func sessionShouldStartVoIP(_ session: DeviceSession) { calls.withLock { $0.append("start") } }
                func sessionShouldStopVoIP(_ session: DeviceSession) { calls.withLock { $0.append("stop") } }
            }
            let callKitUUID = UUID()
            let observer = FakeCallObserver()
            observer.set(SystemCallStatus(isCallRunning: true, runningCallID: callKitUUID.uuidString.lowercased()))
            let node = try harness.device(harness.deviceConfiguration(callObserver: observer))
            let recorder = VoIPRecorder()
            let code = try await harness.supporter.createCode().code
            let session = try await node.join(code: code, delegate: recorder)
            _ = try await harness.supporter.requestConnection(
                code: code, supporterName: "Di", type: .screenShare, features: [Feature(.voip)])
            #expect(
                await harness.supporterEvent(on: code) {
                    if case .voipState(.notStartedOtherCallActive, _) = $0 { true } else { false }
                } != nil)
            node.setCallUUID(callKitUUID)
            #expect(
                await harness.supporterEvent(on: code) { if case .voipState(.started, _) = $0 { true } else { false } }
                    != nil)
            #expect(await waitUntil { recorder.calls.withLock { $0 } == ["start"] })
            node.clearCallUUID()
            #expect(await waitUntil { recorder.calls.withLock { $0 } == ["start", "stop"] })
            withExtendedLifetime(session) {}
        }

        @Test func theDefaultCapabilitiesAdvertiseNothing() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            var configuration = harness.deviceConfiguration()
            configuration.capabilities = DeviceConfiguration(
                host: "x", tls: .makeClientConfiguration(), apiToken: "t", deviceName: "d"
            ).capabilities
            let node = try harness.device(configuration)
            let code = try await harness.supporter.createCode().code
            let session = try await node.join(code: code)
            let online = await harness.supporterEvent(on: code) { if case .deviceOnline = $0 { true } else { false } }
            #expect(online == .deviceOnline(code: code, capabilities: []))
            withExtendedLifetime(session) {}
        }

        @Test func theEventStreamIsBoundedAndCountsWhatItDropped() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            var configuration = harness.deviceConfiguration()
            configuration.eventBufferCapacity = 2
            let node = try harness.device(configuration)
            let code = try await harness.supporter.createCode().code
            let session = try await node.join(code: code)
            for _ in 0..<2 {
                let id = try await harness.supporter.requestConnection(code: code, supporterName: "Ed", type: .screenShare)
                #expect(await waitUntil { session.state.pendingRequest?.requestID == id })
                #expect(await session.answer(requestID: id, .reject) == .sent)
                #expect(await harness.supporterEvent(on: code) { $0 == .rejected(requestID: id, reason: .rejectedByUser) } != nil)
            }
            // online + 2 requests, nobody iterating: the oldest went.
            #expect(session.droppedEventCount == 1)
            var iterator = session.events.makeAsyncIterator()
            let first = await iterator.next()
            if case .connectionRequest = first {} else { Issue.record("the oldest kept is a request: \(String(describing: first))") }
        }
    }
}
