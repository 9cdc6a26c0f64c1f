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
    /// Session resume (SPEC §15.5) between real nodes, through a relay whose link really breaks.
    @Suite(.serialized) struct ResumeNodeTests {
        private static let capabilities: FeatureSet = [Feature(.screenShare), Feature(.voip), Feature(.chat)]

        private static func chatRules() -> FeatureRules {
            var rules = FeatureRules.deviceDefault
            rules.set(.allow, for: .chat)
            return rules
        }

        @Test func anActiveSessionSurvivesABrokenLinkAndGoesOn() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(10))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(
                    harness.deviceConfiguration(capabilities: Self.capabilities, port: proxy.port, rules: Self.chatRules())),
                code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Alice", type: .screenShare, features: [Feature(.chat)])
            let request = try #require(await device.request())
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)

            let cutAt = ContinuousClock.now
            proxy.cut()
            #expect(await device.event { $0 == .reconnecting } != nil)
            #expect(await device.event { $0 == .resumed } != nil)
            let resumedAfter = ContinuousClock.now - cutAt
            #expect(await harness.supporterEvent(on: code) { $0 == .resumed } != nil)
            print("resume: link cut → device resumed in \(resumedAfter)")
            // Still the same session: active on both sides, chat works, no new prompt was shown.
            #expect(harness.supporter.code(code)?.state == .active)
            try await harness.supporter.sendChat(code: code, text: "still with you")
            #expect(await device.event { $0 == .messageReceived(.chat(id: 1, text: "still with you")) } != nil)
            #expect(device.events.all.filter { if case .connectionRequest = $0 { true } else { false } }.count == 1)
            let kinds = try harness.supporter.auditEvents(code: code).map(\.kind.rawValue)
            #expect(kinds.contains("device_reconnecting") && kinds.contains("device_resumed"), "\(kinds)")
            #expect(!kinds.contains("device_offline"))
            try await harness.supporter.endSession(code: code)
            #expect(await device.event { $0 == .supporterDisconnected(reason: .endedBySupporter, text: nil) } != nil)
        }

        @Test func aPendingRequestStaysPendingAcrossTheBreak() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(10))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(capabilities: Self.capabilities, port: proxy.port)),
                code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Bo", type: .screenShare)
            let request = try #require(await device.request())
            proxy.cut()
            #expect(await device.event { $0 == .resumed } != nil)
            #expect(harness.supporter.code(code)?.state == .requestPending)
            // The prompt from before the break is answered now, on the new link.
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
        }

        @Test func pastTheGracePeriodBothSidesEndWithConnectionLost() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(1))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(capabilities: Self.capabilities, port: proxy.port)),
                code: code)
            #expect(await device.online())
            proxy.refuseNewConnections()
            proxy.cut()
            #expect(await device.event { $0 == .reconnecting } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .reconnecting } != nil)
            #expect(harness.supporter.code(code)?.reconnecting == true)
            #expect(
                await harness.supporterEvent(on: code) { if case .ended(.connectionLost, _) = $0 { true } else { false } }
                    != nil)
            #expect(
                await device.event {
                    if case .error(let failure) = $0 { failure.reason == .connectionLost } else { false }
                } != nil)
            #expect(!device.session.isJoined)
            #expect(harness.supporter.code(code)?.state == .open)
        }

        @Test func aOneZeroDeviceLosesItsSessionAtOnceAsBefore() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(30))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(port: proxy.port, extensions: .none)), code: code)
            #expect(await device.online())
            proxy.cut()
            #expect(
                await harness.supporterEvent(on: code, timeout: .seconds(5)) {
                    if case .ended(.connectionLost, _) = $0 { true } else { false }
                } != nil)
            #expect(!device.events.all.contains(.reconnecting))
        }
    

        @Test func aResumeTakesOverAStillOpenLinkAtOnceAndAWrongSecretChangesNothing() async throws {
            let harness = try NodeHarness(extensions: .all)
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let (token, port) = (harness.token, harness.port)
            let outcome = await blocking { () -> (String?, ReasonCode?, ResumeResult?, Bool) in
                let announcement = ProtocolExtensions.all.announcement
                guard let first = try? RawDevicePeer.helloed(port: port, name: "first", features: announcement) else {
                    return ("no first connection", nil, nil, false)
                }
                first.send(.register(Register(sessionCode: code, apiToken: token, capabilities: [Feature(.screenShare)])))
                guard case .message(.registerResult(let registered))? = first.next(timeout: .seconds(10)),
                    let secret = registered.resumeSecret
                else { return ("no REGISTER_RESULT with a secret: \(first.received)", nil, nil, false) }
                guard let second = try? RawDevicePeer.helloed(port: port, name: "second", features: announcement) else {
                    return ("no second connection", nil, nil, false)
                }
                second.send(.resume(Resume(sessionCode: code, resumeSecret: "not-the-secret", state: .online)))
                guard case .message(.resumeResult(let wrong))? = second.next(timeout: .seconds(10)) else {
                    return ("no answer to a wrong secret", nil, nil, false)
                }
                second.send(.resume(Resume(sessionCode: code, resumeSecret: secret, state: .online)))
                guard case .message(.resumeResult(let right))? = second.next(timeout: .seconds(10)) else {
                    return ("no answer to the right secret", wrong.reason, nil, false)
                }
                first.drainUntilClosed(timeout: .seconds(5))
                let moved = first.received.contains {
                    if case .goAway(let goAway) = $0 { goAway.reason == .sessionMoved } else { false }
                }
                let rotated = right.resumeSecret != nil && right.resumeSecret != secret
                second.close()
                return (nil, wrong.reason, right, moved && rotated)
            }
            #expect(outcome.0 == nil, "\(outcome.0 ?? "")")
            #expect(outcome.1 == .resumeRejected)
            #expect(outcome.2?.reason == .success)
            #expect(outcome.3, "the first link did not get GOAWAY session_moved, or the secret did not rotate")
            #expect(await harness.supporterEvent(on: code) { $0 == .resumed } != nil)
        }
    }
}
