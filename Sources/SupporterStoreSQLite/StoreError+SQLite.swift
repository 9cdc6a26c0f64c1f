import SupporterCore
internal import CSQLite
package import SupporterStore

extension StoreError {
    /// An error from SQLite's result code `code` on connection `db` (nil when there is no connection).
    package init(sqlite code: Int32, db: OpaquePointer?, operation: String, path: String) {
        let message: String
        if let db, let text = sqlite3_errmsg(db) {
            message = String(cString: text)
        } else if let text = sqlite3_errstr(code) {
            message = String(cString: text)
        } else {
            message = "SQLite error \(code)"
        }
        self.init(kind: Self.kind(of: code), operation: operation, message: message, path: path, resultCode: code)
    }

    package static func kind(of code: Int32) -> Kind {
        // SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE are macro expressions that do not import.
        let primaryKey = SQLITE_CONSTRAINT | (6 << 8), unique = SQLITE_CONSTRAINT | (8 << 8)
        if code == primaryKey || code == unique { return .duplicate }
        switch code & 0xFF {  // the primary result code
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH: return .cantOpen
        case SQLITE_NOTADB, SQLITE_CORRUPT: return .corrupt
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        default: return .sqlite
        }
    }

}
