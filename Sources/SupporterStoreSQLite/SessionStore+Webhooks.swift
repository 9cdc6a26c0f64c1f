public import SupporterStore
public import Foundation
public import SupporterModel
import SupportUtilities

/// Webhook endpoints and their outbox. A trigger on `audit_events` (migration 11) makes a pending delivery for every
/// enabled endpoint that wants the new row's kind, in the row's own transaction: an event is in the outbox exactly
/// when it is in the audit trail. A node leases an endpoint (``claimWebhookWork(owner:now:leaseUntil:maxEndpoints:maxDeliveries:)``)
/// to deliver its oldest pending deliveries in order, and records each attempt.
extension SessionStore {
    static let webhookEndpointColumns =
        "id, url, event_kinds, enabled, description, created_at, secret, previous_secret, previous_secret_until"
    static let webhookDeliveryColumns =
        "id, endpoint_id, event_id, event_kind, code, state, attempts, created_at, next_attempt_at, last_attempt_at, "
        + "last_status, last_error, finished_at, redelivery_of"

    /// Every endpoint with its pending and failed counts, oldest first.
    public func webhookEndpoints() throws(StoreError) -> [WebhookEndpoint] {
        try perform("list webhook endpoints") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [WebhookEndpoint] in
            let statement = try connection.prepare(
                """
                SELECT \(Self.webhookEndpointColumns),
                    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'pending'),
                    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'failed')
                FROM webhook_endpoints e ORDER BY created_at, id
                """)
            var endpoints: [WebhookEndpoint] = []
            while try statement.step() {
                var endpoint = try Self.webhookEndpoint(from: statement)
                endpoint.pendingCount = Int(statement.int64(at: 9) ?? 0)
                endpoint.failedCount = Int(statement.int64(at: 10) ?? 0)
                endpoints.append(endpoint)
            }
            return endpoints
        }
    }

    /// Stores a new endpoint, with `audit`.
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) {
        try write("add webhook endpoint") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.run("add webhook endpoint") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                let statement = try connection.prepare(
                    "INSERT INTO webhook_endpoints (\(Self.webhookEndpointColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
                try Self.bind(endpoint, to: statement)
                try statement.run()
            }
            _ = try transaction.append(audit)
        }
    }

    /// Replaces what an admin can change of endpoint `endpoint.id` (URL, kinds, enabled, description, secrets), with
    /// `audit`; false (nothing audited) when there is no such endpoint.
    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint, audit: AuditEvent) throws(StoreError) -> Bool {
        try write("change webhook endpoint") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            let changed = try transaction.run("change webhook endpoint") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
                let statement = try connection.prepare(
                    """
                    UPDATE webhook_endpoints SET url = ?2, event_kinds = ?3, enabled = ?4, description = ?5,
                        secret = ?7, previous_secret = ?8, previous_secret_until = ?9
                    WHERE id = ?1
                    """)
                try Self.bind(endpoint, to: statement)
                try statement.run()
                return connection.changes == 1
            }
            if changed { _ = try transaction.append(audit) }
            return changed
        }
    }

    /// Deletes endpoint `id` and its delivery log, with `audit`; false (nothing audited) when there is none.
    public func deleteWebhookEndpoint(id: String, audit: AuditEvent) throws(StoreError) -> Bool {
        try write("delete webhook endpoint") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            let deleted = try transaction.run("delete webhook endpoint") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
                let endpoint = try connection.prepare("DELETE FROM webhook_endpoints WHERE id = ?")
                try endpoint.bind(id, at: 1)
                try endpoint.run()
                guard connection.changes == 1 else { return false }
                let deliveries = try connection.prepare("DELETE FROM webhook_deliveries WHERE endpoint_id = ?")
                try deliveries.bind(id, at: 1)
                try deliveries.run()
                return true
            }
            if deleted { _ = try transaction.append(audit) }
            return deleted
        }
    }

    /// Endpoint `endpointID`'s deliveries, newest first, with an id below `beforeID`, only in `state` when given.
    public func webhookDeliveries(
        endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int
    ) throws(StoreError) -> [WebhookDelivery] {
        try perform("read webhook deliveries") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [WebhookDelivery] in
            let statement = try connection.prepare(
                """
                SELECT \(Self.webhookDeliveryColumns) FROM webhook_deliveries
                WHERE endpoint_id = ?1 AND (?2 IS NULL OR id < ?2) AND (?3 IS NULL OR state = ?3)
                ORDER BY id DESC LIMIT ?4
                """)
            try statement.bind(endpointID, at: 1)
            try statement.bind(beforeID, at: 2)
            try statement.bind(state?.rawValue, at: 3)
            try statement.bind(Int64(max(0, limit)), at: 4)
            var deliveries: [WebhookDelivery] = []
            while try statement.step() { deliveries.append(try Self.webhookDelivery(from: statement)) }
            return deliveries
        }
    }

    /// A new pending delivery, due at `now`, of the event delivery `deliveryID` of `endpointID` carried, with `audit`;
    /// nil (nothing audited) when there is no such delivery.
    public func redeliverWebhook(
        endpointID: String, deliveryID: Int64, now: Date, audit: AuditEvent
    ) throws(StoreError) -> WebhookDelivery? {
        try write("redeliver webhook") { (transaction: inout StoreTransaction) throws(StoreError) -> WebhookDelivery? in
            let made = try transaction.run("redeliver webhook") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> WebhookDelivery? in
                let insert = try connection.prepare(
                    """
                    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_kind, code, state, created_at,
                        next_attempt_at, redelivery_of)
                    SELECT endpoint_id, event_id, event_kind, code, 'pending', ?3, ?3, id FROM webhook_deliveries
                    WHERE id = ?1 AND endpoint_id = ?2
                    """)
                try insert.bind(deliveryID, at: 1)
                try insert.bind(endpointID, at: 2)
                try insert.bind(now.unixMilliseconds, at: 3)
                try insert.run()
                guard connection.changes == 1 else { return nil }
                let read = try connection.prepare(
                    "SELECT \(Self.webhookDeliveryColumns) FROM webhook_deliveries WHERE id = last_insert_rowid()")
                guard try read.step() else { return nil }
                return try Self.webhookDelivery(from: read)
            }
            if let made {
                var audit = audit
                audit.details["delivery"] = String(made.id)
                _ = try transaction.append(audit)
            }
            return made
        }
    }

    /// Leases to `owner`, until `leaseUntil`, up to `maxEndpoints` enabled endpoints that no lease holds and whose
    /// oldest pending delivery is due at `now`; returns each with its up to `maxDeliveries` oldest pending deliveries,
    /// their events and message contents.
    public func claimWebhookWork(
        owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int, maxDeliveries: Int
    ) throws(StoreError) -> [WebhookWork] {
        // A read first: most looks find nothing due, and need not take the write lock the node's writer uses.
        let anythingDue = try perform("look for due webhook deliveries") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
            let due = try connection.prepare(
                """
                SELECT 1 FROM webhook_endpoints e
                JOIN webhook_deliveries d ON d.id =
                    (SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = e.id AND state = 'pending')
                WHERE e.enabled = 1 AND (e.lease_until IS NULL OR e.lease_until < ?1) AND d.next_attempt_at <= ?1
                LIMIT 1
                """)
            try due.bind(now.unixMilliseconds, at: 1)
            return try due.step()
        }
        guard anythingDue else { return [] }
        let claimed = try write("claim webhook deliveries") {
            (transaction: inout StoreTransaction) throws(StoreError) -> [WebhookWork] in
            try transaction.run("claim webhook deliveries") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [WebhookWork] in
                // Qualified: the join's deliveries have an id, a created_at too.
                let endpointColumns = Self.webhookEndpointColumns.split(separator: ",")
                    .map { "e." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
                let due = try connection.prepare(
                    """
                    SELECT \(endpointColumns) FROM webhook_endpoints e
                    JOIN webhook_deliveries d ON d.id =
                        (SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = e.id AND state = 'pending')
                    WHERE e.enabled = 1 AND (e.lease_until IS NULL OR e.lease_until < ?1) AND d.next_attempt_at <= ?1
                    ORDER BY d.next_attempt_at, e.id LIMIT ?2
                    """)
                try due.bind(now.unixMilliseconds, at: 1)
                try due.bind(Int64(max(0, maxEndpoints)), at: 2)
                var endpoints: [WebhookEndpoint] = []
                while try due.step() { endpoints.append(try Self.webhookEndpoint(from: due)) }
                var work: [WebhookWork] = []
                for endpoint in endpoints {
                    let lease = try connection.prepare(
                        """
                        UPDATE webhook_endpoints SET lease_owner = ?2, lease_until = ?3
                        WHERE id = ?1 AND (lease_until IS NULL OR lease_until < ?4)
                        """)
                    try lease.bind(endpoint.id, at: 1)
                    try lease.bind(owner, at: 2)
                    try lease.bind(leaseUntil.unixMilliseconds, at: 3)
                    try lease.bind(now.unixMilliseconds, at: 4)
                    try lease.run()
                    guard connection.changes == 1 else { continue }
                    let pending = try connection.prepare(
                        """
                        SELECT \(Self.webhookDeliveryColumns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")),
                            a.id, a.time, a.code, a.kind, a.details
                        FROM webhook_deliveries d LEFT JOIN audit_events a ON a.id = d.event_id
                        WHERE d.endpoint_id = ? AND d.state = 'pending' ORDER BY d.id LIMIT ?
                        """)
                    try pending.bind(endpoint.id, at: 1)
                    try pending.bind(Int64(max(1, maxDeliveries)), at: 2)
                    var items: [WebhookWork.Item] = []
                    while try pending.step() {
                        let delivery = try Self.webhookDelivery(from: pending)
                        var event: AuditEvent?
                        if let id = pending.int64(at: 14), let time = pending.int64(at: 15), let kind = pending.text(at: 17) {
                            event = AuditEvent(
                                id: id, time: Date(unixMilliseconds: time), code: pending.text(at: 16),
                                kind: AuditEvent.Kind(rawValue: kind),
                                details: try Self.details(fromJSON: pending.text(at: 18) ?? "{}"))
                        }
                        items.append(WebhookWork.Item(delivery: delivery, event: event, content: nil))
                    }
                    work.append(WebhookWork(endpoint: endpoint, items: items))
                }
                return work
            }
        }
        return try withContents(claimed)
    }

    /// `work` with the contents of its message rows.
    private func withContents(_ work: [WebhookWork]) throws(StoreError) -> [WebhookWork] {
        let ids = WebhookWork.eventIDs(of: work)
        guard !ids.isEmpty else { return work }
        let contents = try contents(auditIDs: ids, fileBytes: false)
        return contents.isEmpty ? work : work.map { $0.with(contents: contents) }
    }

    /// Records `attempt` and moves `owner`'s lease on `endpoint`: to `leaseUntil`, or released when nil. The attempt
    /// is recorded also when the lease was lost meanwhile (what happened, happened); the lease moves only while
    /// `owner` holds it, and ends when the endpoint changed since it was leased (disabled, another URL or secret).
    /// True when the sender may go on.
    public func recordWebhookAttempt(
        _ attempt: WebhookAttempt, endpoint: WebhookEndpoint, owner: String, leaseUntil: Date?
    ) throws(StoreError) -> Bool {
        let endpointID = endpoint.id
        return try write("record webhook attempt") { (transaction: inout StoreTransaction) throws(StoreError) -> Bool in
            try transaction.run("record webhook attempt") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Bool in
                let (state, next, finished, staleBefore) = WebhookAttemptRow.columns(of: attempt)
                let update = try connection.prepare(
                    """
                    UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?2, last_status = ?3,
                        last_error = ?4, state = ?5, next_attempt_at = ?6, finished_at = ?7
                    WHERE id = ?1 AND state = 'pending'
                    """)
                try update.bind(attempt.deliveryID, at: 1)
                try update.bind(attempt.at.unixMilliseconds, at: 2)
                try update.bind(attempt.status.map(Int64.init), at: 3)
                try update.bind(attempt.error, at: 4)
                try update.bind(state, at: 5)
                try update.bind(next, at: 6)
                try update.bind(finished, at: 7)
                try update.run()
                if let staleBefore {
                    // Given up with the delivery that failed: the rest of its backlog is as old, and would each wait
                    // for a timeout of its own before failing the same way.
                    let stale = try connection.prepare(
                        """
                        UPDATE webhook_deliveries SET state = 'failed', finished_at = ?2, next_attempt_at = NULL,
                            last_error = coalesce(last_error, ?4)
                        WHERE endpoint_id = ?1 AND state = 'pending' AND created_at < ?3
                        """)
                    try stale.bind(endpointID, at: 1)
                    try stale.bind(attempt.at.unixMilliseconds, at: 2)
                    try stale.bind(staleBefore.unixMilliseconds, at: 3)
                    try stale.bind(WebhookAttempt.givenUpWithOlder, at: 4)
                    try stale.run()
                }
                let lease = try connection.prepare(WebhookLeaseSQL.moveLease(parameter: { "?\($0)" }, enabled: "enabled = 1"))
                try lease.bind(endpointID, at: 1)
                try lease.bind(owner, at: 2)
                try lease.bind(leaseUntil?.unixMilliseconds, at: 3)
                try lease.bind(endpoint.url, at: 4)
                try lease.bind(endpoint.secret, at: 5)
                guard try lease.step() else { return false }
                return lease.text(at: 0) == owner
            }
        }
    }

    /// Ends `owner`'s lease on `endpointID`, or on every endpoint when nil (a node starting again under the same owner
    /// name: what it held when it stopped); nothing where another node holds the lease now.
    public func releaseWebhookLease(endpointID: String?, owner: String) throws(StoreError) {
        try write("release webhook lease") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.run("release webhook lease") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
                let lease = try connection.prepare(
                    """
                    UPDATE webhook_endpoints SET lease_owner = NULL, lease_until = NULL
                    WHERE (?1 IS NULL OR id = ?1) AND lease_owner = ?2
                    """)
                try lease.bind(endpointID, at: 1)
                try lease.bind(owner, at: 2)
                try lease.run()
            }
        }
    }

    /// Makes endpoint `endpointID`'s pending deliveries due at `now`, with `audit` (details gain `retried`); nil when
    /// there is no such endpoint.
    public func retryWebhookDeliveries(endpointID: String, now: Date, audit: AuditEvent) throws(StoreError) -> Int? {
        try write("retry webhook deliveries") { (transaction: inout StoreTransaction) throws(StoreError) -> Int? in
            let retried = try transaction.run("retry webhook deliveries") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int? in
                let exists = try connection.prepare("SELECT 1 FROM webhook_endpoints WHERE id = ?")
                try exists.bind(endpointID, at: 1)
                guard try exists.step() else { return nil }
                let due = try connection.prepare(
                    """
                    UPDATE webhook_deliveries SET next_attempt_at = ?2
                    WHERE endpoint_id = ?1 AND state = 'pending' AND next_attempt_at > ?2
                    """)
                try due.bind(endpointID, at: 1)
                try due.bind(now.unixMilliseconds, at: 2)
                try due.run()
                return connection.changes
            }
            guard let retried else { return nil }
            var audit = audit
            audit.details["retried"] = String(retried)
            _ = try transaction.append(audit)
            return retried
        }
    }

    /// Deletes deliveries delivered or given up before `before`; returns how many.
    @discardableResult
    public func pruneWebhookDeliveries(finishedBefore before: Date) throws(StoreError) -> Int {
        try write("prune webhook deliveries") { (transaction: inout StoreTransaction) throws(StoreError) -> Int in
            try transaction.run("prune webhook deliveries") {
                (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int in
                let prune = try connection.prepare(
                    "DELETE FROM webhook_deliveries WHERE state != 'pending' AND finished_at < ?")
                try prune.bind(before.unixMilliseconds, at: 1)
                try prune.run()
                let pruned = connection.changes
                // Rows of endpoints deleted meanwhile (another engine's race; here for the same cleanup everywhere).
                let orphans = try connection.prepare(
                    "DELETE FROM webhook_deliveries WHERE endpoint_id NOT IN (SELECT id FROM webhook_endpoints)")
                try orphans.run()
                return pruned + connection.changes
            }
        }
    }

    // MARK: rows

    private static func bind(_ endpoint: WebhookEndpoint, to statement: borrowing SQLiteDatabase.Statement)
        throws(StoreError)
    {
        try statement.bind(endpoint.id, at: 1)
        try statement.bind(endpoint.url, at: 2)
        try statement.bind(WebhookKindList.stored(endpoint.eventKinds), at: 3)
        try statement.bind(Int64(endpoint.isEnabled ? 1 : 0), at: 4)
        try statement.bind(endpoint.description, at: 5)
        try statement.bind(endpoint.createdAt.unixMilliseconds, at: 6)
        try statement.bind(endpoint.secret, at: 7)
        try statement.bind(endpoint.previousSecret, at: 8)
        try statement.bind(endpoint.previousSecretUntil?.unixMilliseconds, at: 9)
    }

    private static func webhookEndpoint(from statement: borrowing SQLiteDatabase.Statement) throws(StoreError)
        -> WebhookEndpoint
    {
        guard let id = statement.text(at: 0), let url = statement.text(at: 1), let kinds = statement.text(at: 2),
            let enabled = statement.int64(at: 3), let created = statement.int64(at: 5), let secret = statement.text(at: 6)
        else { throw invalidData("a webhook endpoint row lacks a required value") }
        return WebhookEndpoint(
            id: id, url: url, eventKinds: WebhookKindList.kinds(stored: kinds), isEnabled: enabled != 0,
            description: statement.text(at: 4), createdAt: Date(unixMilliseconds: created), secret: secret,
            previousSecret: statement.text(at: 7),
            previousSecretUntil: statement.int64(at: 8).map { Date(unixMilliseconds: $0) })
    }

    private static func webhookDelivery(from statement: borrowing SQLiteDatabase.Statement) throws(StoreError)
        -> WebhookDelivery
    {
        guard let id = statement.int64(at: 0), let endpoint = statement.text(at: 1),
            let event = statement.int64(at: 2), let kind = statement.text(at: 3),
            let stateText = statement.text(at: 5), let state = WebhookDelivery.State(rawValue: stateText),
            let attempts = statement.int64(at: 6), let created = statement.int64(at: 7)
        else { throw invalidData("a webhook delivery row lacks a required value") }
        func date(_ index: Int) -> Date? { statement.int64(at: index).map { Date(unixMilliseconds: $0) } }
        return WebhookDelivery(
            id: id, endpointID: endpoint, eventID: event, eventKind: kind, code: statement.text(at: 4), state: state,
            attempts: Int(attempts), createdAt: Date(unixMilliseconds: created), nextAttemptAt: date(8),
            lastAttemptAt: date(9), lastStatus: statement.int64(at: 10).map { Int($0) },
            lastError: statement.text(at: 11), finishedAt: date(12), redeliveryOf: statement.int64(at: 13))
    }
}
