package import SupporterStore
import Foundation
import SupportSession
import SupportWire
import SupporterCore
import SupportUtilities
package import SupportVocabulary
package import SupporterModel

/// Code rules (SPEC §15.3) in the store (schema version 5): a code's default rule is the `default_feature_rule`
/// column of `session_codes`; each feature with a rule of its own is a row of `session_code_feature_rules`, deleted
/// with its code (`ON DELETE CASCADE`). Rules are stored as ``AccessRule``'s raw values (1 allow, 2 confirm, 3 deny),
/// features as their ids, so a feature this node has no name for reads back unchanged.
extension SessionStore {
    /// The per-feature rules of `code` (without the default, which is a column of the code's row).
    package static func featureRules(of code: String, _ connection: borrowing SQLiteDatabase.Connection)
        throws(StoreError) -> [Feature.ID: AccessRule]
    {
        let statement = try connection.prepare(
            "SELECT feature, rule FROM session_code_feature_rules WHERE code = ? ORDER BY feature")
        try statement.bind(code, at: 1)
        var rules: [Feature.ID: AccessRule] = [:]
        while try statement.step() {
            let (feature, rule) = try featureRule(statement, column: 0, of: code)
            rules[feature] = rule
        }
        return rules
    }

    /// The per-feature rules of every code that has any, by code.
    package static func allFeatureRules(_ connection: borrowing SQLiteDatabase.Connection)
        throws(StoreError) -> [String: [Feature.ID: AccessRule]]
    {
        let statement = try connection.prepare("SELECT code, feature, rule FROM session_code_feature_rules")
        var rules: [String: [Feature.ID: AccessRule]] = [:]
        while try statement.step() {
            guard let code = statement.text(at: 0) else {
                throw invalidData("a code rule row lacks its code")
            }
            let (feature, rule) = try featureRule(statement, column: 1, of: code)
            rules[code, default: [:]][feature] = rule
        }
        return rules
    }

    /// Replaces the per-feature rules stored for `record.code` with `record.featureRules.rules`. The default rule is
    /// written with the code's row (``bind(_:to:)``).
    package static func saveFeatureRules(of record: SessionCodeRecord, _ connection: borrowing SQLiteDatabase.Connection)
        throws(StoreError)
    {
        let delete = try connection.prepare("DELETE FROM session_code_feature_rules WHERE code = ?")
        try delete.bind(record.code, at: 1)
        try delete.run()
        for (feature, rule) in record.featureRules.rules.sorted(by: { $0.key < $1.key }) {
            let insert = try connection.prepare(
                "INSERT INTO session_code_feature_rules (code, feature, rule) VALUES (?, ?, ?)")
            try insert.bind(record.code, at: 1)
            try insert.bind(Int64(feature.rawValue), at: 2)
            try insert.bind(Int64(rule.rawValue), at: 3)
            try insert.run()
        }
    }

    /// A stored rule value as an ``AccessRule``; ``StoreError/Kind/invalidData`` for anything else.
    package static func accessRule(_ stored: Int64?, of code: String) throws(StoreError) -> AccessRule {
        guard let stored, let raw = UInt8(exactly: stored), let rule = AccessRule(rawValue: raw) else {
            throw invalidData("the session code \(code) has the unknown code rule \(stored.map { "\($0)" } ?? "NULL")")
        }
        return rule
    }

    private static func featureRule(_ row: borrowing SQLiteDatabase.Statement, column: Int, of code: String)
        throws(StoreError) -> (Feature.ID, AccessRule)
    {
        guard let stored = row.int64(at: column), let raw = UInt16(exactly: stored) else {
            throw invalidData("a code rule of the session code \(code) names no valid feature id")
        }
        return (Feature.ID(rawValue: raw), try accessRule(row.int64(at: column + 1), of: code))
    }
}
