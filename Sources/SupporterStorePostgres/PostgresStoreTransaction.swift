package import SupporterStore
package import Foundation
package import SupportPostgres
package import SupporterCore
import SupportWire
import SupportUtilities
package import SupporterModel

/// One open write transaction of a ``PostgresStoreEngine``: applies ``StoreIntent``s with parameterized statements
/// and appends audit events to the hash chain, whose digests ``AuditChain`` computes exactly as for SQLite.
///
/// The chain's head is read with `SELECT … FOR UPDATE` at the first append, so another node appending at the same
/// time waits for this transaction's commit; ``finish()`` writes the moved head back before the commit.
package struct PostgresStoreTransaction {
    package let connection: PostgresConnection
    /// The server, for errors (no password).
    package let location: String
    /// Where the next audit event links, once read (and locked).
    private(set) var chainHead: AuditChain.Head?
    /// Whether an append moved the head since it was read.
    private var headMoved = false
    /// This node among several sharing the database; nil for a node alone (no presence, no notifications).
    package let member: ClusterMember?
    /// What the other nodes are told at the commit (``finish()``), in order, each once.
    private var changes: [ClusterChange] = []

    package init(_ connection: PostgresConnection, location: String, member: ClusterMember? = nil) {
        self.connection = connection
        self.location = location
        self.member = member
    }

    /// Remembers a change to announce at the commit (a node alone announces nothing).
    package mutating func changed(_ change: ClusterChange) {
        guard member != nil, !changes.contains(change) else { return }
        changes.append(change)
    }

    /// Runs one statement; a PostgreSQL error becomes a ``StoreError`` naming `operation`.
    @discardableResult
    package func run(_ sql: String, _ parameters: [String?] = [], _ operation: String) throws(StoreError) -> PostgresRows {
        do {
            return try connection.query(sql, parameters, operation: operation)
        } catch {
            throw PostgresStoreEngine.storeError(error, location: location)
        }
    }

    /// Applies `intents` in order.
    package mutating func apply(_ intents: [StoreIntent]) throws(StoreError) {
        for intent in intents {
            switch intent {
            case .insertCode(let record):
                try insert(record)
                changed(.code(record.code))
            case .updateCode(let record):
                try update(record)
                changed(.code(record.code))
            case .deleteCode(let code):
                try run("DELETE FROM session_codes WHERE code = $1", [code], "delete session code")
                changed(.code(code))
            case .audit(let event): _ = try append(event)
            case .auditWithContent(let event, let content): try insertContent(content, auditID: try append(event))
            case .pruneContents(let before, let keepingBytes):
                try run(
                    "DELETE FROM session_contents WHERE time < $1", [String(before.unixMilliseconds)],
                    "forget message contents past their retention")
                try run(
                    SessionContentSQL.pruneOverLimit(parameter: "$1::bigint"), [String(keepingBytes)],
                    "forget the oldest message contents over the limit")
            case .saveBackoff(let row):
                try run(
                    """
                    INSERT INTO registration_backoff (key, failures, blocked_until, last_failure)
                    VALUES ($1, $2, $3, $4)
                    ON CONFLICT (key) DO UPDATE SET failures = excluded.failures,
                        blocked_until = excluded.blocked_until, last_failure = excluded.last_failure
                    """,
                    [
                        row.key, String(row.failures), row.blockedUntil.map { String($0.unixMilliseconds) },
                        String(row.lastFailure.unixMilliseconds),
                    ], "save registration back-off")
                changed(.backoff(key: row.key))
            case .deleteBackoff(let key):
                try run("DELETE FROM registration_backoff WHERE key = $1", [key], "delete registration back-off")
                changed(.backoff(key: key))
            case .saveAccount(let record):
                try run(
                    """
                    INSERT INTO supporter_accounts (login, display_name, role, state, password_hash, created_at,
                        updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7)
                    ON CONFLICT (login) DO UPDATE SET display_name = $2, role = $3, state = $4, password_hash = $5,
                        updated_at = $7
                    """,
                    [
                        record.login, record.displayName, record.role.rawValue, record.state.rawValue,
                        record.passwordHash, String(record.createdAt.unixMilliseconds),
                        String(record.updatedAt.unixMilliseconds),
                    ], "save supporter account")
                changed(.account(login: record.login))
            case .saveLoginSession(let record):
                try run(
                    """
                    INSERT INTO login_sessions (digest, id, login, csrf_token, created_at) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (digest) DO UPDATE SET id = $2, login = $3, csrf_token = $4, created_at = $5
                    """,
                    [
                        Self.bytea(record.digest), record.id, record.login, record.csrfToken,
                        String(record.createdAt.unixMilliseconds),
                    ], "save login session")
                changed(.loginSession(digestHex: AuditChain.hex(record.digest)))
            case .deleteLoginSession(let digest):
                try run("DELETE FROM login_sessions WHERE digest = $1", [Self.bytea(digest)], "delete login session")
                changed(.loginSession(digestHex: AuditChain.hex(digest)))
            case .deleteLoginSessions(let login):
                try run("DELETE FROM login_sessions WHERE login = $1", [login], "delete login sessions")
                changed(.loginSessions(login: login))
            case .deleteLoginSessionsBefore(let date):
                try run(
                    "DELETE FROM login_sessions WHERE created_at < $1", [String(date.unixMilliseconds)],
                    "forget expired login sessions")
            case .claimPresence(let code, let deviceName): try claimPresence(code, deviceName: deviceName)
            case .presenceState(let code, let state):
                guard let member else { break }
                let rows = try run(
                    "UPDATE device_presence SET state = $3 WHERE code = $1 AND node_id = $2 RETURNING code",
                    [code, member.nodeID, state.rawValue], "record the session's state")
                guard rows.count > 0 else { throw fenced(code) }
                changed(.presence(code: code))
            case .resumeState(let code, let text):
                guard let member else { break }
                let rows = try run(
                    "UPDATE device_presence SET resume = $3 WHERE code = $1 AND node_id = $2 RETURNING code",
                    [code, member.nodeID, text], "record the session for a resume elsewhere")
                guard rows.count > 0 else { throw fenced(code) }
            case .releasePresence(let code):
                guard let member else { break }
                // The row stays, free (lease 0, no resume record), naming the last node that held it: a release by a
                // node whose claim another node took over meanwhile finds no row of its own, and the job fails.
                let rows = try run(
                    """
                    UPDATE device_presence SET lease_until = 0, resume = NULL, state = 'online'
                    WHERE code = $1 AND node_id = $2 RETURNING code
                    """, [code, member.nodeID], "release device presence")
                guard rows.count > 0 else { throw fenced(code) }
                changed(.presence(code: code))
            case .handOverPresence(let code):
                guard let member else { break }
                // Lapsed at once, the resume record kept: the next node the device reaches takes the session over.
                let rows = try run(
                    "UPDATE device_presence SET lease_until = 0 WHERE code = $1 AND node_id = $2 RETURNING code",
                    [code, member.nodeID], "hand the session over")
                guard rows.count > 0 else { throw fenced(code) }
                changed(.presence(code: code))
            case .requirePresence(let code):
                guard let member else { break }
                let rows = try run(
                    "SELECT 1 FROM device_presence WHERE code = $1 AND node_id = $2 FOR SHARE",
                    [code, member.nodeID], "check this node's claim on the code")
                guard rows.count > 0 else { throw fenced(code) }
            }
        }
    }

    // MARK: message contents

    /// Keeps `content` under audit row `auditID` (``SessionContent``).
    mutating func insertContent(_ content: SessionContent, auditID: Int64) throws(StoreError) {
        let stored = content.stored
        try run(
            """
            INSERT INTO session_contents (audit_id, code, time, kind, content_type, name, size, body)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                String(auditID), content.code, String(content.time.unixMilliseconds), content.kind, stored.contentType,
                stored.name, String(stored.bytes.count), Self.bytea(stored.bytes),
            ], "keep a message content")
    }

    // MARK: presence

    /// This node's claim on `code` is gone: its lease lapsed and another node claimed the code since. What this node
    /// was about to record about the session did not happen (fencing: the session goes on there).
    private func fenced(_ code: String) -> StoreError {
        StoreError(
            kind: .fenced, operation: "record the session",
            message: "this node's presence on the code lapsed and another node claimed it since", path: location)
    }

    /// Takes the code for this node: a new row, or one whose lease ran out (its node died or lost the database), or
    /// this node's own. Another node's live row is ``StoreError/Kind/heldElsewhere``, and the job fails with it.
    private mutating func claimPresence(_ code: String, deviceName: String?) throws(StoreError) {
        guard let member else { return }
        let rows = try run(
            """
            INSERT INTO device_presence (code, node_id, since, lease_until, state, device_name)
            VALUES ($1, $2, rsup_now_ms(), rsup_now_ms() + $3, 'online', $4)
            ON CONFLICT (code) DO UPDATE SET node_id = excluded.node_id, since = excluded.since,
                lease_until = excluded.lease_until, state = excluded.state, device_name = excluded.device_name,
                resume = NULL
            WHERE device_presence.lease_until < rsup_now_ms() OR device_presence.node_id = excluded.node_id
            RETURNING code
            """, [code, member.nodeID, String(member.leaseMilliseconds), deviceName], "claim device presence")
        guard rows.count > 0 else {
            throw StoreError(
                kind: .heldElsewhere, operation: "claim device presence",
                message: "another node holds a device on this code", path: location)
        }
        changed(.presence(code: code))
    }

    // MARK: session codes

    /// Stores a new code with its code rules; ``StoreError/Kind/duplicate`` when it exists.
    package mutating func insert(_ record: SessionCodeRecord) throws(StoreError) {
        try run(
            """
            INSERT INTO session_codes (code, type, description, customer_name, customer_email, waiting_message,
                is_closed, created_at, valid_until, closed_at, assigned_supporter, default_feature_rule, media_descriptor)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, Self.parameters(record), "insert session code")
        try saveFeatureRules(of: record)
    }

    /// Replaces every field of the stored code; ``StoreError/Kind/notFound`` when there is none.
    package mutating func update(_ record: SessionCodeRecord) throws(StoreError) {
        let rows = try run(
            """
            UPDATE session_codes SET type = $2, description = $3, customer_name = $4, customer_email = $5,
                waiting_message = $6, is_closed = $7, created_at = $8, valid_until = $9, closed_at = $10,
                assigned_supporter = $11, default_feature_rule = $12, media_descriptor = $13
            WHERE code = $1 RETURNING code
            """, Self.parameters(record), "update session code")
        guard rows.count > 0 else {
            throw StoreError(
                kind: .notFound, operation: "update session code", message: "no such session code", path: location)
        }
        try saveFeatureRules(of: record)
    }

    private func saveFeatureRules(of record: SessionCodeRecord) throws(StoreError) {
        try run("DELETE FROM session_code_feature_rules WHERE code = $1", [record.code], "save code rules")
        for (feature, rule) in record.featureRules.rules.sorted(by: { $0.key < $1.key }) {
            try run(
                "INSERT INTO session_code_feature_rules (code, feature, rule) VALUES ($1, $2, $3)",
                [record.code, String(feature.rawValue), String(rule.rawValue)], "save code rules")
        }
    }

    package static func parameters(_ record: SessionCodeRecord) -> [String?] {
        [
            record.code, String(record.type.rawValue), record.description, record.customerName, record.customerEmail,
            record.waitingMessage, record.isClosed ? "true" : "false", String(record.createdAt.unixMilliseconds),
            String(record.validUntil.unixMilliseconds), record.closedAt.map { String($0.unixMilliseconds) },
            record.assignedSupporter, String(record.featureRules.defaultRule.rawValue),
            record.mediaDescriptor.map(Self.bytea),
        ]
    }

    // MARK: audit trail

    /// Appends one event (its `id` is ignored) linked into the hash chain; returns the id it was given.
    @discardableResult
    package mutating func append(_ event: AuditEvent) throws(StoreError) -> Int64 {
        let details = try AuditDetailsJSON.json(event.details)
        let head = try lockedHead()
        let id = head.nextID
        let time = event.time.unixMilliseconds
        let digest = AuditChain.digest(
            previous: head.digest, id: id, time: time, code: event.code.map { Array($0.utf8) },
            kind: Array(event.kind.rawValue.utf8), details: Array(details.utf8))
        try run(
            """
            INSERT INTO audit_events (id, time, code, kind, details, prev_digest, digest)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [
                String(id), String(time), event.code, event.kind.rawValue, details, Self.bytea(head.digest),
                Self.bytea(digest),
            ], "append audit event")
        chainHead = AuditChain.Head(digest: digest, nextID: id + 1)
        headMoved = true
        return id
    }

    private mutating func lockedHead() throws(StoreError) -> AuditChain.Head {
        if let chainHead { return chainHead }
        let rows = try run(
            "SELECT next_id, digest FROM audit_chain_head FOR UPDATE", [], "lock the audit chain's head")
        guard rows.count == 1, let next = rows[0, "next_id"].flatMap({ Int64($0) }),
            let digest = rows[0, "digest"].flatMap(Self.bytes(bytea:)), digest.count == 32
        else {
            throw StoreError(
                kind: .invalidData, operation: "lock the audit chain's head",
                message: "audit_chain_head must hold one row with a 32-byte digest", path: location)
        }
        let head = AuditChain.Head(digest: digest, nextID: next)
        chainHead = head
        return head
    }

    /// The head (and the changes to announce) as they were before a savepoint, restored when the savepoint is
    /// rolled back.
    package var savedHead: (AuditChain.Head?, Bool, Int) {
        get { (chainHead, headMoved, changes.count) }
        set {
            (chainHead, headMoved) = (newValue.0, newValue.1)
            changes.removeLast(max(0, changes.count - newValue.2))
        }
    }

    /// Writes the moved head back and queues the notifications of what changed; call it last, before the commit.
    package mutating func finish() throws(StoreError) {
        if let member {
            for change in changes {
                try run(
                    "SELECT pg_notify($1, $2)", [ClusterMember.changesChannel, change.payload(from: member.nodeID)],
                    "announce a change to the other nodes")
            }
            changes = []
        }
        guard headMoved, let chainHead else { return }
        try run(
            "UPDATE audit_chain_head SET next_id = $1, digest = $2", [String(chainHead.nextID), Self.bytea(chainHead.digest)],
            "move the audit chain's head")
        headMoved = false
    }

    // MARK: API tokens

    /// See ``StoreEngine/addToken(digest:scope:label:createdAt:audit:)``.
    package mutating func addToken(digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date)
        throws(StoreError) -> (record: APITokenRecord, isNew: Bool)
    {
        let operation = "add API token"
        let stored = try run(
            "SELECT \(PostgresStoreEngine.tokenColumns) FROM api_tokens WHERE digest = $1", [Self.bytea(digest)],
            operation)
        if stored.count > 0 {
            let record = try PostgresStoreEngine.tokenRecord(stored.rows[0], location: location)
            guard let revokedAt = record.revokedAt else { return (record, false) }
            throw StoreError(
                kind: .revoked, operation: operation,
                message:
                    "this API token (id \(record.id)) was revoked at \(revokedAt) and is never accepted again: "
                    + "issue a new one with 'rsup-supporter token'",
                path: location)
        }
        // Ids are random: on the rare clash with a stored id, draw again (ON CONFLICT keeps the transaction usable).
        for _ in 0..<8 {
            let record = APITokenRecord(id: APITokenRecord.makeID(), scope: scope, label: label, createdAt: createdAt)
            let inserted = try run(
                """
                INSERT INTO api_tokens (digest, id, label, created_at, scope) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                [Self.bytea(digest), record.id, label, String(createdAt.unixMilliseconds), scope.rawValue], operation)
            if inserted.count > 0 {
                changed(.token(id: record.id))
                return (record, true)
            }
        }
        throw StoreError(
            kind: .duplicate, operation: operation, message: "no unused token id found in 8 draws", path: location)
    }

    /// Revokes the active token `id`; false when there is none.
    package mutating func revokeToken(id: String, at date: Date) throws(StoreError) -> Bool {
        let revoked =
            try run(
                "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id",
                [String(date.unixMilliseconds), id], "revoke API token"
            ).count > 0
        if revoked { changed(.token(id: id)) }
        return revoked
    }

    // MARK: values

    /// A `bytea` parameter in text form (`\x` then hexadecimal).
    package static func bytea(_ bytes: [UInt8]) -> String { "\\x" + AuditChain.hex(bytes) }

    /// A `bytea` column as the server sends it in text form (`bytea_output = hex`).
    package static func bytes(bytea text: String) -> [UInt8]? {
        guard text.hasPrefix("\\x") else { return nil }
        return AuditChain.bytes(hex: String(text.dropFirst(2)))
    }
}
