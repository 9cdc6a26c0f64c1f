import DeviceNode
import Foundation
import Glibc
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
    /// A device with several supporter-node addresses (`DeviceConfiguration.alternateNodes`): an unreachable one is
    /// skipped, and a lost link is redialled through the others, where the session resumes.
    @Suite(.serialized) struct NodeFailoverTests {
        /// A loopback port nothing listens on (bound, then closed): connecting is refused.
        static func deadPort() -> UInt16 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return UInt16(bigEndian: address.sin_port)
        }

        @Test func anUnreachableFirstNodeIsSkipped() async throws {
            let harness = try NodeHarness(extensions: .all)
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            var configuration = harness.deviceConfiguration(port: Self.deadPort())
            configuration.alternateNodes = [NodeAddress(host: "127.0.0.1", port: harness.port)]
            let device = try JoinedDevice(node: try harness.device(configuration), code: code)
            #expect(await device.online())
        }

        @Test func withEveryNodeUnreachableJoiningFailsWithANetworkError() async throws {
            let harness = try NodeHarness(extensions: .all)
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            var configuration = harness.deviceConfiguration(port: Self.deadPort())
            configuration.alternateNodes = [NodeAddress(host: "127.0.0.1", port: Self.deadPort())]
            let device = try JoinedDevice(node: try harness.device(configuration), code: code)
            let failure = await device.event { if case .error = $0 { true } else { false } }
            #expect(failure != nil, "\(device.events.all)")
        }

        @Test func aLostLinkIsRedialledThroughTheOtherNodesAndTheSessionResumes() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(10))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let code = try await harness.supporter.createCode().code
            var configuration = harness.deviceConfiguration(port: proxy.port)
            configuration.alternateNodes = [NodeAddress(host: "127.0.0.1", port: harness.port)]
            let device = try JoinedDevice(node: try harness.device(configuration), code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            let request = try #require(await device.request())
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)

            // The first address goes away for good: the device must find the other one within the grace period.
            let cutAt = ContinuousClock.now
            proxy.refuseNewConnections()
            proxy.cut()
            #expect(await device.event { $0 == .reconnecting } != nil)
            #expect(await device.event { $0 == .resumed } != nil)
            print("failover: first address gone → resumed through the second in \(ContinuousClock.now - cutAt)")
            #expect(await harness.supporterEvent(on: code) { $0 == .resumed } != nil)
            #expect(harness.supporter.code(code)?.state == .active)
        }
    }
}
