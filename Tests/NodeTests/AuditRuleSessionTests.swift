import DeviceNode
import Synchronization
import SupporterNode
import SupportSession
import SupportWire
import Testing
import TestSupport

import StoreTestSupport
@testable import SupporterCore
import SupporterStore
import SupporterStores
import SupporterModel

extension NodeIntegration {
    /// The one audit rule for sessions, under a store that fails on command (``FailingStoreEngine``): a supporter's
    /// command whose record cannot be stored is never sent, its caller hears the failure, and the device's connection
    /// ends — so memory (no device on the code), store (no `request_sent`) and every answer agree.
    @Suite(.serialized) struct AuditRuleSessionTests {
        @Test func aRequestThatCannotBeStoredNeverReachesTheDevice() async throws {
            let engine = Mutex<FailingStoreEngine?>(nil)
            let harness = try NodeHarness { base in
                let failing = FailingStoreEngine(wrapping: base)
                engine.withLock { $0 = failing }
                return failing
            }
            defer { harness.shutdown() }
            let store = try #require(engine.withLock { $0 })
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())

            store.failing = true
            var failure: SupporterNodeError?
            do {
                _ = try await harness.supporter.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            } catch {
                failure = error
            }
            #expect(failure?.kind == .store, "\(String(describing: failure))")
            // The device's connection ends with the failure, and no request came before it.
            let end = await device.event {
                switch $0 {
                case .connectionRequest, .error, .supporterDisconnected: true
                default: false
                }
            }
            if case .connectionRequest = end { Issue.record("a request the node could not record reached the device") }
            store.failing = false

            // Nothing of the request is stored, and the node shows no session on the code.
            let kinds = try store.auditEvents(
                code: code, from: nil, to: nil, limit: 1_000, afterID: nil, beforeID: nil, newestFirst: false
            ).map { "\($0.kind)" }
            #expect(!kinds.contains("request_sent"), "\(kinds)")
            #expect(harness.supporter.code(code)?.state != .requestPending)
        }
    }
}
