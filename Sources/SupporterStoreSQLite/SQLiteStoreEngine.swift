public import SupporterStore
public import Foundation
public import SupporterCore
public import SupportUtilities
import SupportWire
public import SupporterModel
public import SupportMetrics

/// The embedded default store: one SQLite file (``SessionStore``) written by a ``StoreWriter`` thread, exactly as a
/// node kept it before engines could be chosen.
public final class SQLiteStoreEngine: StoreEngine {
    let store: SessionStore
    let writer: StoreWriter

    /// Opens (creating or migrating) the file at `path` and starts its writer.
    public init(path: String, durability: SQLiteDatabase.Durability, logger: NodeLogger, capacity: Int) throws(StoreError) {
        store = try SessionStore(path: path, durability: durability)
        writer = StoreWriter(store: store, logger: logger, capacity: capacity)
    }

    public var location: String { store.path }

    public func loadSnapshot(expiringLoginSessionsBefore expiredBefore: Date) throws(StoreError) -> StoreSnapshot {
        var snapshot = StoreSnapshot()
        snapshot.codes = try store.allRecords()
        snapshot.backoff = try store.loadBackoff()
        snapshot.activeTokens = try store.activeTokens()
        snapshot.accounts = try store.accounts()
        try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.apply([.deleteLoginSessionsBefore(expiredBefore)])
        }
        snapshot.loginSessions = try store.loginSessions()
        snapshot.unresumed = try store.unresumedSessions()
        return snapshot
    }

    @discardableResult
    public func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
        -> Bool
    {
        writer.submit(intents, deferrable: deferrable, completion: completion)
    }

    public func write(_ intents: [StoreIntent]) async throws(StoreError) { try await writer.write(intents) }

    public func addToken(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date,
        audit: @escaping @Sendable (APITokenRecord) -> AuditEvent
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) {
        try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> (APITokenRecord, Bool) in
            let (record, isNew) = try transaction.addTokenReportingNew(
                digest: digest, scope: scope, label: label, createdAt: createdAt)
            if isNew { _ = try transaction.append(audit(record)) }
            return (record, isNew)
        }
    }

    public func revokeToken(id: String, at date: Date, audit: AuditEvent) throws(StoreError) -> Bool {
        try store.write { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            guard try transaction.revokeToken(id: id, at: date) else { return false }
            _ = try transaction.append(audit)
            return true
        }
    }

    public func tokens() throws(StoreError) -> [APITokenRecord] { try store.tokens() }

    public func code(_ code: String) throws(StoreError) -> SessionCodeRecord? { try store.record(code: code) }

    public func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(StoreError) -> [AuditEvent] {
        try store.auditEvents(
            code: code, from: from, to: to, limit: limit, afterID: afterID, beforeID: beforeID,
            newestFirst: newestFirst)
    }

    public func latestAuditID() throws(StoreError) -> Int64 { try store.latestAuditID() }

    public func contents(auditIDs: [Int64], fileBytes: Bool) throws(StoreError) -> [Int64: StoredSessionContent] {
        try store.contents(auditIDs: auditIDs, fileBytes: fileBytes)
    }

    public func webhookEndpoints() throws(StoreError) -> [WebhookEndpoint] { try store.webhookEndpoints() }

    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) {
        try store.addWebhookEndpoint(endpoint, audit: audit)
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) -> Bool {
        try store.updateWebhookEndpoint(endpoint, audit: audit)
    }

    public func deleteWebhookEndpoint(id: String, audit: AuditEvent) throws(StoreError) -> Bool {
        try store.deleteWebhookEndpoint(id: id, audit: audit)
    }

    public func webhookDeliveries(
        endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int
    ) throws(StoreError) -> [WebhookDelivery] {
        try store.webhookDeliveries(endpointID: endpointID, beforeID: beforeID, state: state, limit: limit)
    }

    public func redeliverWebhook(
        endpointID: String, deliveryID: Int64, now: Date, audit: AuditEvent
    ) throws(StoreError) -> WebhookDelivery? {
        try store.redeliverWebhook(endpointID: endpointID, deliveryID: deliveryID, now: now, audit: audit)
    }

    public func claimWebhookWork(
        owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int
    ) throws(StoreError) -> [WebhookWork] {
        try store.claimWebhookWork(
            owner: owner, now: now, leaseUntil: leaseUntil, maxEndpoints: maxEndpoints, maxDeliveries: maxDeliveries)
    }

    public func recordWebhookAttempt(
        _ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?
    ) throws(StoreError) -> Bool {
        try store.recordWebhookAttempt(attempt, endpoint: endpoint, owner: owner, leaseUntil: leaseUntil)
    }

    public func releaseWebhookLease(endpointID: String?, owner: String) throws(StoreError) {
        try store.releaseWebhookLease(endpointID: endpointID, owner: owner)
    }

    public func retryWebhookDeliveries(endpointID: String, now: Date, audit: AuditEvent) throws(StoreError) -> Int? {
        try store.retryWebhookDeliveries(endpointID: endpointID, now: now, audit: audit)
    }

    @discardableResult
    public func pruneWebhookDeliveries(finishedBefore before: Date) throws(StoreError) -> Int {
        try store.pruneWebhookDeliveries(finishedBefore: before)
    }

    public var statistics: StoreStatistics {
        let counters = writer.statistics
        return StoreStatistics(
            jobsApplied: counters.jobsApplied, jobsFailed: counters.jobsFailed, transactions: counters.transactions,
            largestBatch: counters.largestBatch, queued: writer.queued, refusedWhenFull: counters.refusedWhenFull)
    }

    public var commitLatency: MetricHistogram { writer.commitLatency }

    public func stop() { writer.stop() }
}
