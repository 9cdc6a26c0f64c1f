import Foundation
import SupportRegistry

/// The store's supporter accounts (schema 6).
extension SessionStore {
    static let accountColumns = "login, display_name, role, state, password_hash, created_at, updated_at"

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

    static func accountRecord(from row: borrowing SQLiteDatabase.Statement) throws(StoreError) -> SupporterAccountRecord {
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
