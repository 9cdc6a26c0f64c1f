import Dispatch
public import Foundation
import Synchronization

public import SupporterCore
public import SupporterStore
public import SupporterModel
public import SupportMetrics

/// A store engine that fails on command, wrapping a real one (the SQLite file of the test): while ``failing`` is
/// set, every write — queued jobs, awaited writes, token changes — fails with ``injected`` and nothing of it is
/// stored; reads always go through. The proof of the node's one audit rule: after a failed commit, memory, store and
/// every answer agree.
///
/// It also stalls on command: while ``holdingCommits`` is set, an awaited write commits and then does not return
/// until ``releaseCommits()`` — the moment between a change being durable (readable by anyone) and the node hearing so.
public final class FailingStoreEngine: StoreEngine {
    public let base: any StoreEngine
    private let failingFlag = Atomic<Bool>(false)
    private let failures = Atomic<Int>(0)
    private let held = Mutex<(holding: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// The error every failed write reports.
    public static let injected = StoreError(
        kind: .io, operation: "write", message: "the disk is full (a test's injected failure)", path: "test")

    public init(wrapping base: any StoreEngine) { self.base = base }

    /// Whether writes fail from now on.
    public var failing: Bool {
        get { failingFlag.load(ordering: .acquiring) }
        set { failingFlag.store(newValue, ordering: .releasing) }
    }

    /// Whether awaited writes, once committed, wait for ``releaseCommits()`` before they return.
    public var holdingCommits: Bool {
        get { held.withLock { $0.holding } }
        set {
            let released = held.withLock { held -> [CheckedContinuation<Void, Never>] in
                held.holding = newValue
                guard !newValue else { return [] }
                defer { held.waiters = [] }
                return held.waiters
            }
            for waiter in released { waiter.resume() }
        }
    }

    /// Awaited writes committed and held now.
    public var heldCommits: Int { held.withLock { $0.waiters.count } }

    /// Returns every held write and stops holding.
    public func releaseCommits() { holdingCommits = false }

    /// Writes failed so far.
    public var failedWrites: Int { failures.load(ordering: .relaxed) }

    private func failIfAsked() throws(StoreError) {
        guard failing else { return }
        failures.add(1, ordering: .relaxed)
        throw Self.injected
    }

    public var location: String { base.location }

    public func loadSnapshot(expiringLoginSessionsBefore expiredBefore: Date) throws(StoreError) -> StoreSnapshot {
        try base.loadSnapshot(expiringLoginSessionsBefore: expiredBefore)
    }

    @discardableResult
    public func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
        -> Bool
    {
        guard failing else { return base.submit(intents, deferrable: deferrable, completion: completion) }
        failures.add(1, ordering: .relaxed)
        // As the writer would: accepted now, failed later, on another thread.
        DispatchQueue.global().async { completion(Self.injected) }
        return true
    }

    public func write(_ intents: [StoreIntent]) async throws(StoreError) {
        try failIfAsked()
        try await base.write(intents)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holding = held.withLock { held in
                if held.holding { held.waiters.append(continuation) }
                return held.holding
            }
            if !holding { continuation.resume() }
        }
    }

    public func addToken(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date,
        audit: @escaping @Sendable (APITokenRecord) -> AuditEvent
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) {
        try failIfAsked()
        return try base.addToken(digest: digest, scope: scope, label: label, createdAt: createdAt, audit: audit)
    }

    public func revokeToken(id: String, at date: Date, audit: AuditEvent) throws(StoreError) -> Bool {
        try failIfAsked()
        return try base.revokeToken(id: id, at: date, audit: audit)
    }

    public func tokens() throws(StoreError) -> [APITokenRecord] { try base.tokens() }

    public func code(_ code: String) throws(StoreError) -> SessionCodeRecord? { try base.code(code) }

    public func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(StoreError) -> [AuditEvent] {
        try base.auditEvents(
            code: code, from: from, to: to, limit: limit, afterID: afterID, beforeID: beforeID, newestFirst: newestFirst)
    }

    public func latestAuditID() throws(StoreError) -> Int64 { try base.latestAuditID() }

    public func contents(auditIDs: [Int64], fileBytes: Bool) throws(StoreError) -> [Int64: StoredSessionContent] {
        try base.contents(auditIDs: auditIDs, fileBytes: fileBytes)
    }

    public func webhookEndpoints() throws(StoreError) -> [WebhookEndpoint] { try base.webhookEndpoints() }

    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) {
        if failing { throw Self.injected }
        try base.addWebhookEndpoint(endpoint, audit: audit)
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) -> Bool {
        if failing { throw Self.injected }
        return try base.updateWebhookEndpoint(endpoint, audit: audit)
    }

    public func deleteWebhookEndpoint(id: String, audit: AuditEvent) throws(StoreError) -> Bool {
        if failing { throw Self.injected }
        return try base.deleteWebhookEndpoint(id: id, audit: audit)
    }

    public func webhookDeliveries(
        endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int
    ) throws(StoreError) -> [WebhookDelivery] {
        try base.webhookDeliveries(endpointID: endpointID, beforeID: beforeID, state: state, limit: limit)
    }

    public func redeliverWebhook(
        endpointID: String, deliveryID: Int64, now: Date, audit: AuditEvent
    ) throws(StoreError) -> WebhookDelivery? {
        if failing { throw Self.injected }
        return try base.redeliverWebhook(endpointID: endpointID, deliveryID: deliveryID, now: now, audit: audit)
    }

    public func claimWebhookWork(
        owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int
    ) throws(StoreError) -> [WebhookWork] {
        if failing { throw Self.injected }
        return try base.claimWebhookWork(
            owner: owner, now: now, leaseUntil: leaseUntil, maxEndpoints: maxEndpoints, maxDeliveries: maxDeliveries)
    }

    public func recordWebhookAttempt(
        _ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?
    ) throws(StoreError) -> Bool {
        if failing { throw Self.injected }
        return try base.recordWebhookAttempt(attempt, endpoint: endpoint, owner: owner, leaseUntil: leaseUntil)
    }

    public func releaseWebhookLease(endpointID: String?, owner: String) throws(StoreError) {
        if failing { throw Self.injected }
        try base.releaseWebhookLease(endpointID: endpointID, owner: owner)
    }

    public func retryWebhookDeliveries(endpointID: String, now: Date, audit: AuditEvent) throws(StoreError) -> Int? {
        if failing { throw Self.injected }
        return try base.retryWebhookDeliveries(endpointID: endpointID, now: now, audit: audit)
    }

    @discardableResult
    public func pruneWebhookDeliveries(finishedBefore before: Date) throws(StoreError) -> Int {
        if failing { throw Self.injected }
        return try base.pruneWebhookDeliveries(finishedBefore: before)
    }

    public var statistics: StoreStatistics { base.statistics }

    public var commitLatency: MetricHistogram { base.commitLatency }

    public func stop() { base.stop() }
}
