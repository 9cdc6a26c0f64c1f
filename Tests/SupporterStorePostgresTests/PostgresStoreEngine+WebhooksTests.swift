import Dispatch
import Foundation
import Synchronization
import Testing

import TestSupport
import StoreTestSupport
import SupporterStore
import SupporterStorePostgres
import SupporterModel

/// The webhook outbox on PostgreSQL, on a real throwaway cluster per test: StoreTestSupport's `WebhookStoreCases`, which
/// SessionStoreWebhooksTests (SupporterStoreSQLiteTests) runs on SQLite too, then what only a shared server has: two
/// nodes claiming at once.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresStoreEngineWebhooksTests {
    private typealias Cases = WebhookStoreCases

    /// Each case on an engine of its own, on a fresh cluster stopped with it.
    @Test(arguments: WebhookStoreCases.Case.allCases)
    func webhookStoreCase(_ scenario: WebhookStoreCases.Case) async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let engine = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { engine.stop() }
        try await scenario.run(on: engine)
    }

    // MARK: several nodes on one database

    @Test func twoNodesClaimingAtOnceNeverHoldOneEndpoint() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let nodeA = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { nodeA.stop() }
        let nodeB = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { nodeB.stop() }
        let endpoints = (1...10).map { Cases.endpoint($0, ["session_started"]) }
        for endpoint in endpoints { try Cases.add(endpoint, to: nodeA) }
        _ = try await Cases.audit(.sessionStarted, at: Cases.at(1), on: nodeA)

        for round in 0..<20 {
            // Each round after the last round's leases ended: every endpoint is due and free again.
            let now = Cases.at(100 + Int64(round) * 10)
            let claimed = Mutex<[Int: Set<String>]>([:])
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do {
                    let work = try Cases.claim(
                        index == 0 ? nodeA : nodeB, "node-\(index)", now: now, leaseUntil: now.addingTimeInterval(5),
                        maxEndpoints: 3)
                    claimed.withLock { $0[index] = Set(work.map(\.endpoint.id)) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty)
            let (a, b) = claimed.withLock { ($0[0] ?? [], $0[1] ?? []) }
            #expect(a.isDisjoint(with: b), "round \(round): both nodes hold \(a.intersection(b).sorted())")
            // A node skips the endpoints the other is leasing rather than waiting for them, and takes others.
            #expect(a.count == 3 && b.count == 3, "round \(round): \(a.sorted()) \(b.sorted())")
        }
        #expect(try nodeA.verifyAudit().isVerified, "the outbox trigger leaves the audit trail's check content")
    }

    @Test func aDeliveryMadeThroughOneNodeIsClaimedThroughAnother() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let nodeA = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { nodeA.stop() }
        let nodeB = try PostgresStoreEngine(connectionString: cluster.connectionString, logger: .disabled)
        defer { nodeB.stop() }
        let endpoint = Cases.endpoint(1, ["session_started"])
        try Cases.add(endpoint, to: nodeA)
        let event = try await Cases.audit(.sessionStarted, at: Cases.at(1), details: ["device": "Pixel 8"], on: nodeA)

        let work = try Cases.claim(nodeB, "node-b", now: Cases.at(2), leaseUntil: Cases.at(32))
        #expect(work.map(\.endpoint.id) == [endpoint.id])
        let item = try #require(work.first?.items.first)
        #expect(item.event?.id == event && item.event?.details == ["device": "Pixel 8"])
        #expect(try Cases.claim(nodeA, "node-a", now: Cases.at(2), leaseUntil: Cases.at(32)).isEmpty)
        _ = try nodeB.recordWebhookAttempt(
            WebhookAttempt(deliveryID: item.delivery.id, at: Cases.at(3), status: 200, error: nil, outcome: .delivered),
            endpoint: endpoint, owner: "node-b", leaseUntil: nil)
        #expect(try Cases.deliveries(of: endpoint, on: nodeA).map(\.state) == [.delivered])
        #expect(try nodeA.verifyAudit().isVerified)
    }
}
