public import SupporterStore
import Foundation
public import SupporterCore
import SupportWire
import SupportUtilities
import SupporterModel

/// The store's supporter accounts (schema 6).
extension SessionStore {
    package static let accountColumns = "login, display_name, role, state, password_hash, created_at, updated_at"

    /// Every account, by login.
    public func accounts() throws(StoreError) -> [SupporterAccountRecord] {
        try perform("list supporter accounts") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [SupporterAccountRecord] in
            let statement = try connection.prepare(
                "SELECT \(Self.accountColumns) FROM supporter_accounts ORDER BY login")
            var records: [SupporterAccountRecord] = []
            while try statement.step() { records.append(try Self.accountRecord(from: statement)) }
            return records
        }
    }

    package static func accountRecord(from row: borrowing SQLiteDatabase.Statement) throws(StoreError) -> SupporterAccountRecord {
        guard let login = row.text(at: 0), let name = row.text(at: 1), let roleText = row.text(at: 2),
            let stateText = row.text(at: 3), let hash = row.text(at: 4), let created = row.int64(at: 5),
            let updated = row.int64(at: 6)
        else { throw invalidData("a supporter account row lacks a required value") }
        guard let role = SupporterRole(rawValue: roleText), let state = SupporterAccountState(rawValue: stateText) else {
            throw invalidData("the supporter account '\(login)' has an unknown role or state")
        }
        return SupporterAccountRecord(
            login: login, displayName: name, role: role, state: state, passwordHash: hash,
            createdAt: Date(unixMilliseconds: created), updatedAt: Date(unixMilliseconds: updated))
    }
}

extension StoreTransaction {
    /// Creates the account, or replaces every field of the account with its login.
    public mutating func saveAccount(_ record: SupporterAccountRecord) throws(StoreError) {
        try run("save supporter account") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                """
                INSERT INTO supporter_accounts (\(SessionStore.accountColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                ON CONFLICT (login) DO UPDATE SET display_name = ?2, role = ?3, state = ?4, password_hash = ?5,
                    updated_at = ?7
                """)
            try statement.bind(record.login, at: 1)
            try statement.bind(record.displayName, at: 2)
            try statement.bind(record.role.rawValue, at: 3)
            try statement.bind(record.state.rawValue, at: 4)
            try statement.bind(record.passwordHash, at: 5)
            try statement.bind(record.createdAt.unixMilliseconds, at: 6)
            try statement.bind(record.updatedAt.unixMilliseconds, at: 7)
            try statement.run()
        }
    }
}

extension SessionStore {
    /// Every stored login session.
    public func loginSessions() throws(StoreError) -> [LoginSessionRecord] {
        try perform("list login sessions") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [LoginSessionRecord] in
            let statement = try connection.prepare(
                "SELECT digest, id, login, csrf_token, created_at FROM login_sessions ORDER BY created_at")
            var records: [LoginSessionRecord] = []
            while try statement.step() {
                guard let digest = statement.blob(at: 0), let id = statement.text(at: 1),
                    let login = statement.text(at: 2), let csrf = statement.text(at: 3),
                    let created = statement.int64(at: 4)
                else { throw Self.invalidData("a login session row lacks a required value") }
                records.append(
                    LoginSessionRecord(
                        digest: digest, id: id, login: login, csrfToken: csrf,
                        createdAt: Date(unixMilliseconds: created)))
            }
            return records
        }
    }
}

/// A value bound into a statement.
package enum SQLValue {
    case blob([UInt8])
    case text(String)
    case integer(Int64)
}

extension StoreTransaction {
    package mutating func saveLoginSession(_ record: LoginSessionRecord) throws(StoreError) {
        try run("save login session") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare(
                "INSERT OR REPLACE INTO login_sessions (digest, id, login, csrf_token, created_at) VALUES (?, ?, ?, ?, ?)")
            try statement.bind(blob: record.digest, at: 1)
            try statement.bind(record.id, at: 2)
            try statement.bind(record.login, at: 3)
            try statement.bind(record.csrfToken, at: 4)
            try statement.bind(record.createdAt.unixMilliseconds, at: 5)
            try statement.run()
        }
    }

    /// Deletes the login sessions `condition` (one `?`) selects.
    package mutating func deleteLoginSessions(_ condition: String, _ value: SQLValue) throws(StoreError) {
        try run("delete login sessions") { (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) in
            let statement = try connection.prepare("DELETE FROM login_sessions WHERE \(condition)")
            switch value {
            case .blob(let bytes): try statement.bind(blob: bytes, at: 1)
            case .text(let text): try statement.bind(text, at: 1)
            case .integer(let number): try statement.bind(number, at: 1)
            }
            try statement.run()
        }
    }
}
