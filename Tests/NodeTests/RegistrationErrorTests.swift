import DeviceNode
import SupporterNode
import TestSupport
import Testing
import SupportSession
import SampleAppModel
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

extension NodeIntegration {
    /// Bad codes and tokens are errors; after one the session is over.
    @Suite(.serialized) struct RegistrationErrorTests {
        private func failure(_ device: JoinedDevice) async -> DeviceSessionFailure? {
            guard case .error(let failure) = await device.event({ if case .error = $0 { true } else { false } }) else {
                return nil
            }
            return failure
        }

        @Test func unknownCodeIsAnInvalidCodeError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let device = try JoinedDevice(node: try harness.device(), code: "000-000-000")
            #expect(await failure(device)?.reason == .invalidSessionCode)
            #expect(!device.session.isJoined)
        }

        @Test func wrongTokenIsAnInvalidTokenError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(harness.deviceConfiguration(token: "rsk_wrong")), code: code)
            #expect(await failure(device)?.reason == .invalidAPIToken)
        }

        @Test func expiredCodeIsAnExpiredError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(lifetime: .zero).code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await failure(device)?.reason == .sessionCodeExpired)
            #expect(harness.supporter.code(code)?.state == .expired)
        }

        @Test func codeExpiringUnderAWaitingDeviceEndsItsSession() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(lifetime: .milliseconds(700)).code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            #expect(await failure(device)?.reason == .sessionCodeExpired)
            #expect(harness.supporter.code(code)?.state == .expired)
        }

        @Test func aCodeThatExpiresUnusedEntersTheAuditTrailOnce() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(lifetime: .milliseconds(500)).code
            func expiries(_ code: String) -> [AuditEvent] {
                ((try? harness.supporter.auditEvents(code: code)) ?? []).filter { $0.kind == .codeExpired }
            }
            #expect(await waitUntil { !expiries(code).isEmpty })
            // Further sweeps add nothing: a code made now expires in a later sweep, which has seen the first again.
            let later = try await harness.supporter.createCode(lifetime: .milliseconds(500)).code
            #expect(await waitUntil { !expiries(later).isEmpty })
            let expiries = expiries(code)
            #expect(expiries.count == 1)
            #expect(harness.supporter.code(code)?.state == .expired)
        }

        @Test func closedCodeIsAClosedError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            try await harness.supporter.closeCode(code)
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await failure(device)?.reason == .sessionCodeClosed)
        }

        @Test func closingAJoinedCodeEndsTheDevicesSession() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            try await harness.supporter.closeCode(code)
            #expect(await failure(device)?.reason == .sessionCodeClosed)
            #expect(harness.supporter.code(code)?.state == .closed)
        }

        @Test func codeInUseByAnotherDeviceIsRefused() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let first = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await first.online())
            let second = try JoinedDevice(node: try harness.device(harness.deviceConfiguration(name: "Other")), code: code)
            #expect(await failure(second)?.reason == .sessionCodeInUse)
            #expect(first.session.isJoined)
            #expect(harness.supporter.code(code)?.deviceName == "Pixel 8")
        }

        @Test func repeatedFailuresWithOneTokenAreRateLimited() async throws {
            var policy = CodeRegistry.Policy()
            policy.tokenBackoff = BackoffPolicy(
                freeFailures: 1, base: .seconds(5), maximum: .seconds(60), decayInterval: .seconds(60))
            let harness = try NodeHarness(policy: policy)
            defer { harness.shutdown() }
            for _ in 0..<2 {
                let device = try JoinedDevice(node: try harness.device(), code: "111-111-111")
                #expect(await failure(device)?.reason == .invalidSessionCode)
            }
            let valid = try await harness.supporter.createCode().code
            let blocked = try JoinedDevice(node: try harness.device(), code: valid)
            let refusal = await failure(blocked)
            #expect(refusal?.reason == .rateLimited)
            #expect((refusal?.retryAfterMilliseconds ?? 0) > 1000)
        }

        @Test func unreachableNodeIsANetworkError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            // A port nothing listens on: bind, learn the port, close.
            let device = try JoinedDevice(node: try harness.device(harness.deviceConfiguration(port: 1)), code: "123-456-789")
            let failure = await failure(device)
            #expect(failure?.reason == .connectionLost)
            #expect(failure?.message.contains("supporter node running") == true)
        }
    }
}
