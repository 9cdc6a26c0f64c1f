package import SupporterStore
import SupporterCore
package import SupportPostgres
import SupportWire
import SupportUtilities

/// The PostgreSQL store's schema: the same concepts as the SQLite one (``StoreSchema``) — session codes and their code
/// rules, supporter accounts, login sessions, API token digests, registration back-off, the hash-chained audit trail
/// and the webhook outbox — with its version in a `schema_version` table.
///
/// Opening runs every migration newer than the database's version, all in one transaction, under an advisory lock so
/// that nodes starting together migrate once. A database newer than ``currentVersion`` is refused, never changed.
/// To change the schema, append a migration with the next version; never edit one that has shipped.
///
/// Times are Unix milliseconds (`bigint`), as in SQLite, so the audit chain digests the same numbers on both engines.
/// The audit chain's head (next id, newest digest) is one row of `audit_chain_head`: every append locks it
/// (`SELECT … FOR UPDATE`) in its transaction, so appends from several nodes take their turns and the chain stays one
/// line.
package enum PostgresStoreSchema {
    /// One step of the schema: its statements, run in order (libpq's parameterized calls take one statement each).
    package struct Migration: Sendable {
        let version: Int
        let summary: String
        let statements: [String]
    }

    /// An arbitrary constant for `pg_advisory_xact_lock`: the store's migrations run one node at a time.
    package static let migrationLock = "727375700012"

    package static let migrations: [Migration] = [
        Migration(
            version: 1,
            summary: "codes, code rules, accounts, login sessions, API tokens, back-off, hash-chained audit trail",
            statements: [
                """
                CREATE TABLE session_codes (
                    code text PRIMARY KEY,
                    type integer NOT NULL,
                    description text,
                    customer_name text,
                    customer_email text,
                    waiting_message text,
                    is_closed boolean NOT NULL DEFAULT false,
                    created_at bigint NOT NULL,
                    valid_until bigint NOT NULL,
                    closed_at bigint,
                    assigned_supporter text,
                    default_feature_rule smallint NOT NULL DEFAULT 1 CHECK (default_feature_rule IN (1, 2, 3))
                )
                """,
                "CREATE INDEX session_codes_by_created ON session_codes (created_at, code)",
                "CREATE INDEX session_codes_by_assignee ON session_codes (assigned_supporter)",
                """
                CREATE TABLE session_code_feature_rules (
                    code text NOT NULL REFERENCES session_codes (code) ON DELETE CASCADE ON UPDATE CASCADE,
                    feature integer NOT NULL CHECK (feature BETWEEN 0 AND 65535),
                    rule smallint NOT NULL CHECK (rule IN (1, 2, 3)),
                    PRIMARY KEY (code, feature)
                )
                """,
                """
                CREATE TABLE audit_events (
                    id bigint PRIMARY KEY,
                    time bigint NOT NULL,
                    code text,
                    kind text NOT NULL,
                    details text NOT NULL DEFAULT '{}',
                    prev_digest bytea NOT NULL CHECK (length(prev_digest) = 32),
                    digest bytea NOT NULL CHECK (length(digest) = 32)
                )
                """,
                "CREATE INDEX audit_events_by_code_time ON audit_events (code, time)",
                "CREATE INDEX audit_events_by_time ON audit_events (time)",
                """
                CREATE TABLE audit_chain_head (
                    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                    next_id bigint NOT NULL,
                    digest bytea NOT NULL CHECK (length(digest) = 32)
                )
                """,
                "INSERT INTO audit_chain_head (only_row, next_id, digest) VALUES (true, 1, decode(repeat('00', 32), 'hex'))",
                """
                CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'audit events are append-only'; END $$
                """,
                """
                CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
                FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()
                """,
                """
                CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
                FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()
                """,
                """
                CREATE TABLE api_tokens (
                    digest bytea PRIMARY KEY CHECK (length(digest) > 0),
                    id text NOT NULL UNIQUE,
                    label text,
                    created_at bigint NOT NULL,
                    scope text NOT NULL DEFAULT 'device' CHECK (scope IN ('device', 'admin')),
                    revoked_at bigint
                )
                """,
                """
                CREATE TABLE registration_backoff (
                    key text PRIMARY KEY,
                    failures integer NOT NULL,
                    blocked_until bigint,
                    last_failure bigint NOT NULL
                )
                """,
                "CREATE INDEX registration_backoff_by_last_failure ON registration_backoff (last_failure)",
                """
                CREATE TABLE supporter_accounts (
                    login text PRIMARY KEY,
                    display_name text NOT NULL,
                    role text NOT NULL CHECK (role IN ('supporter', 'admin')),
                    state text NOT NULL CHECK (state IN ('active', 'disabled')),
                    password_hash text NOT NULL,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL
                )
                """,
                """
                CREATE TABLE login_sessions (
                    digest bytea PRIMARY KEY,
                    id text NOT NULL,
                    login text NOT NULL REFERENCES supporter_accounts (login) ON DELETE CASCADE,
                    csrf_token text NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                "CREATE INDEX login_sessions_by_login ON login_sessions (login)",
            ]),
        Migration(
            version: 2,
            summary: "several nodes: device presence with leases, commands between nodes",
            statements: [
                // The database's clock, so that nodes whose clocks differ agree on leases.
                """
                CREATE FUNCTION rsup_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
                $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$
                """,
                // The primary key is "one device per code" across nodes.
                """
                CREATE TABLE device_presence (
                    code text PRIMARY KEY,
                    node_id text NOT NULL,
                    since bigint NOT NULL,
                    lease_until bigint NOT NULL,
                    state text NOT NULL DEFAULT 'online' CHECK (state IN ('online', 'request_pending', 'active')),
                    device_name text,
                    resume text
                )
                """,
                "CREATE INDEX device_presence_by_node ON device_presence (node_id)",
                """
                CREATE TABLE node_commands (
                    id bigserial PRIMARY KEY,
                    origin_node text NOT NULL,
                    target_node text NOT NULL,
                    code text NOT NULL,
                    command text NOT NULL,
                    created_at bigint NOT NULL,
                    done_at bigint,
                    result text
                )
                """,
                "CREATE INDEX node_commands_waiting ON node_commands (target_node, id) WHERE done_at IS NULL",
                "CREATE INDEX node_commands_answered ON node_commands (origin_node, done_at)",
                "CREATE INDEX node_commands_by_created ON node_commands (created_at)",
            ]),
        Migration(
            version: 3,
            summary: "audit archives: anchors, and deletes of archived events through a gate",
            statements: [
                // The guard functions below keep this search path (FROM CURRENT): the store's schema, then pg_temp
                // named last, so a temporary table cannot stand in for the gate.
                "SELECT set_config('search_path', quote_ident(current_schema()) || ', pg_temp', true)",
                """
                CREATE TABLE audit_anchors (
                    last_id bigint PRIMARY KEY,
                    last_digest bytea NOT NULL CHECK (length(last_digest) = 32),
                    archived_at bigint NOT NULL,
                    event_count bigint NOT NULL
                )
                """,
                // Holds one row only inside an archive's transaction: the ids it may delete.
                "CREATE TABLE audit_prune_gate (up_to_id bigint NOT NULL)",
                """
                CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM audit_prune_gate WHERE OLD.id <= up_to_id) THEN
                        RETURN OLD;
                    END IF;
                    RAISE EXCEPTION 'audit events are append-only';
                END $$
                """,
                """
                CREATE FUNCTION audit_anchors_guard() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM audit_prune_gate WHERE up_to_id = NEW.last_id) THEN
                        RETURN NEW;
                    END IF;
                    RAISE EXCEPTION 'audit anchors are written only by an archive, and never changed';
                END $$
                """,
                """
                CREATE TRIGGER audit_anchors_no_change BEFORE INSERT OR UPDATE OR DELETE ON audit_anchors
                FOR EACH ROW EXECUTE FUNCTION audit_anchors_guard()
                """,
                """
                CREATE TRIGGER audit_anchors_no_truncate BEFORE TRUNCATE ON audit_anchors
                FOR EACH STATEMENT EXECUTE FUNCTION audit_anchors_guard()
                """,
            ]),
        Migration(
            version: 4,
            summary: "message contents: chat lines, application messages and files, under their audit row, for a retention time",
            statements: [
                """
                CREATE TABLE session_contents (
                    audit_id bigint PRIMARY KEY,
                    code text NOT NULL,
                    time bigint NOT NULL,
                    kind text NOT NULL CHECK (kind IN ('chat', 'application', 'file')),
                    content_type text,
                    name text,
                    size bigint NOT NULL,
                    body bytea NOT NULL
                )
                """,
                "CREATE INDEX session_contents_by_time ON session_contents (time)",
            ]),
        Migration(
            version: 5, summary: "a code's default media descriptor (SPEC §15), for requests that name none",
            statements: ["ALTER TABLE session_codes ADD COLUMN media_descriptor bytea"]),
        Migration(
            version: 6,
            summary: "webhooks: endpoints, and an outbox of deliveries made with each audit event an endpoint wants",
            statements: [
                // The outbox function keeps this search path (FROM CURRENT), as migration 3's guards do.
                "SELECT set_config('search_path', quote_ident(current_schema()) || ', pg_temp', true)",
                // Kinds as WebhookKindList stores them: '*', or ',a,b,'. Leases: one node delivers to an endpoint.
                """
                CREATE TABLE webhook_endpoints (
                    id text PRIMARY KEY,
                    url text NOT NULL,
                    event_kinds text NOT NULL,
                    enabled boolean NOT NULL,
                    description text,
                    created_at bigint NOT NULL,
                    secret text NOT NULL,
                    previous_secret text,
                    previous_secret_until bigint,
                    lease_owner text,
                    lease_until bigint
                )
                """,
                """
                CREATE TABLE webhook_deliveries (
                    id bigserial PRIMARY KEY,
                    endpoint_id text NOT NULL,
                    event_id bigint NOT NULL,
                    event_kind text NOT NULL,
                    code text,
                    state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
                    attempts integer NOT NULL DEFAULT 0,
                    created_at bigint NOT NULL,
                    next_attempt_at bigint,
                    last_attempt_at bigint,
                    last_status integer,
                    last_error text,
                    finished_at bigint,
                    redelivery_of bigint
                )
                """,
                "CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, id) WHERE state = 'pending'",
                "CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id)",
                "CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state <> 'pending'",
                // In the audit row's own transaction: an event is in the outbox exactly when it is in the trail.
                """
                CREATE FUNCTION audit_events_webhook_outbox() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_kind, code, state, created_at,
                        next_attempt_at)
                    SELECT id, NEW.id, NEW.kind, NEW.code, 'pending', NEW.time, NEW.time FROM webhook_endpoints
                    WHERE enabled AND (event_kinds = '*' OR strpos(event_kinds, ',' || NEW.kind || ',') > 0);
                    RETURN NULL;
                END $$
                """,
                """
                CREATE TRIGGER audit_events_webhook_outbox AFTER INSERT ON audit_events
                FOR EACH ROW EXECUTE FUNCTION audit_events_webhook_outbox()
                """,
            ]),
    ]

    /// What ``PostgresStoreEngine/verifyAudit()`` expects of the audit trail's guards, as the newest migration that
    /// touched them left them. Written out apart from the migrations, which never change once shipped.
    package struct AuditGuard: Sendable {
        /// The trigger, and the table it is on.
        let table: String
        let trigger: String
        /// `pg_trigger.tgtype`: 1 row, 2 before, 4 insert, 8 delete, 16 update, 32 truncate.
        let type: Int
        /// The function it runs, and that function's body (`pg_proc.prosrc`, white space aside).
        let function: String
        let body: String
    }

    package static let auditEventsGuardBody = """
        BEGIN
            IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM audit_prune_gate WHERE OLD.id <= up_to_id) THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION 'audit events are append-only';
        END
        """

    package static let auditAnchorsGuardBody = """
        BEGIN
            IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM audit_prune_gate WHERE up_to_id = NEW.last_id) THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'audit anchors are written only by an archive, and never changed';
        END
        """

    package static let auditGuards = [
        AuditGuard(
            table: "audit_events", trigger: "audit_events_no_change", type: 1 | 2 | 8 | 16,
            function: "audit_events_append_only", body: auditEventsGuardBody),
        AuditGuard(
            table: "audit_events", trigger: "audit_events_no_truncate", type: 2 | 32,
            function: "audit_events_append_only", body: auditEventsGuardBody),
        AuditGuard(
            table: "audit_anchors", trigger: "audit_anchors_no_change", type: 1 | 2 | 4 | 8 | 16,
            function: "audit_anchors_guard", body: auditAnchorsGuardBody),
        AuditGuard(
            table: "audit_anchors", trigger: "audit_anchors_no_truncate", type: 2 | 32,
            function: "audit_anchors_guard", body: auditAnchorsGuardBody),
    ]

    /// The schema version this code writes and understands.
    package static var currentVersion: Int { migrations.last?.version ?? 0 }

    /// The database's schema version, read without changing anything (for tools that open a node's store, such as
    /// `rsup-supporter audit`): ``StoreError/Kind/notFound`` when no node ever created its tables there,
    /// ``StoreError/Kind/schemaTooNew`` when a newer node wrote it, ``StoreError/Kind/invalidData`` when it is older
    /// than ``currentVersion`` (a node of this version migrates it at its start).
    @discardableResult
    package static func check(_ connection: PostgresConnection, location: String) throws(StoreError) -> Int {
        let stored: Int?
        do {
            let table = try connection.query(
                "SELECT to_regclass('schema_version') IS NOT NULL AS present", operation: "look for the store's tables")
            if table[0, "present"] == "t" {
                let rows = try connection.query(
                    "SELECT coalesce(max(version), 0) AS version FROM schema_version", operation: "read schema version")
                stored = rows[0, "version"].flatMap { Int($0) } ?? 0
            } else {
                stored = nil
            }
        } catch {
            throw PostgresStoreEngine.storeError(error, location: location)
        }
        guard let found = stored else {
            throw StoreError(
                kind: .notFound, operation: "open",
                message: "this database holds no supporter node store: give the --store a node serves with",
                path: location)
        }
        guard found <= currentVersion else {
            throw StoreError(
                kind: .schemaTooNew, operation: "open",
                message: "database schema version \(found) is newer than this program supports (\(currentVersion))",
                path: location)
        }
        guard found == currentVersion else {
            throw StoreError(
                kind: .invalidData, operation: "open",
                message:
                    "database schema version \(found) is older than this program reads (\(currentVersion)): start a "
                    + "node of this version on it once to migrate it",
                path: location)
        }
        return found
    }

    /// Brings the database to ``currentVersion`` in one transaction; returns the version found.
    @discardableResult
    package static func migrate(_ connection: PostgresConnection, location: String) throws(StoreError) -> Int {
        let found: Int
        do {
            found = try connection.transaction { (connection: PostgresConnection) throws(PostgresError) -> Int in
                try connection.query(
                    "SELECT pg_advisory_xact_lock($1::bigint)", [migrationLock], operation: "lock the schema")
                try connection.query(
                    "CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)",
                    operation: "create schema_version")
                let rows = try connection.query(
                    "SELECT coalesce(max(version), 0) AS version FROM schema_version", operation: "read schema version")
                let found = rows[0, "version"].flatMap { Int($0) } ?? 0
                guard found <= currentVersion else { return found }
                for migration in migrations where migration.version > found {
                    for statement in migration.statements {
                        try connection.query(
                            statement,
                            operation: "migrate to schema version \(migration.version) (\(migration.summary))")
                    }
                }
                if found != currentVersion {
                    try connection.query("DELETE FROM schema_version", operation: "set schema version")
                    try connection.query(
                        "INSERT INTO schema_version (version) VALUES ($1)", [String(currentVersion)],
                        operation: "set schema version")
                }
                return found
            }
        } catch {
            throw PostgresStoreEngine.storeError(error, location: location)
        }
        guard found <= currentVersion else {
            throw StoreError(
                kind: .schemaTooNew, operation: "open",
                message: "database schema version \(found) is newer than this node supports (\(currentVersion))",
                path: location)
        }
        return found
    }
}
