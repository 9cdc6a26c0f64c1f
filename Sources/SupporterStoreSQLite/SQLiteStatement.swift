public import SupporterStore
import SupporterCore
import CSQLite
import SupportWire
import SupportUtilities

extension SQLiteDatabase {
    /// A prepared statement, borrowed from its connection's cache and returned to it (reset, bindings cleared) when
    /// dropped. Non-copyable, so it cannot outlive the ``SQLiteDatabase/withConnection(_:)`` closure it was made in.
    ///
    /// Bind indexes are 1-based and column indexes 0-based, as in SQLite. Binding `nil` binds SQL NULL.
    public struct Statement: ~Copyable {
        let handle: OpaquePointer
        let sql: String
        let connection: OpaquePointer
        let path: String
        let cache: StatementCache

        init(handle: OpaquePointer, sql: String, connection: OpaquePointer, path: String, cache: StatementCache) {
            self.handle = handle
            self.sql = sql
            self.connection = connection
            self.path = path
            self.cache = cache
        }

        deinit {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            cache.give(handle, for: sql)
        }

        // MARK: binds

        /// Binds an integer (or NULL).
        public func bind(_ value: Int64?, at index: Int) throws(StoreError) {
            guard let value else { return try bindNull(at: index) }
            try check(sqlite3_bind_int64(handle, Int32(clamping: index), value), "bind integer")
        }

        /// Binds a floating-point number (or NULL).
        public func bind(_ value: Double?, at index: Int) throws(StoreError) {
            guard let value else { return try bindNull(at: index) }
            try check(sqlite3_bind_double(handle, Int32(clamping: index), value), "bind double")
        }

        /// Binds text as UTF-8 (or NULL). The empty string stays an empty string, not NULL.
        public func bind(_ value: String?, at index: Int) throws(StoreError) {
            guard let value else { return try bindNull(at: index) }
            let bytes = Array(value.utf8)
            let status = bytes.withUnsafeBufferPointer { buffer -> Int32 in
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    // A nil pointer would bind NULL: bind a real empty C string instead.
                    return sqlite3_bind_text(handle, Int32(clamping: index), "", 0, SQLiteDatabase.transient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { chars in
                    sqlite3_bind_text64(
                        handle, Int32(clamping: index), chars, UInt64(buffer.count), SQLiteDatabase.transient,
                        UInt8(SQLITE_UTF8))
                }
            }
            try check(status, "bind text")
        }

        /// Binds bytes as a BLOB (or NULL). An empty array stays an empty blob, not NULL.
        public func bind(blob value: [UInt8]?, at index: Int) throws(StoreError) {
            guard let value else { return try bindNull(at: index) }
            let status = value.withUnsafeBytes { buffer -> Int32 in
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_zeroblob(handle, Int32(clamping: index), 0)
                }
                return sqlite3_bind_blob64(
                    handle, Int32(clamping: index), base, UInt64(buffer.count), SQLiteDatabase.transient)
            }
            try check(status, "bind blob")
        }

        /// Binds SQL NULL.
        public func bindNull(at index: Int) throws(StoreError) {
            try check(sqlite3_bind_null(handle, Int32(clamping: index)), "bind null")
        }

        // MARK: running

        /// Runs the statement one step: true when a row is ready to read, false when it is done.
        public func step() throws(StoreError) -> Bool {
            let status = sqlite3_step(handle)
            switch status {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default:
                throw StoreError(
                    sqlite: sqlite3_extended_errcode(connection), db: connection, operation: "step", path: path)
            }
        }

        /// Runs a statement that returns no rows (INSERT, UPDATE, DELETE) to its end.
        public func run() throws(StoreError) {
            while try step() {}
        }

        // MARK: columns

        /// Whether column `index` of the current row is NULL.
        public func isNull(at index: Int) -> Bool { sqlite3_column_type(handle, Int32(clamping: index)) == SQLITE_NULL }

        /// Column `index` as an integer, nil when NULL.
        public func int64(at index: Int) -> Int64? {
            isNull(at: index) ? nil : sqlite3_column_int64(handle, Int32(clamping: index))
        }

        /// Column `index` as a floating-point number, nil when NULL.
        public func double(at index: Int) -> Double? {
            isNull(at: index) ? nil : sqlite3_column_double(handle, Int32(clamping: index))
        }

        /// Column `index` as text, nil when NULL. Invalid UTF-8 is repaired with replacement characters.
        public func text(at index: Int) -> String? {
            let column = Int32(clamping: index)
            guard !isNull(at: index), let text = sqlite3_column_text(handle, column) else { return nil }
            let count = Int(sqlite3_column_bytes(handle, column))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }

        /// Column `index` as bytes, nil when NULL.
        public func blob(at index: Int) -> [UInt8]? {
            let column = Int32(clamping: index)
            guard !isNull(at: index) else { return nil }
            guard let bytes = sqlite3_column_blob(handle, column) else { return [] }  // a zero-length blob
            let count = Int(sqlite3_column_bytes(handle, column))
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }

        private func check(_ status: Int32, _ operation: String) throws(StoreError) {
            guard status != SQLITE_OK else { return }
            throw StoreError(sqlite: status, db: connection, operation: operation, path: path)
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns.
    static var transient: sqlite3_destructor_type { unsafeBitCast(-1, to: sqlite3_destructor_type.self) }

    /// The compiled statements of one connection, by SQL text, waiting to be used again. Owned by the
    /// ``Connection``, which finalizes them all before it closes. Used only under the database's lock.
    package final class StatementCache {
        private var idle: [String: OpaquePointer] = [:]
        private static let limit = 64

        /// An idle compiled statement for `sql`, now in use; nil when there is none (prepare a new one).
        func take(_ sql: String) -> OpaquePointer? { idle.removeValue(forKey: sql) }

        /// Returns a statement after use. A second statement for the same SQL (nested use), or one past the limit,
        /// is finalized instead.
        func give(_ statement: OpaquePointer, for sql: String) {
            if idle[sql] == nil, idle.count < Self.limit {
                idle[sql] = statement
            } else {
                sqlite3_finalize(statement)
            }
        }

        func finalizeAll() {
            for statement in idle.values { sqlite3_finalize(statement) }
            idle.removeAll()
        }
    }
}
