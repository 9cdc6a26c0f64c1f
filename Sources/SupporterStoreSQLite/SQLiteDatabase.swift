public import SupporterStore
import SupporterCore
import CSQLite
import Glibc
import Synchronization
import SupportWire
import SupportUtilities

/// The SQLite library this process runs with.
public enum SQLiteLibrary {
    /// Its version, e.g. `3.40.1`.
    public static var version: String { String(cString: sqlite3_libversion()) }
}

/// One SQLite connection to a database file (or `:memory:`), safe to share between threads.
///
/// Thread safety: the connection lives inside a `Mutex`; every use goes through ``withConnection(_:)`` (or the
/// conveniences built on it), so exactly one thread talks to SQLite at a time and the connection is opened in
/// SQLite's multi-thread mode (`SQLITE_OPEN_NOMUTEX`). Prepared statements and the ``Connection`` itself are
/// non-copyable and cannot leave the closure, so nothing touches SQLite without holding the lock.
///
/// On open: `journal_mode=WAL`, `synchronous` from ``Durability``, `foreign_keys=ON`, `busy_timeout=5000`. New files
/// are made readable by their owner only (`0600`): they hold customer names and e-mail addresses.
/// Statements are finalized and the connection closed when the database is released.
public final class SQLiteDatabase: Sendable {
    /// How much a committed transaction survives.
    public enum Durability: Sendable, Hashable {
        /// `synchronous=NORMAL` in WAL mode: a committed transaction survives the process crashing or being killed
        /// (`kill -9`); the last transactions may be lost if the machine loses power. The default.
        case processCrash
        /// `synchronous=FULL`: every commit is flushed to the disk (`fsync`) before it returns, so it also survives a
        /// power loss. Slower: one flush per transaction.
        case powerLoss
    }

    /// How a transaction takes its lock.
    public enum TransactionKind: Sendable, Hashable {
        /// Takes the write lock at the start (`BEGIN IMMEDIATE`): for transactions that write.
        case immediate
        /// Takes locks as needed (`BEGIN DEFERRED`): for transactions that only read a consistent snapshot.
        case deferred
    }

    /// The database file, or `:memory:`.
    public let path: String
    /// The journal mode SQLite reported after `PRAGMA journal_mode=WAL`: `wal` for a file, `memory` for `:memory:`.
    public let journalMode: String
    public let durability: Durability
    private let connection: Mutex<Connection>
    /// The thread inside ``withConnection(_:)`` (0 when none): a second use from that same thread would wait for
    /// itself forever, so it stops the program with a message instead.
    private let holder = Atomic<UInt>(0)

    /// Opens (creating if needed) the database at `path`; `":memory:"` makes a private in-memory database.
    ///
    /// Throws a ``StoreError`` naming `path` when the file cannot be opened or created
    /// (kind ``StoreError/Kind/cantOpen``) or is not an SQLite database (kind ``StoreError/Kind/corrupt``).
    public init(path: String, durability: Durability = .processCrash) throws(StoreError) {
        let isNewFile = path != ":memory:" && !path.isEmpty && access(path, F_OK) != 0
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let error = StoreError(sqlite: status, db: handle, operation: "open", path: path)
            sqlite3_close_v2(handle)
            throw error
        }
        // From here on the connection closes itself if a later step throws.
        let opened = Connection(handle: handle, path: path)
        sqlite3_busy_timeout(handle, 5000)
        let mode = try opened.pragmaText("PRAGMA journal_mode = WAL", operation: "open (set journal_mode=WAL)")
        let synchronous = durability == .powerLoss ? "FULL" : "NORMAL"
        try opened.execute("PRAGMA synchronous = \(synchronous)", operation: "open (set synchronous=\(synchronous))")
        try opened.execute("PRAGMA foreign_keys = ON", operation: "open (set foreign_keys=ON)")
        try opened.execute("PRAGMA busy_timeout = 5000", operation: "open (set busy_timeout)")
        if isNewFile { chmod(path, 0o600) }
        self.path = path
        self.durability = durability
        self.journalMode = mode?.lowercased() ?? ""
        self.connection = Mutex(opened)
    }

    /// Runs `body` with the connection, holding the lock. Keep it short: other threads wait.
    ///
    /// `body` must not use this database again (directly, or through a ``SessionStore`` on it): the lock is not
    /// recursive, and such a call stops the program with a message rather than waiting for itself forever.
    public func withConnection<Result>(
        _ body: (borrowing Connection) throws(StoreError) -> sending Result
    ) throws(StoreError) -> sending Result {
        let thread = UInt(pthread_self())
        // Relaxed is enough: only this thread ever stores its own id, and it sees its own stores in order.
        precondition(
            holder.load(ordering: .relaxed) != thread,
            "SQLiteDatabase(\(path)) used again from inside its own withConnection, transaction or SessionStore.write:"
                + " do everything through the connection or transaction you were given")
        return try connection.withLock { (connection: inout sending Connection) throws(StoreError) -> sending Result in
            holder.store(thread, ordering: .relaxed)
            defer { holder.store(0, ordering: .relaxed) }
            return try body(connection)
        }
    }

    /// Runs `body` in one transaction, holding the lock: committed when `body` returns, rolled back when it throws.
    public func transaction<Result>(
        _ kind: TransactionKind = .immediate, _ body: (borrowing Connection) throws(StoreError) -> sending Result
    ) throws(StoreError) -> sending Result {
        try withConnection { (connection: borrowing Connection) throws(StoreError) -> sending Result in
            try connection.transaction(kind, body)
        }
    }

    /// Runs one or more SQL statements that return no rows (a script, a PRAGMA, a DDL change).
    public func execute(_ sql: String) throws(StoreError) {
        try withConnection { (connection: borrowing Connection) throws(StoreError) in try connection.execute(sql) }
    }
}

extension SQLiteDatabase {
    /// The open connection, reachable only inside ``SQLiteDatabase/withConnection(_:)``. Closes itself when dropped,
    /// after finalizing every cached statement.
    public struct Connection: ~Copyable {
        let handle: OpaquePointer
        /// The database file, or `:memory:`.
        public let path: String
        let cache: StatementCache
        /// What SQLite's WAL hook last reported; written only while ``manageCheckpoints(journalSizeLimit:)`` holds.
        let wal: UnsafeMutablePointer<WALProgress>
        /// False for a view made by ``view()``: it closes nothing.
        private let owner: Bool

        init(handle: OpaquePointer, path: String) {
            let wal = UnsafeMutablePointer<WALProgress>.allocate(capacity: 1)
            wal.initialize(to: WALProgress())
            self.init(handle: handle, path: path, cache: StatementCache(), wal: wal, owner: true)
        }

        private init(
            handle: OpaquePointer, path: String, cache: StatementCache, wal: UnsafeMutablePointer<WALProgress>,
            owner: Bool
        ) {
            self.handle = handle
            self.path = path
            self.cache = cache
            self.wal = wal
            self.owner = owner
        }

        deinit {
            guard owner else { return }
            cache.finalizeAll()
            sqlite3_wal_hook(handle, nil, nil)
            sqlite3_close_v2(handle)
            wal.deinitialize(count: 1)
            wal.deallocate()
        }

        /// A second, non-owning handle on this connection for a value that must hold one (a ``StoreTransaction``):
        /// it shares the statement cache and closes nothing. Make it only inside ``SQLiteDatabase/withConnection(_:)``
        /// and keep it in a non-copyable value that cannot leave that closure either.
        func view() -> Connection {
            Connection(handle: handle, path: path, cache: cache, wal: wal, owner: false)
        }

        // MARK: checkpoints

        /// The WAL as the last commit through this connection left it.
        struct WALProgress {
            /// Frames in the WAL file (pages written since the WAL last started over), after the last commit.
            var frames = 0
            /// Commits since the last checkpoint that copied the whole WAL into the database.
            var commitsSinceCheckpoint = 0
        }

        /// Takes checkpoints over from SQLite on this connection: no automatic checkpoint at commit
        /// (`wal_autocheckpoint=0`; a WAL hook counts frames instead, see ``walProgress``), and a WAL file that a
        /// checkpoint lets start over is cut back to `journalSizeLimit` bytes (`journal_size_limit`). The caller then
        /// runs ``checkpoint(_:)`` itself, or the WAL grows without bound. Other connections keep their own setting.
        func manageCheckpoints(journalSizeLimit: Int) throws(StoreError) {
            try execute("PRAGMA wal_autocheckpoint = 0", operation: "turn off automatic checkpoints")
            try execute(
                "PRAGMA journal_size_limit = \(journalSizeLimit)", operation: "set journal_size_limit")
            // Replaces the automatic checkpoint's hook (there is one hook per connection).
            sqlite3_wal_hook(
                handle,
                { context, _, _, frames in
                    let progress = context!.assumingMemoryBound(to: WALProgress.self)
                    progress.pointee.frames = Int(frames)
                    progress.pointee.commitsSinceCheckpoint += 1
                    return SQLITE_OK
                }, UnsafeMutableRawPointer(wal))
        }

        /// Frames in the WAL and commits not yet checkpointed, as of the last commit through this connection (zeros
        /// unless ``manageCheckpoints(journalSizeLimit:)`` was called).
        var walProgress: WALProgress { wal.pointee }

        enum CheckpointMode {
            /// Copies what it can without waiting for anyone (`SQLITE_CHECKPOINT_PASSIVE`).
            case passive

            var sqlite: Int32 {
                switch self {
                case .passive: SQLITE_CHECKPOINT_PASSIVE
                }
            }
        }

        /// Copies WAL frames into the database file (``CheckpointMode``). Returns the WAL's frames and how many of
        /// them are in the database now; when they are equal the WAL starts over at the next commit (unless another
        /// connection still reads an old snapshot). Returns (-1, -1) when another connection is checkpointing
        /// (`SQLITE_BUSY`): try again later. Call it outside a transaction.
        @discardableResult
        func checkpoint(_ mode: CheckpointMode) throws(StoreError) -> (frames: Int, checkpointed: Int) {
            var frames: Int32 = 0
            var checkpointed: Int32 = 0
            let status = sqlite3_wal_checkpoint_v2(handle, nil, mode.sqlite, &frames, &checkpointed)
            // SQLITE_BUSY from a passive checkpoint: another connection is checkpointing; try again later.
            if status & 0xff == SQLITE_BUSY { return (-1, -1) }
            guard status == SQLITE_OK else { throw error(status, operation: "checkpoint") }
            if frames == checkpointed { wal.pointee.commitsSinceCheckpoint = 0 }
            return (Int(frames), Int(checkpointed))
        }

        /// Runs one or more SQL statements that return no rows.
        public func execute(_ sql: String, operation: String = "execute") throws(StoreError) {
            var message: UnsafeMutablePointer<CChar>?
            let status = sqlite3_exec(handle, sql, nil, nil, &message)
            guard status != SQLITE_OK else { return }
            var error = StoreError(
                sqlite: sqlite3_extended_errcode(handle), db: handle, operation: operation, path: path)
            if let message {
                error.message = String(cString: message)
                sqlite3_free(message)
            }
            throw error
        }

        /// Runs one SQL statement that returns no rows through the statement cache: compiled the first time, reused
        /// after. For the statements every write transaction runs (BEGIN, COMMIT, SAVEPOINT, RELEASE), which
        /// ``execute(_:operation:)`` would parse anew each time (7 % of the store writer's time in the nodecost
        /// profile).
        func executeCached(_ sql: String, operation: String) throws(StoreError) {
            do {
                let statement = try prepare(sql)
                try statement.run()
            } catch {
                var named = error
                named.operation = operation
                throw named
            }
        }

        /// A counter that changes whenever the main database changes, by this connection or any other (other
        /// processes included): `SQLITE_FCNTL_DATA_VERSION`. Equal values before and after mean nothing changed;
        /// nil when SQLite cannot tell.
        var dataVersion: UInt32? {
            var version: UInt32 = 0
            guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else {
                return nil
            }
            return version
        }

        /// A prepared statement for one SQL statement. Statements are cached by their text: preparing the same SQL
        /// again reuses the compiled statement. Bind parameters are 1-based, columns 0-based, as in SQLite.
        public func prepare(_ sql: String) throws(StoreError) -> Statement {
            if let cached = cache.take(sql) {
                return Statement(handle: cached, sql: sql, connection: handle, path: path, cache: cache)
            }
            var statement: OpaquePointer?
            let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard status == SQLITE_OK, let statement else {
                sqlite3_finalize(statement)
                throw error(status == SQLITE_OK ? SQLITE_MISUSE : status, operation: "prepare")
            }
            return Statement(handle: statement, sql: sql, connection: handle, path: path, cache: cache)
        }

        /// Runs `body` in a transaction: committed when it returns, rolled back when it throws. Inside another
        /// transaction it becomes a savepoint, so transactions nest.
        public func transaction<Result>(
            _ kind: TransactionKind = .immediate, _ body: (borrowing Connection) throws(StoreError) -> sending Result
        ) throws(StoreError) -> sending Result {
            if isInTransaction {
                try executeCached("SAVEPOINT nested", operation: "begin savepoint")
                do {
                    let result = try body(self)
                    try executeCached("RELEASE nested", operation: "release savepoint")
                    return result
                } catch {
                    sqlite3_exec(handle, "ROLLBACK TO nested; RELEASE nested", nil, nil, nil)
                    throw error
                }
            }
            try executeCached(kind == .immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", operation: "begin transaction")
            do {
                let result = try body(self)
                try executeCached("COMMIT", operation: "commit")
                return result
            } catch {
                if isInTransaction { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
                throw error
            }
        }

        /// Whether a transaction is open on this connection.
        public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

        /// Rows changed by the last INSERT, UPDATE or DELETE.
        public var changes: Int { Int(sqlite3_changes64(handle)) }

        /// The rowid of the last successful INSERT.
        public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

        /// The first column of the first row of a PRAGMA (or any query), as text.
        func pragmaText(_ sql: String, operation: String) throws(StoreError) -> String? {
            var statement: OpaquePointer?
            let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            guard status == SQLITE_OK, let statement else { throw error(status, operation: operation) }
            let step = sqlite3_step(statement)
            guard step == SQLITE_ROW || step == SQLITE_DONE else { throw error(step, operation: operation) }
            guard step == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
            return String(cString: text)
        }

        func error(_ status: Int32, operation: String) -> StoreError {
            StoreError(sqlite: status, db: handle, operation: operation, path: path)
        }
    }
}
