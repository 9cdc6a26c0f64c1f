import Foundation
import Testing
import DeviceNode
import SupportSession
import SupporterNode
import TestSupport

extension NodeIntegration {
    /// Issue 22, item 10: a device that leaves a code on one node and joins it again at once through another must
    /// never be refused because of its own previous presence (the first node's release may not have committed when
    /// the second node claims the code).
    @Suite struct RejoinElsewhereTests {
        static let cycles = 1_000

        @Test("leave on one node and rejoin at once through the other: 0 refusals over 1,000 cycles")
        func leaveThenRejoinElsewhereIsNeverRefused() async throws {
            let database = try ThrowawayPostgres()
            defer { database.stop() }
            let nodes = try [0, 1].map { _ in try NodeHarness(storeBackend: .postgres(database.connectionString)) }
            defer { for node in nodes { node.shutdown() } }
            let code = try await nodes[0].supporter.createCode(description: "churn").code
            #expect(await waitUntil { nodes[1].supporter.code(code) != nil })
            let devices = try nodes.map { try $0.device() }
            var refusals: [String] = []
            let started = ContinuousClock.now
            for cycle in 0..<Self.cycles {
                let device = try JoinedDevice(node: devices[cycle % 2], code: code)
                let first = await device.event {
                    switch $0 {
                    case .sessionCodeOnline, .error, .supporterDisconnected: true
                    default: false
                    }
                }
                if case .sessionCodeOnline = first {
                } else {
                    refusals.append("cycle \(cycle): \(String(describing: first))")
                }
                device.session.leave()
                // The device has said goodbye (SESSION_END sent, link closing); the node it left may not have
                // committed the release yet.
                _ = await waitUntil {
                    if case .ended = device.session.state { return true }
                    return false
                }
            }
            print(
                "leave then rejoin elsewhere: \(Self.cycles) cycles in \(ContinuousClock.now - started), "
                    + "\(refusals.count) refused")
            #expect(refusals.isEmpty, "\(refusals.count) refused; first: \(refusals.prefix(5))")
        }
    }
}
