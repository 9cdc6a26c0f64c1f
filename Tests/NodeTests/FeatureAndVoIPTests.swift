import DeviceNode
import Foundation
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
    @Suite(.serialized) struct FeatureAndVoIPTests {
        @Test func missingFeatureIsASessionErrorAndTheSessionGoesOn() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(capabilities: [Feature(.screenShare)])), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Gus", type: .screenShare, features: [Feature(.remoteControl)])
            #expect(
                await device.event {
                    if case .sessionError(.unsupportedFeature, .remoteControl, _) = $0 { return true }
                    return false
                } != nil)
            #expect(
                await harness.supporterEvent(on: code) {
                    if case .sessionError(.unsupportedFeature, .remoteControl, _) = $0 { return true }
                    return false
                } != nil)
            device.session.answer(requestID: id, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
        }

        @Test func featureVersionMismatchIsReported() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            _ = try await harness.supporter.requestConnection(
                code: code, supporterName: "Hal", type: .screenShare, features: [Feature(.screenShare, version: 2)])
            #expect(
                await device.event {
                    if case .sessionError(.featureVersionMismatch, .screenShare, _) = $0 { return true }
                    return false
                } != nil)
        }

        enum CallCase: String, CaseIterable, Sendable { case noCall, ourCall, foreignCall }

        @Test(arguments: CallCase.allCases)
        func voipStartsUnlessAForeignCallRuns(_ callCase: CallCase) async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let observer = FakeCallObserver()
            let ours = "7B1E0C1A-8C4F-4E8B-9A57-2C3D4E5F6A7B"
            switch callCase {
            case .noCall: observer.set(.idle)
            case .ourCall: observer.set(SystemCallStatus(isCallRunning: true, runningCallID: ours.lowercased()))
            case .foreignCall: observer.set(SystemCallStatus(isCallRunning: true, runningCallID: "0000-foreign"))
            }
            let node = try harness.device(harness.deviceConfiguration(callObserver: observer))
            node.setCallUUID(try #require(UUID(uuidString: ours)))
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: node, code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Ivy", type: .screenShare, features: [Feature(.voip)])
            device.session.answer(requestID: id, allow: true)
            let expected: VoIPCallState = callCase == .foreignCall ? .notStartedOtherCallActive : .started
            #expect(await device.event { $0 == .voipStateChanged(expected) } != nil)
            #expect(
                await harness.supporterEvent(on: code) {
                    if case .voipState(expected, _) = $0 { return true }
                    return false
                } != nil)
            if expected == .started {
                node.clearCallUUID()
                #expect(await device.event { $0 == .voipStateChanged(.ended) } != nil)
                #expect(
                    await harness.supporterEvent(on: code) {
                        if case .voipState(.ended, _) = $0 { return true }
                        return false
                    } != nil)
            }
        }

        @Test func noVoIPWhenTheSupporterDoesNotAskForIt() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Jo", type: .screenShare)
            device.session.answer(requestID: id, allow: true)
            #expect(await device.event { $0 == .voipStateChanged(.notStartedUnsupported) } != nil)
        }
    }
}
