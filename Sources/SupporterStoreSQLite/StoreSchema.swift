public import SupporterStore
import SupporterCore
import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary
/// The supporter store's schema: its version, kept in SQLite's `PRAGMA user_version`, and the ordered migrations
/// that lead to it.
///
/// Opening a database runs every migration newer than the file's version, all in one transaction: a crash or an
/// error leaves the file at its old version, untouched. A file whose version is newer than ``currentVersion`` was
/// written by a newer node and is refused (``StoreError/Kind/schemaTooNew``), never changed.
///
/// To change the schema, append a migration with the next version; never edit one that has shipped.
public enum StoreSchema {
    /// One step of the schema: the SQL that brings a database from `version - 1` to `version`, and optionally work in
    /// Swift that SQL cannot do (computing digests), run after the SQL in the same transaction.
    public struct Migration: Sendable {
        public let version: Int32
        public let summary: String
        public let sql: String
        /// Runs after ``sql``, inside the migration's transaction; its error rolls the whole migration back.
        public let step: (@Sendable (borrowing SQLiteDatabase.Connection) throws(StoreError) -> Void)?

        public init(
            version: Int32, summary: String, sql: String,
            then step: (@Sendable (borrowing SQLiteDatabase.Connection) throws(StoreError) -> Void)? = nil
        ) {
            self.version = version
            self.summary = summary
            self.sql = sql
            self.step = step
        }
    }

    /// Every migration, in order; versions count up from 1.
    public static let migrations: [Migration] = [
        Migration(
            version: 1, summary: "session codes, audit log, API token digests, registration back-off",
            sql: """
                CREATE TABLE session_codes (
                    code TEXT PRIMARY KEY NOT NULL,
                    type INTEGER NOT NULL,
                    description TEXT,
                    customer_name TEXT,
                    customer_email TEXT,
                    waiting_message TEXT,
                    is_closed INTEGER NOT NULL DEFAULT 0 CHECK (is_closed IN (0, 1)),
                    created_at INTEGER NOT NULL,
                    valid_until INTEGER NOT NULL,
                    closed_at INTEGER,
                    assigned_supporter TEXT
                ) STRICT;
                CREATE INDEX session_codes_by_created ON session_codes (created_at, code);

                CREATE TABLE audit_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    time INTEGER NOT NULL,
                    code TEXT,
                    kind TEXT NOT NULL,
                    details TEXT NOT NULL DEFAULT '{}'
                ) STRICT;
                CREATE INDEX audit_events_by_code_time ON audit_events (code, time);
                CREATE INDEX audit_events_by_time ON audit_events (time);
                CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
                BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
                CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
                BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
                -- INSERT OR REPLACE deletes without firing DELETE triggers: refuse an insert over an existing id.
                CREATE TRIGGER audit_events_no_replace BEFORE INSERT ON audit_events
                WHEN NEW.id IS NOT NULL AND EXISTS (SELECT 1 FROM audit_events WHERE id = NEW.id)
                BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;

                CREATE TABLE api_tokens (
                    digest BLOB PRIMARY KEY NOT NULL CHECK (length(digest) > 0),
                    label TEXT,
                    created_at INTEGER NOT NULL
                ) STRICT;

                CREATE TABLE registration_backoff (
                    key TEXT PRIMARY KEY NOT NULL,
                    failures INTEGER NOT NULL,
                    blocked_until INTEGER,
                    last_failure INTEGER NOT NULL
                ) STRICT;
                CREATE INDEX registration_backoff_by_last_failure ON registration_backoff (last_failure);
                """),
        Migration(
            version: 2, summary: "API token scopes: device tokens register devices, admin tokens use the REST API",
            sql: """
                ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'device'
                    CHECK (scope IN ('device', 'admin'));
                """),
        Migration(
            version: 3,
            summary: "hash-chained audit trail: digests on every event, archive anchors, a gate for archiving",
            sql: """
                ALTER TABLE audit_events ADD COLUMN prev_digest BLOB;
                ALTER TABLE audit_events ADD COLUMN digest BLOB;
                -- Dropped while the step below chains the existing events; it creates them again (see auditTriggers).
                DROP TRIGGER audit_events_no_update;
                DROP TRIGGER audit_events_no_delete;

                CREATE TABLE audit_anchors (
                    last_id INTEGER PRIMARY KEY NOT NULL,
                    last_digest BLOB NOT NULL CHECK (length(last_digest) = 32),
                    archived_at INTEGER NOT NULL,
                    event_count INTEGER NOT NULL
                ) STRICT;
                -- Holds one row only inside SessionStore.archiveAudit's transaction: the ids it may delete.
                CREATE TABLE audit_prune_gate (up_to_id INTEGER NOT NULL) STRICT;
                """,
            then: chainExistingEvents),
        Migration(
            version: 4, summary: "API token identity: a public id, and revocation that keeps the row",
            sql: """
                ALTER TABLE api_tokens ADD COLUMN id TEXT;
                ALTER TABLE api_tokens ADD COLUMN revoked_at INTEGER;
                UPDATE api_tokens SET id = lower(hex(randomblob(6)));
                CREATE UNIQUE INDEX api_tokens_by_id ON api_tokens (id);
                """),
        Migration(
            version: 5,
            summary: "code rules (SPEC §15.3): a default rule per code, and a rule per feature where one is set",
            sql: """
                -- 1 allow, 2 confirm, 3 deny (AccessRule's raw values). Existing codes get the code default: allow.
                ALTER TABLE session_codes ADD COLUMN default_feature_rule INTEGER NOT NULL DEFAULT 1
                    CHECK (default_feature_rule IN (1, 2, 3));
                CREATE TABLE session_code_feature_rules (
                    code TEXT NOT NULL REFERENCES session_codes (code) ON DELETE CASCADE ON UPDATE CASCADE,
                    feature INTEGER NOT NULL CHECK (feature BETWEEN 0 AND 65535),
                    rule INTEGER NOT NULL CHECK (rule IN (1, 2, 3)),
                    PRIMARY KEY (code, feature)
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            version: 6, summary: "supporter accounts: login, display name, role, state, scrypt password hash",
            sql: """
                CREATE TABLE supporter_accounts (
                    login TEXT PRIMARY KEY NOT NULL,
                    display_name TEXT NOT NULL,
                    role TEXT NOT NULL CHECK (role IN ('supporter', 'admin')),
                    state TEXT NOT NULL CHECK (state IN ('active', 'disabled')),
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX session_codes_by_assignee ON session_codes (assigned_supporter);
                """),
        Migration(
            version: 7, summary: "login sessions (digests of their secrets), so a restart does not sign supporters out",
            sql: """
                CREATE TABLE login_sessions (
                    digest BLOB PRIMARY KEY NOT NULL,
                    id TEXT NOT NULL,
                    login TEXT NOT NULL REFERENCES supporter_accounts (login) ON DELETE CASCADE,
                    csrf_token TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX login_sessions_by_login ON login_sessions (login);
                """),
        Migration(
            version: 8,
            summary: "resume records: the state of each device session, so a restarted node resumes it",
            sql: """
                CREATE TABLE resume_records (
                    code TEXT PRIMARY KEY NOT NULL,
                    state TEXT NOT NULL
                ) STRICT;
                """),
        Migration(
            version: 9,
            summary: "message contents: chat lines, application messages and files, under their audit row, for a retention time",
            sql: """
                CREATE TABLE session_contents (
                    audit_id INTEGER PRIMARY KEY NOT NULL,
                    code TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('chat', 'application', 'file')),
                    content_type TEXT,
                    name TEXT,
                    size INTEGER NOT NULL,
                    body BLOB NOT NULL
                ) STRICT;
                CREATE INDEX session_contents_by_time ON session_contents (time);
                """),
        Migration(
            version: 10, summary: "a code's default media descriptor (SPEC §15), for requests that name none",
            sql: "ALTER TABLE session_codes ADD COLUMN media_descriptor BLOB;"),
        Migration(
            version: 11,
            summary: "webhooks: endpoints, and an outbox of deliveries made with each audit event an endpoint wants",
            sql: """
                CREATE TABLE webhook_endpoints (
                    id TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    event_kinds TEXT NOT NULL,
                    enabled INTEGER NOT NULL,
                    description TEXT,
                    created_at INTEGER NOT NULL,
                    secret TEXT NOT NULL,
                    previous_secret TEXT,
                    previous_secret_until INTEGER,
                    lease_owner TEXT,
                    lease_until INTEGER
                ) STRICT;
                CREATE TABLE webhook_deliveries (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    endpoint_id TEXT NOT NULL,
                    event_id INTEGER NOT NULL,
                    event_kind TEXT NOT NULL,
                    code TEXT,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    next_attempt_at INTEGER,
                    last_attempt_at INTEGER,
                    last_status INTEGER,
                    last_error TEXT,
                    finished_at INTEGER,
                    redelivery_of INTEGER
                ) STRICT;
                CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, id) WHERE state = 'pending';
                CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
                CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state != 'pending';
                CREATE TRIGGER audit_events_webhook_outbox AFTER INSERT ON audit_events
                BEGIN
                    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_kind, code, state, created_at, next_attempt_at)
                    SELECT id, NEW.id, NEW.kind, NEW.code, 'pending', NEW.time, NEW.time FROM webhook_endpoints
                    WHERE enabled = 1 AND (event_kinds = '*' OR instr(event_kinds, ',' || NEW.kind || ',') > 0);
                END;
                """),
    ]

    /// The triggers that keep the audit trail append-only, by name, exactly as the store creates them;
    /// ``SessionStore/verifyAudit()`` checks each is present and unchanged. `audit_events_no_replace` is migration 1's;
    /// the others are migration 3's. A later migration that changes one of them must change this list too (and leave
    /// migration 3 alone: it creates ``auditTriggersOfMigration3``).
    public static let auditTriggers: [(name: String, sql: String)] =
        [
            (
                "audit_events_no_replace",
                """
                CREATE TRIGGER audit_events_no_replace BEFORE INSERT ON audit_events
                WHEN NEW.id IS NOT NULL AND EXISTS (SELECT 1 FROM audit_events WHERE id = NEW.id)
                BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END
                """
            )
        ] + auditTriggersOfMigration3

    /// The triggers migration 3 creates. Shipped: never edit.
    package static let auditTriggersOfMigration3: [(name: String, sql: String)] = [
        (
            "audit_events_no_update",
            """
            CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
            BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END
            """
        ),
        (
            "audit_events_no_delete",
            """
            CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
            WHEN NOT EXISTS (SELECT 1 FROM audit_prune_gate WHERE OLD.id <= up_to_id)
            BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END
            """
        ),
        (
            "audit_anchors_no_update",
            """
            CREATE TRIGGER audit_anchors_no_update BEFORE UPDATE ON audit_anchors
            BEGIN SELECT RAISE(ABORT, 'audit anchors are append-only'); END
            """
        ),
        (
            "audit_anchors_no_delete",
            """
            CREATE TRIGGER audit_anchors_no_delete BEFORE DELETE ON audit_anchors
            BEGIN SELECT RAISE(ABORT, 'audit anchors are append-only'); END
            """
        ),
        (
            "audit_anchors_through_the_gate",
            """
            CREATE TRIGGER audit_anchors_through_the_gate BEFORE INSERT ON audit_anchors
            WHEN NOT EXISTS (SELECT 1 FROM audit_prune_gate WHERE up_to_id = NEW.last_id)
            BEGIN SELECT RAISE(ABORT, 'audit anchors are written only by an archive'); END
            """
        ),
    ]

    /// Migration 3's step: gives every existing event its place in the chain, in id order from the genesis digest,
    /// a thousand at a time, then creates the append-only triggers again.
    package static func chainExistingEvents(_ connection: borrowing SQLiteDatabase.Connection) throws(StoreError) {
        var previous = AuditChain.genesis
        var after: Int64 = .min
        while true {
            var batch: [(id: Int64, previous: [UInt8], digest: [UInt8])] = []
            do {
                let select = try connection.prepare(
                    "SELECT \(AuditChain.rowColumns) FROM audit_events WHERE id > ? ORDER BY id LIMIT 1000")
                try select.bind(after, at: 1)
                while try select.step() {
                    let row = AuditChain.row(select)
                    let digest = row.computedDigest(after: previous)
                    batch.append((row.id, previous, digest))
                    previous = digest
                }
            }
            guard let last = batch.last else { break }
            for entry in batch {
                let update = try connection.prepare("UPDATE audit_events SET prev_digest = ?, digest = ? WHERE id = ?")
                try update.bind(blob: entry.previous, at: 1)
                try update.bind(blob: entry.digest, at: 2)
                try update.bind(entry.id, at: 3)
                try update.run()
            }
            after = last.id
        }
        for trigger in auditTriggersOfMigration3 {
            try connection.execute(trigger.sql, operation: "create trigger \(trigger.name)")
        }
    }

    /// The schema version this code writes and understands.
    public static var currentVersion: Int32 { migrations.last?.version ?? 0 }

    /// The schema version stored in the database (0 for a new, empty file).
    public static func version(of database: SQLiteDatabase) throws(StoreError) -> Int32 {
        try database.withConnection { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            try version(of: connection)
        }
    }

    /// Brings `database` to the newest version of `migrations`, in one transaction. Returns the version found.
    ///
    /// Throws ``StoreError/Kind/schemaTooNew`` for a database newer than `migrations`, and the failing migration's
    /// error (with nothing changed) when one fails.
    @discardableResult
    public static func migrate(
        _ database: SQLiteDatabase, migrations: [Migration] = StoreSchema.migrations
    ) throws(StoreError) -> Int32 {
        let target = migrations.last?.version ?? 0
        for (offset, migration) in migrations.enumerated() where migration.version != Int32(offset + 1) {
            throw StoreError(
                kind: .sqlite, operation: "migrate",
                message:
                    "migration versions must count up from 1; found \(migration.version) at position \(offset + 1)",
                path: database.path)
        }
        return try database.transaction(.immediate) {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int32 in
            let found = try version(of: connection)
            guard found <= target else {
                throw StoreError(
                    kind: .schemaTooNew, operation: "open",
                    message: "database schema version \(found) is newer than this node supports (\(target))",
                    path: database.path)
            }
            for migration in migrations where migration.version > found {
                let operation = "migrate to schema version \(migration.version) (\(migration.summary))"
                try connection.execute(migration.sql, operation: operation)
                guard let step = migration.step else { continue }
                do throws(StoreError) {
                    try step(connection)
                } catch {
                    var named = error
                    named.operation = "\(operation) (\(error.operation))"
                    throw named
                }
            }
            if found != target {
                try connection.execute("PRAGMA user_version = \(target)", operation: "set schema version")
            }
            return found
        }
    }

    private static func version(of connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> Int32 {
        let text = try connection.pragmaText("PRAGMA user_version", operation: "read schema version")
        return text.flatMap { Int32($0) } ?? 0
    }
}
