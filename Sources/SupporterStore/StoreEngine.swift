public import Foundation
public import SupporterCore
import SupportWire
import SupportUtilities
public import SupporterModel
public import SupportMetrics

/// What a supporter node needs from its durable store, whatever the engine (``SQLiteStoreEngine``, the embedded
/// default, or ``PostgresStoreEngine``).
///
/// Writes go through one writer per engine, never on an event loop: ``submit(_:deferrable:completion:)`` queues a job
/// (a list of ``StoreIntent``, applied all or nothing) and returns at once; its completion runs after the commit (nil)
/// or with the error (nothing of the job is stored). The queue is bounded: a full queue refuses the job at once
/// (returns false) and nothing grows without bound. Jobs are applied and completed in the order they were submitted.
///
/// The other calls block the calling thread until the engine answered: call them from a node's start, a control
/// command or an API handler's worker, never from an event loop.
public protocol StoreEngine: Sendable {
    /// Where the store is, for logs (a file path, or a PostgreSQL server without its password).
    var location: String { get }

    /// Everything the node keeps in memory, read at start; login sessions that began before `expiredBefore` are
    /// deleted first (in their own transaction).
    func loadSnapshot(expiringLoginSessionsBefore expiredBefore: Date) throws(StoreError) -> StoreSnapshot

    /// Queues `intents`; `completion` runs once they are durable (nil) or failed (the error). Returns false, without
    /// queueing or calling `completion`, when the queue is full or the engine stopped.
    ///
    /// `deferrable`: nothing but events waits for this job, so the engine may let it wait a little and share the
    /// transaction of the next job.
    @discardableResult
    func submit(_ intents: [StoreIntent], deferrable: Bool, completion: @escaping @Sendable (StoreError?) -> Void)
        -> Bool

    /// Applies `intents` and waits for the commit. Not on an event loop.
    func write(_ intents: [StoreIntent]) async throws(StoreError)

    /// Stores the digest of an API token with a new public id, in one transaction with the audit event `audit`
    /// makes for the new record. A digest stored already changes nothing (no audit) and returns the stored record
    /// with `isNew` false; a revoked one throws ``StoreError/Kind/revoked``.
    func addToken(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date,
        audit: @escaping @Sendable (APITokenRecord) -> AuditEvent
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool)

    /// Revokes the active token with public id `id`, in one transaction with `audit`; false (and no audit) when there
    /// is no such active token.
    func revokeToken(id: String, at date: Date, audit: AuditEvent) throws(StoreError) -> Bool

    /// Every token (revoked ones too), oldest first.
    func tokens() throws(StoreError) -> [APITokenRecord]

    /// The stored code `code` with its rules, or nil when there is none.
    func code(_ code: String) throws(StoreError) -> SessionCodeRecord?

    /// Stored audit events in id order (or newest first), filtered as ``SessionStore/auditEvents(code:from:to:limit:afterID:beforeID:newestFirst:)``.
    func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(StoreError) -> [AuditEvent]

    /// The id of the newest audit event (0 when there is none).
    func latestAuditID() throws(StoreError) -> Int64

    /// The contents kept for these audit rows, by row id (``SessionContent``); files with their bytes only with
    /// `fileBytes`.
    func contents(auditIDs: [Int64], fileBytes: Bool) throws(StoreError) -> [Int64: StoredSessionContent]

    // MARK: webhooks (blocking; see SessionStore+Webhooks for the SQLite engine's)

    /// Every webhook endpoint with its pending and failed counts, oldest first.
    func webhookEndpoints() throws(StoreError) -> [WebhookEndpoint]
    /// Stores a new endpoint, in one transaction with `audit`.
    func addWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError)
    /// Replaces the URL, kinds, enabled flag, description and secrets of endpoint `endpoint.id`, with `audit`; false
    /// (nothing audited) when there is none.
    func updateWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) -> Bool
    /// Deletes endpoint `id` and its delivery log, with `audit`; false (nothing audited) when there is none.
    func deleteWebhookEndpoint(id: String, audit: AuditEvent) throws(StoreError) -> Bool
    /// Endpoint `endpointID`'s deliveries, newest first, with an id below `beforeID`, only in `state` when given.
    func webhookDeliveries(endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int)
        throws(StoreError) -> [WebhookDelivery]
    /// A new pending delivery, due at `now`, of the event that delivery `deliveryID` of `endpointID` carried, with
    /// `audit` (its details gain `delivery`, the new id); nil (nothing audited) when there is no such delivery.
    func redeliverWebhook(endpointID: String, deliveryID: Int64, now: Date, audit: AuditEvent) throws(StoreError)
        -> WebhookDelivery?
    /// Leases to `owner`, until `leaseUntil`, up to `maxEndpoints` enabled endpoints that no lease holds and whose
    /// oldest pending delivery is due at `now`; returns each with its up to `maxDeliveries` oldest pending deliveries
    /// in order, their events and message contents. Across a cluster, one node holds an endpoint at a time.
    func claimWebhookWork(owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int)
        throws(StoreError) -> [WebhookWork]
    /// Records `attempt` (also when the lease was lost meanwhile: what happened, happened) and moves `owner`'s lease
    /// on `endpoint` to `leaseUntil`, or releases it when nil; a given-up attempt also gives up the endpoint's pending
    /// deliveries made before its `staleBefore`. True when the sender may go on with the next delivery of its lease:
    /// `owner` still holds it, and the endpoint is still enabled with the URL and secret it was leased with (a
    /// changed, disabled or deleted endpoint ends the lease at once).
    func recordWebhookAttempt(_ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?)
        throws(StoreError) -> Bool
    /// Ends `owner`'s lease on `endpointID`, or on every endpoint it holds when nil (nothing where another node holds it).
    func releaseWebhookLease(endpointID: String?, owner: String) throws(StoreError)
    /// Deletes deliveries delivered or given up before `before`; returns how many.
    @discardableResult
    func pruneWebhookDeliveries(finishedBefore before: Date) throws(StoreError) -> Int
    /// Makes endpoint `endpointID`'s pending deliveries due at `now` (the receiver is back: no waiting out the
    /// back-off), with `audit` (its details gain `retried`, how many); nil (nothing audited) when there is no such
    /// endpoint.
    func retryWebhookDeliveries(endpointID: String, now: Date, audit: AuditEvent) throws(StoreError) -> Int?

    /// What the writer did so far.
    var statistics: StoreStatistics { get }

    /// How long the writer's transactions took, start to commit.
    var commitLatency: MetricHistogram { get }

    /// Applies what is queued, then stops the writer. Later submissions are refused.
    func stop()
}

/// What a node loads from its store at start.
public struct StoreSnapshot: Sendable {
    public init() {}
    public var codes: [SessionCodeRecord] = []
    public var backoff: [BackoffRow] = []
    public var activeTokens: [(digest: [UInt8], record: APITokenRecord)] = []
    public var accounts: [SupporterAccountRecord] = []
    public var loginSessions: [LoginSessionRecord] = []
    /// The sessions the previous process left for a resume (SQLite; on PostgreSQL the presence rows carry them).
    public var unresumed: [UnresumedSession] = []
}

/// Counters of a store engine's writer.
public struct StoreStatistics: Sendable, Hashable {
    public init(
        jobsApplied: Int = 0, jobsFailed: Int = 0, transactions: Int = 0, largestBatch: Int = 0, queued: Int = 0,
        conflictRetries: Int = 0, refusedWhenFull: Int = 0
    ) {
        self.jobsApplied = jobsApplied
        self.jobsFailed = jobsFailed
        self.transactions = transactions
        self.largestBatch = largestBatch
        self.queued = queued
        self.conflictRetries = conflictRetries
        self.refusedWhenFull = refusedWhenFull
    }
    public var jobsApplied = 0
    public var jobsFailed = 0
    public var transactions = 0
    public var largestBatch = 0
    public var queued = 0
    /// Transactions run again after a serialization failure or a deadlock (PostgreSQL).
    public var conflictRetries = 0
    /// Jobs refused because the writer queue was full.
    public var refusedWhenFull = 0
    /// Times the writer thread was woken by a submission (a burst submitted while it works costs none).
    public var wakeUps = 0
}
