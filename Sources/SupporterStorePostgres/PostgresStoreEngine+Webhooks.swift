public import SupporterStore
public import Foundation
import SupportPostgres
import SupporterCore
public import SupporterModel
import SupportUtilities

/// Webhook endpoints and their outbox on PostgreSQL, answering as SQLite's (SessionStore+Webhooks) does. A trigger on
/// `audit_events` (schema version 6) makes a pending delivery for every enabled endpoint that wants the new row's kind,
/// in the row's own transaction: an event is in the outbox exactly when it is in the audit trail.
///
/// Several nodes share the database: an endpoint is leased with a conditional UPDATE (only when no lease holds it at
/// `now`) on a row the claim locked with `FOR UPDATE SKIP LOCKED`, so two nodes claiming at once neither wait for each
/// other nor both take one endpoint. Every write that appends an audit row does so in its own transaction.
extension PostgresStoreEngine {
    static let webhookEndpointColumns =
        "id, url, event_kinds, enabled, description, created_at, secret, previous_secret, previous_secret_until"
    static let webhookDeliveryColumns =
        "id, endpoint_id, event_id, event_kind, code, state, attempts, created_at, next_attempt_at, last_attempt_at, "
        + "last_status, last_error, finished_at, redelivery_of"

    /// Every endpoint with its pending and failed counts, oldest first.
    public func webhookEndpoints() throws(StoreError) -> [WebhookEndpoint] {
        let location = self.location
        return try perform("list webhook endpoints") {
            (connection: PostgresConnection) throws(StoreError) -> [WebhookEndpoint] in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                """
                SELECT \(Self.webhookEndpointColumns),
                    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'pending'),
                    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'failed')
                FROM webhook_endpoints e ORDER BY created_at, id
                """, [], "list webhook endpoints")
            var endpoints: [WebhookEndpoint] = []
            for row in rows.rows {
                var endpoint = try Self.webhookEndpoint(row, location: location)
                endpoint.pendingCount = row[9].flatMap { Int($0) } ?? 0
                endpoint.failedCount = row[10].flatMap { Int($0) } ?? 0
                endpoints.append(endpoint)
            }
            return endpoints
        }
    }

    /// Stores a new endpoint, with `audit`.
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) {
        let (location, member) = (self.location, self.member)
        try perform("add webhook endpoint") { (connection: PostgresConnection) throws(StoreError) in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) in
                try transaction.run(
                    """
                    INSERT INTO webhook_endpoints (\(Self.webhookEndpointColumns))
                    VALUES ($1, $2, $3, $4::boolean, $5, $6::bigint, $7, $8, $9::bigint)
                    """, Self.parameters(endpoint), "add webhook endpoint")
                try transaction.append(audit)
            }
        }
    }

    /// Replaces what an admin can change of endpoint `endpoint.id` (URL, kinds, enabled, description, secrets), with
    /// `audit`; false (nothing audited) when there is no such endpoint.
    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) -> Bool {
        let (location, member) = (self.location, self.member)
        return try perform("change webhook endpoint") { (connection: PostgresConnection) throws(StoreError) -> Bool in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> Bool in
                var parameters = Self.parameters(endpoint)
                parameters.remove(at: 5)  // created_at stays
                let changed = try transaction.run(
                    """
                    UPDATE webhook_endpoints SET url = $2, event_kinds = $3, enabled = $4::boolean, description = $5,
                        secret = $6, previous_secret = $7, previous_secret_until = $8::bigint
                    WHERE id = $1 RETURNING id
                    """, parameters, "change webhook endpoint")
                guard changed.count == 1 else { return false }
                try transaction.append(audit)
                return true
            }
        }
    }

    /// Deletes endpoint `id` and its delivery log, with `audit`; false (nothing audited) when there is none.
    public func deleteWebhookEndpoint(id: String, audit: AuditEvent) throws(StoreError) -> Bool {
        let (location, member) = (self.location, self.member)
        return try perform("delete webhook endpoint") { (connection: PostgresConnection) throws(StoreError) -> Bool in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> Bool in
                let deleted = try transaction.run(
                    "DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id", [id], "delete webhook endpoint")
                guard deleted.count == 1 else { return false }
                try transaction.run(
                    "DELETE FROM webhook_deliveries WHERE endpoint_id = $1", [id], "delete webhook deliveries")
                try transaction.append(audit)
                return true
            }
        }
    }

    /// Endpoint `endpointID`'s deliveries, newest first, with an id below `beforeID`, only in `state` when given.
    public func webhookDeliveries(
        endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int
    ) throws(StoreError) -> [WebhookDelivery] {
        let location = self.location
        return try perform("read webhook deliveries") {
            (connection: PostgresConnection) throws(StoreError) -> [WebhookDelivery] in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                """
                SELECT \(Self.webhookDeliveryColumns) FROM webhook_deliveries
                WHERE endpoint_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint)
                    AND ($3::text IS NULL OR state = $3::text)
                ORDER BY id DESC LIMIT $4::bigint
                """, [endpointID, beforeID.map { String($0) }, state?.rawValue, String(max(0, limit))],
                "read webhook deliveries")
            return try rows.rows.map { (row: [String?]) throws(StoreError) -> WebhookDelivery in
                try Self.webhookDelivery(row, location: location)
            }
        }
    }

    /// A new pending delivery, due at `now`, of the event delivery `deliveryID` of `endpointID` carried, with `audit`
    /// (its details gain `delivery`, the new id); nil (nothing audited) when there is no such delivery.
    public func redeliverWebhook(
        endpointID: String, deliveryID: Int64, now: Date, audit: AuditEvent
    ) throws(StoreError) -> WebhookDelivery? {
        let (location, member) = (self.location, self.member)
        return try perform("redeliver webhook") {
            (connection: PostgresConnection) throws(StoreError) -> WebhookDelivery? in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> WebhookDelivery? in
                let made = try transaction.run(
                    """
                    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_kind, code, state, created_at,
                        next_attempt_at, redelivery_of)
                    SELECT endpoint_id, event_id, event_kind, code, 'pending', $3::bigint, $3::bigint, id
                    FROM webhook_deliveries WHERE id = $1::bigint AND endpoint_id = $2
                    RETURNING \(Self.webhookDeliveryColumns)
                    """, [String(deliveryID), endpointID, String(now.unixMilliseconds)], "redeliver webhook")
                guard let row = made.rows.first else { return nil }
                let delivery = try Self.webhookDelivery(row, location: location)
                var audit = audit
                audit.details["delivery"] = String(delivery.id)
                try transaction.append(audit)
                return delivery
            }
        }
    }

    /// Leases to `owner`, until `leaseUntil`, up to `maxEndpoints` enabled endpoints that no lease holds and whose
    /// oldest pending delivery is due at `now`; returns each with its up to `maxDeliveries` oldest pending deliveries,
    /// their events and message contents.
    ///
    /// One transaction: the due endpoints are locked `FOR UPDATE SKIP LOCKED` (an endpoint another node is claiming
    /// right now is skipped, not waited for), then each is leased only if the UPDATE that leases it changed its row,
    /// which it does only while no unexpired lease holds it.
    public func claimWebhookWork(
        owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int
    ) throws(StoreError) -> [WebhookWork] {
        let (location, member) = (self.location, self.member)
        let nowText = String(now.unixMilliseconds)
        let claimed = try perform("claim webhook deliveries") {
            (connection: PostgresConnection) throws(StoreError) -> [WebhookWork] in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> [WebhookWork] in
                let columns = Self.webhookEndpointColumns.split(separator: ",").map {
                    "e." + $0.trimmingCharacters(in: .whitespaces)
                }.joined(separator: ", ")
                let due = try transaction.run(
                    """
                    SELECT \(columns) FROM webhook_endpoints e
                    JOIN webhook_deliveries d ON d.id =
                        (SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = e.id AND state = 'pending')
                    WHERE e.enabled AND (e.lease_until IS NULL OR e.lease_until < $1::bigint)
                        AND d.next_attempt_at <= $1::bigint
                    ORDER BY d.next_attempt_at, e.id LIMIT $2::bigint
                    FOR UPDATE OF e SKIP LOCKED
                    """, [nowText, String(max(0, maxEndpoints))], "find due webhook endpoints")
                var work: [WebhookWork] = []
                for row in due.rows {
                    let endpoint = try Self.webhookEndpoint(row, location: location)
                    let leased = try transaction.run(
                        """
                        UPDATE webhook_endpoints SET lease_owner = $2, lease_until = $3::bigint
                        WHERE id = $1 AND (lease_until IS NULL OR lease_until < $4::bigint) RETURNING id
                        """, [endpoint.id, owner, String(leaseUntil.unixMilliseconds), nowText],
                        "lease a webhook endpoint")
                    guard leased.count == 1 else { continue }
                    work.append(
                        WebhookWork(
                            endpoint: endpoint,
                            items: try Self.pendingItems(
                                transaction, endpointID: endpoint.id, limit: max(1, maxDeliveries))))
                }
                return work
            }
        }
        return try withContents(claimed)
    }

    /// Endpoint `endpointID`'s up to `limit` oldest pending deliveries with their events (nil when archived).
    private static func pendingItems(_ transaction: PostgresStoreTransaction, endpointID: String, limit: Int)
        throws(StoreError) -> [WebhookWork.Item]
    {
        let location = transaction.location
        let columns = webhookDeliveryColumns.split(separator: ",").map {
            "d." + $0.trimmingCharacters(in: .whitespaces)
        }.joined(separator: ", ")
        let rows = try transaction.run(
            """
            SELECT \(columns), a.id, a.time, a.code, a.kind, a.details
            FROM webhook_deliveries d LEFT JOIN audit_events a ON a.id = d.event_id
            WHERE d.endpoint_id = $1 AND d.state = 'pending' ORDER BY d.id LIMIT $2::bigint
            """, [endpointID, String(limit)], "read pending webhook deliveries")
        var items: [WebhookWork.Item] = []
        for row in rows.rows {
            let delivery = try webhookDelivery(row, location: location)
            var event: AuditEvent?
            if let id = row[14].flatMap({ Int64($0) }), let time = row[15].flatMap({ Int64($0) }), let kind = row[17] {
                event = AuditEvent(
                    id: id, time: Date(unixMilliseconds: time), code: row[16], kind: AuditEvent.Kind(rawValue: kind),
                    details: try AuditDetailsJSON.details(fromJSON: row[18] ?? "{}"))
            }
            items.append(WebhookWork.Item(delivery: delivery, event: event, content: nil))
        }
        return items
    }

    /// `work` with the contents of its message rows (read after the claim's commit, as SQLite does).
    private func withContents(_ work: [WebhookWork]) throws(StoreError) -> [WebhookWork] {
        let ids = WebhookWork.eventIDs(of: work)
        guard !ids.isEmpty else { return work }
        let contents = try contents(auditIDs: ids, fileBytes: false)
        return contents.isEmpty ? work : work.map { $0.with(contents: contents) }
    }

    /// Records `attempt` and moves `owner`'s lease on `endpoint`: to `leaseUntil`, or released when nil. The attempt
    /// is recorded also when the lease was lost meanwhile (what happened, happened); the lease moves only while
    /// `owner` holds it, and ends when the endpoint changed since it was leased. True when the sender may go on.
    public func recordWebhookAttempt(
        _ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?
    ) throws(StoreError) -> Bool {
        let (location, member) = (self.location, self.member)
        let endpointID = endpoint.id
        return try perform("record webhook attempt") { (connection: PostgresConnection) throws(StoreError) -> Bool in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> Bool in
                // The endpoint's row first, as a delete of the endpoint takes it: the two never wait for each other
                // crosswise.
                let lease = try transaction.run(
                    WebhookLeaseSQL.moveLease(parameter: { $0 == 3 ? "$3::bigint" : "$\($0)" }, enabled: "enabled"),
                    [endpointID, owner, leaseUntil.map { String($0.unixMilliseconds) }, endpoint.url, endpoint.secret],
                    "move the webhook lease")
                let goesOn = lease.count == 1 && lease[0, "lease_owner"] == owner
                let (state, next, finished, staleBefore) = WebhookAttemptRow.columns(of: attempt)
                let at = String(attempt.at.unixMilliseconds)
                try transaction.run(
                    """
                    UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = $2::bigint,
                        last_status = $3::integer, last_error = $4, state = $5, next_attempt_at = $6::bigint,
                        finished_at = $7::bigint
                    WHERE id = $1::bigint AND state = 'pending'
                    """,
                    [
                        String(attempt.deliveryID), at, attempt.status.map { String($0) }, attempt.error, state,
                        next.map { String($0) }, finished.map { String($0) },
                    ], "record webhook attempt")
                if let staleBefore {
                    // Given up with the delivery that failed: the rest of its backlog is as old, and would each wait
                    // for a timeout of its own before failing the same way.
                    try transaction.run(
                        """
                        UPDATE webhook_deliveries SET state = 'failed', finished_at = $2::bigint, next_attempt_at = NULL,
                            last_error = coalesce(last_error, $4)
                        WHERE endpoint_id = $1 AND state = 'pending' AND created_at < $3::bigint
                        """,
                        [endpointID, at, String(staleBefore.unixMilliseconds), WebhookAttempt.givenUpWithOlder],
                        "give up older webhook deliveries")
                }
                return goesOn
            }
        }
    }

    /// Ends `owner`'s lease on `endpointID`, or on every endpoint it holds when nil (nothing where another node holds
    /// it now).
    public func releaseWebhookLease(endpointID: String?, owner: String) throws(StoreError) {
        let location = self.location
        try perform("release webhook lease") { (connection: PostgresConnection) throws(StoreError) in
            _ = try PostgresStoreTransaction(connection, location: location).run(
                """
                UPDATE webhook_endpoints SET lease_owner = NULL, lease_until = NULL
                WHERE ($1::text IS NULL OR id = $1) AND lease_owner = $2
                """,
                [endpointID, owner], "release webhook lease")
        }
    }

    /// Makes endpoint `endpointID`'s pending deliveries due at `now`, with `audit` (details gain `retried`); nil when
    /// there is no such endpoint.
    public func retryWebhookDeliveries(endpointID: String, now: Date, audit: AuditEvent) throws(StoreError) -> Int? {
        let (location, member) = (self.location, self.member)
        return try perform("retry webhook deliveries") { (connection: PostgresConnection) throws(StoreError) -> Int? in
            try Self.inTransaction(connection, location, member) {
                (transaction: inout PostgresStoreTransaction) throws(StoreError) -> Int? in
                let exists = try transaction.run(
                    "SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [endpointID], "find webhook endpoint")
                guard exists.count == 1 else { return nil }
                let rows = try transaction.run(
                    """
                    WITH due AS (
                        UPDATE webhook_deliveries SET next_attempt_at = $2::bigint
                        WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at > $2::bigint RETURNING 1
                    ) SELECT count(*) FROM due
                    """, [endpointID, String(now.unixMilliseconds)], "retry webhook deliveries")
                let retried = rows.rows.first?[0].flatMap { Int($0) } ?? 0
                var audit = audit
                audit.details["retried"] = String(retried)
                try transaction.append(audit)
                return retried
            }
        }
    }

    /// Deletes deliveries delivered or given up before `before`; returns how many.
    @discardableResult
    public func pruneWebhookDeliveries(finishedBefore before: Date) throws(StoreError) -> Int {
        let location = self.location
        return try perform("prune webhook deliveries") { (connection: PostgresConnection) throws(StoreError) -> Int in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                """
                WITH pruned AS (
                    DELETE FROM webhook_deliveries
                    WHERE (state <> 'pending' AND finished_at < $1::bigint)
                        -- a delivery an audit row made while its endpoint was being deleted (READ COMMITTED)
                        OR NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = endpoint_id)
                    RETURNING 1
                ) SELECT count(*) FROM pruned
                """, [String(before.unixMilliseconds)], "prune webhook deliveries")
            return rows.rows.first?[0].flatMap { Int($0) } ?? 0
        }
    }

    // MARK: rows

    /// `$1`…`$9` of ``webhookEndpointColumns``.
    private static func parameters(_ endpoint: WebhookEndpoint) -> [String?] {
        [
            endpoint.id, endpoint.url, WebhookKindList.stored(endpoint.eventKinds), endpoint.isEnabled ? "true" : "false",
            endpoint.description, String(endpoint.createdAt.unixMilliseconds), endpoint.secret, endpoint.previousSecret,
            endpoint.previousSecretUntil.map { String($0.unixMilliseconds) },
        ]
    }

    /// A row of ``webhookEndpointColumns``.
    private static func webhookEndpoint(_ row: [String?], location: String) throws(StoreError) -> WebhookEndpoint {
        guard let id = row[0], let url = row[1], let kinds = row[2], let enabled = row[3],
            let created = row[5].flatMap({ Int64($0) }), let secret = row[6]
        else { throw invalidData("a webhook endpoint row lacks a required value", location) }
        return WebhookEndpoint(
            id: id, url: url, eventKinds: WebhookKindList.kinds(stored: kinds), isEnabled: enabled == "t",
            description: row[4], createdAt: Date(unixMilliseconds: created), secret: secret, previousSecret: row[7],
            previousSecretUntil: row[8].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)))
    }

    /// A row of ``webhookDeliveryColumns``.
    private static func webhookDelivery(_ row: [String?], location: String) throws(StoreError) -> WebhookDelivery {
        guard let id = row[0].flatMap({ Int64($0) }), let endpoint = row[1], let event = row[2].flatMap({ Int64($0) }),
            let kind = row[3], let state = row[5].flatMap(WebhookDelivery.State.init(rawValue:)),
            let attempts = row[6].flatMap({ Int($0) }), let created = row[7].flatMap({ Int64($0) })
        else { throw invalidData("a webhook delivery row lacks a required value", location) }
        func date(_ index: Int) -> Date? { row[index].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)) }
        return WebhookDelivery(
            id: id, endpointID: endpoint, eventID: event, eventKind: kind, code: row[4], state: state,
            attempts: attempts, createdAt: Date(unixMilliseconds: created), nextAttemptAt: date(8),
            lastAttemptAt: date(9), lastStatus: row[10].flatMap { Int($0) }, lastError: row[11], finishedAt: date(12),
            redeliveryOf: row[13].flatMap { Int64($0) })
    }
}
