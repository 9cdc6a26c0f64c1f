import Testing

import TestSupport
import StoreTestSupport
import SupporterStore
import SupporterStoreSQLite

/// The webhook outbox on the SQLite engine: the trigger that makes deliveries in each audit row's transaction, leases,
/// retries, giving up, redelivery, endpoint changes and pruning. The cases are StoreTestSupport's `WebhookStoreCases`,
/// which PostgresStoreEngineWebhooksTests (SupporterStorePostgresTests) runs on PostgreSQL too.
@Suite struct SessionStoreWebhooksTests {
    /// Each case on an engine of its own, on a fresh store file.
    @Test(arguments: WebhookStoreCases.Case.allCases)
    func webhookStoreCase(_ scenario: WebhookStoreCases.Case) async throws {
        let folder = try TemporaryFolder()
        let engine = try SQLiteStoreEngine(
            path: folder.file("store.sqlite"), durability: .processCrash, logger: .disabled, capacity: 1024)
        defer { engine.stop() }
        try await scenario.run(on: engine)
    }
}
