public import SupporterStore
public import Foundation
import Synchronization
public import SupporterCore
import SupportWire
import SupportUtilities
import SupporterModel

/// The store's registration back-off rows, so blocks survive a restart.
extension SessionStore {
    /// Stores (inserting or replacing) the back-off state of `key`.
    public func saveBackoff(key: String, failures: Int, blockedUntil: Date?, lastFailure: Date) throws(StoreError) {
        try write("save registration back-off") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.saveBackoff(
                key: key, failures: failures, blockedUntil: blockedUntil, lastFailure: lastFailure)
        }
    }

    /// Forgets the back-off state of `key` (after a success).
    public func deleteBackoff(key: String) throws(StoreError) {
        try write("delete registration back-off") { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.deleteBackoff(key: key)
        }
    }

    /// Every stored back-off state, by key.
    public func loadBackoff() throws(StoreError) -> [BackoffRow] {
        try perform("load registration back-off") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [BackoffRow] in
            let statement = try connection.prepare(
                "SELECT key, failures, blocked_until, last_failure FROM registration_backoff ORDER BY key")
            var rows: [BackoffRow] = []
            while try statement.step() {
                guard let key = statement.text(at: 0), let failures = statement.int64(at: 1),
                    let lastFailure = statement.int64(at: 3)
                else { throw Self.invalidData("a back-off row lacks a required value") }
                rows.append(
                    BackoffRow(
                        key: key, failures: Int(clamping: failures),
                        blockedUntil: statement.int64(at: 2).map(Date.init(unixMilliseconds:)),
                        lastFailure: Date(unixMilliseconds: lastFailure)))
            }
            return rows
        }
    }

    /// Forgets keys whose last failure was before `date`, except keys still blocked at `date`. Returns how many.
    @discardableResult
    public func deleteBackoff(olderThan date: Date) throws(StoreError) -> Int {
        try write("forget old registration back-off") { (transaction: inout StoreTransaction) throws(StoreError) -> Int in
            try transaction.deleteBackoff(olderThan: date)
        }
    }
}
