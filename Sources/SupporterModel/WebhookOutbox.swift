public import Foundation

/// The store's webhook outbox as a delivering node uses it (SupporterNode implements it over its store). Blocking:
/// called from the webhook sender's own threads, never from an event loop.
public protocol WebhookOutbox: Sendable {
    /// Leases due endpoints to `owner` until `leaseUntil`, each with its oldest pending deliveries in order.
    func claimWebhookWork(owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int)
        throws(SupporterNodeError) -> [WebhookWork]
    /// Records an attempt; moves `owner`'s lease to `leaseUntil`, or releases it when nil. True when the sender may go
    /// on: the lease is still `owner`'s and the endpoint unchanged (enabled, same URL and secret).
    func recordWebhookAttempt(_ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?)
        throws(SupporterNodeError) -> Bool
    /// Ends `owner`'s lease on `endpointID`, or on every endpoint it holds when nil (a restart under the same name).
    func releaseWebhookLease(endpointID: String?, owner: String) throws(SupporterNodeError)
    /// Deletes deliveries finished before `before`; returns how many.
    func pruneWebhookDeliveries(finishedBefore before: Date) throws(SupporterNodeError) -> Int
}
