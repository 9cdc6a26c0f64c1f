public import Foundation
import SupporterCore
public import SupporterModel
import SupporterStore
import SupportUtilities
import Synchronization

/// Webhook endpoints (an admin's, over REST, the CLI or the console) and the outbox the dispatcher delivers from. All
/// blocking: call from an API handler's worker or a sender thread, never from an event loop.
extension SupporterNode: WebhookOutbox {
    /// The most endpoints a node keeps: each costs a row per event of its kinds, and a sender while it is delivered.
    public static let maxWebhookEndpoints = 50

    /// Serializes this process's read-change-write of endpoints, so a rotation and a change at the same moment cannot
    /// write back each other's old secret, nor two additions pass the limit together. (Two nodes of a cluster can
    /// still cross; the later write wins there.)
    private static let endpointChanges = Mutex<Void>(())

    /// Every endpoint with its pending and failed counts, oldest first (secrets included: the caller shows them only
    /// when made or rotated).
    public func webhookEndpoints() throws(SupporterNodeError) -> [WebhookEndpoint] {
        do throws(StoreError) { return try store.webhookEndpoints() } catch { throw SupporterNodeError(store: error) }
    }

    /// Registers an endpoint; the answer carries its new secret.
    public func addWebhookEndpoint(
        url: String, eventKinds: [String], description: String?, isEnabled: Bool = true, by actor: AuditActor
    ) throws(SupporterNodeError) -> WebhookEndpoint {
        let checkedURL = try checkWebhookURL(url)
        let kinds = try Self.checkWebhookKinds(eventKinds)
        let description = try Self.checkWebhookDescription(description)
        let endpoint = try Self.endpointChanges.withLock { _ throws(SupporterNodeError) -> WebhookEndpoint in
            guard try webhookEndpoints().count < Self.maxWebhookEndpoints else {
                throw SupporterNodeError(
                    "a node keeps at most \(Self.maxWebhookEndpoints) webhook endpoints; delete one first", kind: .conflict)
            }
            let now = clock.wallTime
            let endpoint = WebhookEndpoint(
                id: "wh_" + Self.randomHex(8), url: checkedURL.text, eventKinds: kinds, isEnabled: isEnabled,
                description: description, createdAt: now, secret: Self.makeWebhookSecret())
            do throws(StoreError) {
                try store.addWebhookEndpoint(
                    endpoint, audit: Self.webhookAudit(.webhookCreated, endpoint, checkedURL, actor, now))
            } catch {
                throw SupporterNodeError(store: error)
            }
            return endpoint
        }
        logger.log(.info, "webhook endpoint \(endpoint.id) registered for \(checkedURL.host)")
        return endpoint
    }

    /// Changes endpoint `id`; with ``WebhookEndpointChange/rotateSecret`` the answer carries its new secret.
    public func changeWebhookEndpoint(id: String, _ change: WebhookEndpointChange, by actor: AuditActor)
        throws(SupporterNodeError) -> WebhookEndpoint
    {
        try Self.endpointChanges.withLock { _ throws(SupporterNodeError) -> WebhookEndpoint in
            try changeWebhookEndpointLocked(id: id, change, by: actor)
        }
    }

    private func changeWebhookEndpointLocked(id: String, _ change: WebhookEndpointChange, by actor: AuditActor)
        throws(SupporterNodeError) -> WebhookEndpoint
    {
        guard change != WebhookEndpointChange() else {
            throw SupporterNodeError(
                "nothing to change: name at least one of url, event_kinds, enabled, description", kind: .invalid)
        }
        guard var endpoint = try webhookEndpoints().first(where: { $0.id == id }) else {
            throw SupporterNodeError("no webhook endpoint has the id \(id)", kind: .notFound)
        }
        if let url = change.url { endpoint.url = try checkWebhookURL(url).text }
        if let kinds = change.eventKinds { endpoint.eventKinds = try Self.checkWebhookKinds(kinds) }
        if let enabled = change.isEnabled { endpoint.isEnabled = enabled }
        if let description = change.description { endpoint.description = try Self.checkWebhookDescription(description) }
        let now = clock.wallTime
        if change.rotateSecret {
            endpoint.previousSecret = endpoint.secret
            endpoint.previousSecretUntil = now.addingTimeInterval(86_400)
            endpoint.secret = Self.makeWebhookSecret()
        }
        let url = try checkWebhookURL(endpoint.url)
        var audit = Self.webhookAudit(.webhookChanged, endpoint, url, actor, now)
        var changed: [String] = []
        if change.url != nil { changed.append("url") }
        if change.eventKinds != nil { changed.append("event_kinds") }
        if change.isEnabled != nil { changed.append("enabled") }
        if change.description != nil { changed.append("description") }
        if change.rotateSecret { changed.append("secret") }
        audit.details["changed"] = changed.joined(separator: ",")
        let found: Bool
        do throws(StoreError) { found = try store.updateWebhookEndpoint(endpoint, audit: audit) } catch {
            throw SupporterNodeError(store: error)
        }
        guard found else { throw SupporterNodeError("no webhook endpoint has the id \(id)", kind: .notFound) }
        return endpoint
    }

    /// Deletes endpoint `id` and its delivery log.
    public func deleteWebhookEndpoint(id: String, by actor: AuditActor) throws(SupporterNodeError) {
        var details = actor.details
        details["endpoint"] = id
        let now = clock.wallTime
        let deleted: Bool
        do throws(StoreError) {
            deleted = try store.deleteWebhookEndpoint(
                id: id, audit: AuditEvent(time: now, kind: .webhookDeleted, details: details))
        } catch {
            throw SupporterNodeError(store: error)
        }
        guard deleted else { throw SupporterNodeError("no webhook endpoint has the id \(id)", kind: .notFound) }
    }

    /// Endpoint `endpointID`'s delivery log, newest first.
    public func webhookDeliveries(
        endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int
    ) throws(SupporterNodeError) -> [WebhookDelivery] {
        do throws(StoreError) {
            return try store.webhookDeliveries(endpointID: endpointID, beforeID: beforeID, state: state, limit: limit)
        } catch {
            throw SupporterNodeError(store: error)
        }
    }

    /// Delivers the event of delivery `deliveryID` again, as a new delivery after the endpoint's pending ones.
    public func redeliverWebhook(endpointID: String, deliveryID: Int64, by actor: AuditActor)
        throws(SupporterNodeError) -> WebhookDelivery
    {
        var details = actor.details
        details["endpoint"] = endpointID
        details["redelivery_of"] = String(deliveryID)
        let now = clock.wallTime
        let made: WebhookDelivery?
        do throws(StoreError) {
            made = try store.redeliverWebhook(
                endpointID: endpointID, deliveryID: deliveryID, now: now,
                audit: AuditEvent(time: now, kind: .webhookRedelivered, details: details))
        } catch {
            throw SupporterNodeError(store: error)
        }
        guard let made else {
            throw SupporterNodeError(
                "webhook endpoint \(endpointID) has no delivery \(deliveryID) (deliveries leave the log 30 days after "
                    + "they finished)", kind: .notFound)
        }
        return made
    }

    /// Makes endpoint `endpointID`'s pending deliveries due now — its receiver is back, and waiting out the back-off
    /// (up to an hour) is not wanted; returns how many. Audited `webhook_changed` (`changed: retry`).
    public func retryWebhookDeliveries(endpointID: String, by actor: AuditActor) throws(SupporterNodeError) -> Int {
        var details = actor.details
        details["endpoint"] = endpointID
        details["changed"] = "retry"
        let now = clock.wallTime
        let retried: Int?
        do throws(StoreError) {
            retried = try store.retryWebhookDeliveries(
                endpointID: endpointID, now: now, audit: AuditEvent(time: now, kind: .webhookChanged, details: details))
        } catch {
            throw SupporterNodeError(store: error)
        }
        guard let retried else { throw SupporterNodeError("no webhook endpoint has the id \(endpointID)", kind: .notFound) }
        return retried
    }

    // MARK: the outbox (WebhookOutbox)

    public func claimWebhookWork(owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int)
        throws(SupporterNodeError) -> [WebhookWork]
    {
        do throws(StoreError) {
            return try store.claimWebhookWork(
                owner: owner, now: now, leaseUntil: leaseUntil, maxEndpoints: maxEndpoints, maxDeliveries: maxDeliveries)
        } catch {
            throw SupporterNodeError(store: error)
        }
    }

    public func recordWebhookAttempt(
        _ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?
    ) throws(SupporterNodeError) -> Bool {
        do throws(StoreError) {
            return try store.recordWebhookAttempt(attempt, endpoint: endpoint, owner: owner, leaseUntil: leaseUntil)
        } catch {
            throw SupporterNodeError(store: error)
        }
    }

    public func releaseWebhookLease(endpointID: String?, owner: String) throws(SupporterNodeError) {
        do throws(StoreError) { try store.releaseWebhookLease(endpointID: endpointID, owner: owner) } catch {
            throw SupporterNodeError(store: error)
        }
    }

    public func pruneWebhookDeliveries(finishedBefore before: Date) throws(SupporterNodeError) -> Int {
        do throws(StoreError) { return try store.pruneWebhookDeliveries(finishedBefore: before) } catch {
            throw SupporterNodeError(store: error)
        }
    }

    // MARK: checks

    private func checkWebhookURL(_ url: String) throws(SupporterNodeError) -> WebhookURL {
        do throws(WebhookURL.Refusal) {
            return try WebhookURL(url, plainHTTPHosts: configuration.webhookPlainHTTPHosts)
        } catch {
            throw SupporterNodeError(error.message, kind: .invalid)
        }
    }

    static func checkWebhookKinds(_ kinds: [String]) throws(SupporterNodeError) -> [String] {
        guard !kinds.isEmpty else {
            throw SupporterNodeError("name at least one event kind, or \"*\" for every kind", kind: .invalid)
        }
        let known = Set(AuditEvent.Kind.subscribable.map(\.rawValue))
        var seen: [String] = []
        for kind in kinds where !seen.contains(kind) {
            guard kind == "*" || known.contains(kind) else {
                throw SupporterNodeError(
                    "'\(TerminalText.escaped(String(kind.prefix(64))))' is not an event kind; the kinds are \"*\" and "
                        + known.sorted().joined(separator: ", "), kind: .invalid)
            }
            seen.append(kind)
        }
        return seen.contains("*") ? ["*"] : seen
    }

    static func checkWebhookDescription(_ description: String?) throws(SupporterNodeError) -> String? {
        guard let description, !description.isEmpty else { return nil }
        guard description.count <= 200,
            !description.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw SupporterNodeError(
                "a webhook description has at most 200 characters and no control characters", kind: .invalid)
        }
        return description
    }

    private static func webhookAudit(
        _ kind: AuditEvent.Kind, _ endpoint: WebhookEndpoint, _ url: WebhookURL, _ actor: AuditActor, _ now: Date
    ) -> AuditEvent {
        var details = actor.details
        details["endpoint"] = endpoint.id
        // The host only: a URL's path often carries a receiver's own secret.
        details["host"] = url.host
        details["event_kinds"] = endpoint.eventKinds.joined(separator: ",")
        details["enabled"] = endpoint.isEnabled ? "true" : "false"
        return AuditEvent(time: now, kind: kind, details: details)
    }

    private static func makeWebhookSecret() -> String { "whsec_" + randomHex(24) }

    private static func randomHex(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
