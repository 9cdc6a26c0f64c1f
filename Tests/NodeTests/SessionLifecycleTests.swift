import DeviceNode
import SupporterNode
import Testing
import SampleAppModel
import SupportSession
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

extension NodeIntegration {
    /// Every flow of a remote-support session, over real TLS on loopback between a device node and a supporter node.
    @Suite(.serialized) struct SessionLifecycleTests {
        @Test func deviceComesOnlineAndTheSupporterSeesIt() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(type: .remoteSupport, description: "printer").code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let online = await harness.supporterEvent(on: code) {
                if case .deviceOnline = $0 { return true }
                return false
            }
            #expect(online != nil)
            #expect(harness.supporter.code(code)?.state == .online)
            #expect(harness.supporter.code(code)?.deviceName == "Pixel 8")
        }

        @Test func requestAllowedConnectsBothSidesUntilTheSupporterEnds() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            let request = try #require(await device.request())
            #expect(request.requestID == id)
            #expect(request.supporterName == "Alice")
            #expect(request.connectionType == .screenShare)
            #expect(harness.supporter.code(code)?.state == .requestPending)
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await device.event { if case .supporterConnected("Alice", .screenShare, _) = $0 { true } else { false } } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            #expect(harness.supporter.code(code)?.state == .active)
            try await harness.supporter.endSession(code: code)
            #expect(await device.event { $0 == .supporterDisconnected(reason: .endedBySupporter, text: nil) } != nil)
            #expect(!device.session.isJoined)
            #expect(harness.supporter.code(code)?.state == .open)
        }

        @Test func requestRejectedLeavesTheDeviceWaiting() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Bob", type: .assistAR)
            let request = try #require(await device.request())
            device.session.answer(requestID: request.requestID, allow: false)
            #expect(await harness.supporterEvent(on: code) { $0 == .rejected(requestID: id, reason: .rejectedByUser) } != nil)
            #expect(device.session.isJoined)
            #expect(harness.supporter.code(code)?.state == .online)
        }

        @Test func supporterAbortsBeforeTheAnswerAndALaterAnswerIsIgnored() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Carol", type: .screenShare)
            _ = try #require(await device.request())
            try await harness.supporter.abortRequest(code: code)
            #expect(await device.event { $0 == .connectionRequestAborted(requestID: id, reason: .abortedBySupporter) } != nil)
            device.session.answer(requestID: id, allow: true)
            // A later request, refused, proves the late answer (sent before that refusal on the same link) was handled.
            #expect(await harness.laterRequestIsRefused(code: code, device: device))
            #expect(!harness.supporterEvents.contains { $0.code == code && $0.event == .connected(requestID: id) })
            #expect(!device.events.all.contains { if case .supporterConnected = $0 { true } else { false } })
            #expect(harness.supporter.code(code)?.state == .online)
        }

        @Test func unansweredRequestTimesOutAsAReject() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(
                node: try harness.device(harness.deviceConfiguration(promptTimeout: .milliseconds(300))), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Dan", type: .screenShare)
            #expect(await device.event { $0 == .connectionRequestTimedOut(requestID: id) } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .rejected(requestID: id, reason: .requestTimedOut) } != nil)
            device.session.answer(requestID: id, allow: true)  // too late: ignored
            #expect(await harness.laterRequestIsRefused(code: code, device: device))
            #expect(!harness.supporterEvents.contains { $0.event == .connected(requestID: id) })
        }

        @Test func supporterRequestTimesOutWithAnAbort() async throws {
            let harness = try NodeHarness(requestTimeout: .milliseconds(300))
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Eve", type: .screenShare)
            #expect(await harness.supporterEvent(on: code) { $0 == .requestTimedOut(requestID: id) } != nil)
            #expect(await device.event { $0 == .connectionRequestAborted(requestID: id, reason: .requestTimedOut) } != nil)
        }

        enum LeaveState: String, CaseIterable, Sendable { case waiting, promptShown, active }

        @Test(arguments: LeaveState.allCases)
        func userLeavesAndTheSupporterIsInformed(in state: LeaveState) async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            if state != .waiting {
                _ = try await harness.supporter.requestConnection(code: code, supporterName: "Fay", type: .screenShare)
                let request = try #require(await device.request())
                if state == .active {
                    device.session.answer(requestID: request.requestID, allow: true)
                    #expect(await device.event { if case .supporterConnected = $0 { true } else { false } } != nil)
                }
            }
            device.session.leave()
            #expect(await device.event { $0 == .supporterDisconnected(reason: .endedByDevice, text: nil) } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .ended(reason: .endedByDevice, text: nil) } != nil)
            #expect(!device.session.isJoined)
            #expect(harness.supporter.code(code)?.state == .open)
        }

        @Test func secondConnectWhileJoinedIsRefused() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let first = try await harness.supporter.createCode().code
            let second = try await harness.supporter.createCode().code
            let node = try harness.device()
            let device = try JoinedDevice(node: node, code: first)
            #expect(await device.online())
            let error = #expect(throws: DeviceNodeError.self) { _ = try node.connect(toSessionCode: second) }
            #expect(error?.kind == .alreadyJoined)
            device.session.leave()
            #expect(await device.event { if case .supporterDisconnected = $0 { true } else { false } } != nil)
            let again = try JoinedDevice(node: node, code: second)
            #expect(await again.online())
        }
    }
}
