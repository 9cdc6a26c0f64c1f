public import SupporterStore
import Dispatch
public import Foundation
import SupportPostgres
package import SupporterCore
import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary
public import SupporterModel

/// The PostgreSQL engine's reads and its synchronous writes (tokens), each run on the engine's thread through
/// ``PostgresStoreEngine/perform(_:_:)``: the snapshot loaded at start, token changes with their audit rows, the token
/// list, audit pages, the newest audit id, and the audit chain's verification.
extension PostgresStoreEngine {
    public func loadSnapshot(expiringLoginSessionsBefore expiredBefore: Date) throws(StoreError) -> StoreSnapshot {
        let location = self.location
        return try perform("load the store") { (connection: PostgresConnection) throws(StoreError) -> StoreSnapshot in
            var transaction = PostgresStoreTransaction(connection, location: location)
            try transaction.run("BEGIN", [], "begin transaction")
            do throws(StoreError) {
                try transaction.apply([.deleteLoginSessionsBefore(expiredBefore)])
                try transaction.run("COMMIT", [], "commit")
                try transaction.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [], "begin transaction")
                var snapshot = StoreSnapshot()
                snapshot.codes = try Self.codes(transaction)
                snapshot.backoff = try Self.backoffRows(transaction)
                snapshot.activeTokens = try Self.tokens(transaction, id: nil).filter { $0.record.revokedAt == nil }
                snapshot.accounts = try Self.accounts(transaction)
                snapshot.loginSessions = try Self.loginSessions(transaction)
                try transaction.run("COMMIT", [], "commit")
                return snapshot
            } catch {
                _ = try? connection.query("ROLLBACK", operation: "roll back")
                throw error
            }
        }
    }

    /// Tokens with their digests (revoked ones too), oldest first; only the one with public id `id` when given.
    package static func tokens(_ transaction: PostgresStoreTransaction, id: String?) throws(StoreError)
        -> [(digest: [UInt8], record: APITokenRecord)]
    {
        let location = transaction.location
        var tokens: [(digest: [UInt8], record: APITokenRecord)] = []
        for row in try transaction.run(
            "SELECT \(Self.tokenColumns), digest FROM api_tokens WHERE $1::text IS NULL OR id = $1 ORDER BY created_at, id",
            [id], "read API tokens"
        ).rows {
            guard let digest = row[5].flatMap(PostgresStoreTransaction.bytes(bytea:)) else {
                throw Self.invalidData("an API token digest is unreadable", location)
            }
            tokens.append((digest, try Self.tokenRecord(row, location: location)))
        }
        return tokens
    }

    /// Stored back-off rows; only `key`'s when given.
    package static func backoffRows(_ transaction: PostgresStoreTransaction, key: String? = nil) throws(StoreError)
        -> [BackoffRow]
    {
        var rows: [BackoffRow] = []
        for row in try transaction.run(
            "SELECT key, failures, blocked_until, last_failure FROM registration_backoff WHERE $1::text IS NULL OR key = $1",
            [key], "read registration back-off"
        ).rows {
            guard let key = row[0], let failures = row[1].flatMap({ Int($0) }), let last = row[3].flatMap({ Int64($0) })
            else { throw Self.invalidData("a back-off row lacks a required value", transaction.location) }
            rows.append(
                BackoffRow(
                    key: key, failures: failures,
                    blockedUntil: row[2].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)),
                    lastFailure: Date(unixMilliseconds: last)))
        }
        return rows
    }

    /// Supporter accounts by login; only `login`'s when given.
    package static func accounts(_ transaction: PostgresStoreTransaction, login: String? = nil) throws(StoreError)
        -> [SupporterAccountRecord]
    {
        let location = transaction.location
        var accounts: [SupporterAccountRecord] = []
        for row in try transaction.run(
            """
            SELECT login, display_name, role, state, password_hash, created_at, updated_at
            FROM supporter_accounts WHERE $1::text IS NULL OR login = $1 ORDER BY login
            """, [login], "list supporter accounts"
        ).rows {
            guard let login = row[0], let name = row[1], let role = row[2].flatMap(SupporterRole.init),
                let accountState = row[3].flatMap(SupporterAccountState.init), let hash = row[4],
                let created = row[5].flatMap({ Int64($0) }), let updated = row[6].flatMap({ Int64($0) })
            else { throw Self.invalidData("a supporter account row is unreadable", location) }
            accounts.append(
                SupporterAccountRecord(
                    login: login, displayName: name, role: role, state: accountState, passwordHash: hash,
                    createdAt: Date(unixMilliseconds: created), updatedAt: Date(unixMilliseconds: updated)))
        }
        return accounts
    }

    /// Stored login sessions, oldest first; only the one with `digest` when given.
    package static func loginSessions(_ transaction: PostgresStoreTransaction, digest: [UInt8]? = nil) throws(StoreError)
        -> [LoginSessionRecord]
    {
        let location = transaction.location
        var sessions: [LoginSessionRecord] = []
        for row in try transaction.run(
            """
            SELECT digest, id, login, csrf_token, created_at FROM login_sessions
            WHERE $1::bytea IS NULL OR digest = $1 ORDER BY created_at
            """, [digest.map(PostgresStoreTransaction.bytea)], "list login sessions"
        ).rows {
            guard let digest = row[0].flatMap(PostgresStoreTransaction.bytes(bytea:)), let id = row[1],
                let login = row[2], let csrf = row[3], let created = row[4].flatMap({ Int64($0) })
            else { throw Self.invalidData("a login session row is unreadable", location) }
            sessions.append(
                LoginSessionRecord(
                    digest: digest, id: id, login: login, csrfToken: csrf, createdAt: Date(unixMilliseconds: created)))
        }
        return sessions
    }

    /// Session codes with their rules, oldest first; only `code` when given.
    package static func codes(_ transaction: PostgresStoreTransaction, only code: String? = nil) throws(StoreError)
        -> [SessionCodeRecord]
    {
        let location = transaction.location
        var rules: [String: [Feature.ID: AccessRule]] = [:]
        for row in try transaction.run(
            "SELECT code, feature, rule FROM session_code_feature_rules WHERE $1::text IS NULL OR code = $1", [code],
            "read code rules"
        ).rows {
            guard let code = row[0], let feature = row[1].flatMap({ UInt16($0) }),
                let rule = row[2].flatMap({ UInt8($0) }).flatMap(AccessRule.init(rawValue:))
            else { throw invalidData("a code rule row is unreadable", location) }
            rules[code, default: [:]][Feature.ID(rawValue: feature)] = rule
        }
        var records: [SessionCodeRecord] = []
        for row in try transaction.run(
            """
            SELECT code, type, description, customer_name, customer_email, waiting_message, is_closed, created_at,
                valid_until, closed_at, assigned_supporter, default_feature_rule, media_descriptor
            FROM session_codes WHERE $1::text IS NULL OR code = $1 ORDER BY created_at, code
            """, [code], "list session codes"
        ).rows {
            guard let code = row[0], let type = row[1].flatMap({ UInt8($0) }).flatMap(SessionCodeType.init(rawValue:)),
                let closed = row[6], let created = row[7].flatMap({ Int64($0) }),
                let validUntil = row[8].flatMap({ Int64($0) }),
                let defaultRule = row[11].flatMap({ UInt8($0) }).flatMap(AccessRule.init(rawValue:))
            else { throw invalidData("a session code row is unreadable", location) }
            var featureRules = FeatureRules(default: defaultRule)
            featureRules.rules = rules[code] ?? [:]
            records.append(
                SessionCodeRecord(
                    code: code, type: type, description: row[2], customerName: row[3], customerEmail: row[4],
                    waitingMessage: row[5], isClosed: closed == "t", createdAt: Date(unixMilliseconds: created),
                    validUntil: Date(unixMilliseconds: validUntil),
                    closedAt: row[9].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)),
                    assignedSupporter: row[10], featureRules: featureRules,
                    mediaDescriptor: row[12].flatMap(PostgresStoreTransaction.bytes(bytea:))))
        }
        return records
    }

    public func addToken(
        digest: [UInt8], scope: APITokenScope, label: String?, createdAt: Date,
        audit: @escaping @Sendable (APITokenRecord) -> AuditEvent
    ) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) {
        let location = self.location
        let member = self.member
        return try perform("add API token") {
            (connection: PostgresConnection) throws(StoreError) -> (record: APITokenRecord, isNew: Bool) in
            try Self.inTransaction(connection, location, member) { (transaction: inout PostgresStoreTransaction) throws(StoreError) in
                let added = try transaction.addToken(digest: digest, scope: scope, label: label, createdAt: createdAt)
                if added.isNew { try transaction.append(audit(added.record)) }
                return added
            }
        }
    }

    public func revokeToken(id: String, at date: Date, audit: AuditEvent) throws(StoreError) -> Bool {
        let location = self.location
        let member = self.member
        return try perform("revoke API token") { (connection: PostgresConnection) throws(StoreError) -> Bool in
            try Self.inTransaction(connection, location, member) { (transaction: inout PostgresStoreTransaction) throws(StoreError) in
                guard try transaction.revokeToken(id: id, at: date) else { return false }
                try transaction.append(audit)
                return true
            }
        }
    }

    /// Runs `body` in one transaction on the engine's thread (the audit head written back before the commit, so an
    /// audit row appended in `body` commits with the change, or neither does).
    static func inTransaction<Result>(
        _ connection: PostgresConnection, _ location: String, _ member: ClusterMember?,
        _ body: (inout PostgresStoreTransaction) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        var transaction = PostgresStoreTransaction(connection, location: location, member: member)
        try transaction.run("BEGIN", [], "begin transaction")
        do throws(StoreError) {
            let result = try body(&transaction)
            try transaction.finish()
            try transaction.run("COMMIT", [], "commit")
            return result
        } catch {
            _ = try? connection.query("ROLLBACK", operation: "roll back")
            throw error
        }
    }

    package static let tokenColumns = "id, scope, label, created_at, revoked_at"

    package static func tokenRecord(_ row: [String?], location: String) throws(StoreError) -> APITokenRecord {
        guard let id = row[0], let scope = row[1].flatMap(APITokenScope.init(rawValue:)),
            let created = row[3].flatMap({ Int64($0) })
        else { throw invalidData("an API token row is unreadable", location) }
        return APITokenRecord(
            id: id, scope: scope, label: row[2], createdAt: Date(unixMilliseconds: created),
            revokedAt: row[4].flatMap { Int64($0) }.map(Date.init(unixMilliseconds:)))
    }

    public func tokens() throws(StoreError) -> [APITokenRecord] {
        let location = self.location
        return try perform("read API tokens") { (connection: PostgresConnection) throws(StoreError) -> [APITokenRecord] in
            let transaction = PostgresStoreTransaction(connection, location: location)
            var records: [APITokenRecord] = []
            for row in try transaction.run(
                "SELECT \(Self.tokenColumns) FROM api_tokens ORDER BY created_at, id", [], "read API tokens"
            ).rows {
                records.append(try Self.tokenRecord(row, location: location))
            }
            return records
        }
    }

    public func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var parameters: [String?] = []
        func add(_ condition: String, _ value: String) {
            parameters.append(value)
            conditions.append(condition + " $\(parameters.count)")
        }
        if let code { add("code =", code) }
        if let from { add("time >=", String(from.unixMilliseconds)) }
        if let to { add("time <", String(to.unixMilliseconds)) }
        if let afterID { add("id >", String(afterID)) }
        if let beforeID { add("id <", String(beforeID)) }
        parameters.append(String(max(0, limit)))
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql =
            "SELECT id, time, code, kind, details FROM audit_events \(filter) ORDER BY id\(newestFirst ? " DESC" : "") "
            + "LIMIT $\(parameters.count)"
        let location = self.location
        let bound = parameters
        return try perform("read audit events") { (connection: PostgresConnection) throws(StoreError) -> [AuditEvent] in
            let transaction = PostgresStoreTransaction(connection, location: location)
            var events: [AuditEvent] = []
            for row in try transaction.run(sql, bound, "read audit events").rows {
                guard let id = row[0].flatMap({ Int64($0) }), let time = row[1].flatMap({ Int64($0) }),
                    let kind = row[3]
                else { throw Self.invalidData("an audit event row is unreadable", location) }
                events.append(
                    AuditEvent(
                        id: id, time: Date(unixMilliseconds: time), code: row[2], kind: AuditEvent.Kind(rawValue: kind),
                        details: try AuditDetailsJSON.details(fromJSON: row[4] ?? "{}")))
            }
            return events
        }
    }

    public func code(_ code: String) throws(StoreError) -> SessionCodeRecord? {
        let location = self.location
        return try perform("read session code") { (connection: PostgresConnection) throws(StoreError) -> SessionCodeRecord? in
            try Self.codes(PostgresStoreTransaction(connection, location: location), only: code).first
        }
    }

    public func latestAuditID() throws(StoreError) -> Int64 {
        let location = self.location
        return try perform("read the newest audit id") { (connection: PostgresConnection) throws(StoreError) -> Int64 in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                "SELECT coalesce(max(id), 0) FROM audit_events", [], "read the newest audit id")
            return rows.rows.first?[0].flatMap { Int64($0) } ?? 0
        }
    }

    public func contents(auditIDs: [Int64], fileBytes: Bool) throws(StoreError) -> [Int64: StoredSessionContent] {
        guard !auditIDs.isEmpty else { return [:] }
        let location = self.location
        let body = fileBytes ? "body" : "CASE WHEN kind = 'file' THEN NULL ELSE body END"
        return try perform("read message contents") {
            (connection: PostgresConnection) throws(StoreError) -> [Int64: StoredSessionContent] in
            let rows = try PostgresStoreTransaction(connection, location: location).run(
                """
                SELECT audit_id, code, time, kind, content_type, name, size, \(body) AS body
                FROM session_contents WHERE audit_id = ANY($1::bigint[])
                """, [PostgresArray.text(auditIDs.map { String($0) })], "read message contents")
            var found: [Int64: StoredSessionContent] = [:]
            for index in 0..<rows.count {
                guard let id = rows[index, "audit_id"].flatMap({ Int64($0) }), let code = rows[index, "code"],
                    let time = rows[index, "time"].flatMap({ Int64($0) }), let kind = rows[index, "kind"],
                    let size = rows[index, "size"].flatMap({ Int($0) })
                else { throw Self.invalidData("a message content row lacks a required value", location) }
                let bytes = rows[index, "body"].flatMap(PostgresStoreTransaction.bytes(bytea:)) ?? []
                guard
                    let content = SessionContent(
                        code: code, time: Date(unixMilliseconds: time), kind: kind,
                        contentType: rows[index, "content_type"], name: rows[index, "name"], bytes: bytes)
                else { throw Self.invalidData("a message content row of unknown kind '\(kind)'", location) }
                found[id] = StoredSessionContent(auditID: id, content: content, size: size)
            }
            return found
        }
    }
}
