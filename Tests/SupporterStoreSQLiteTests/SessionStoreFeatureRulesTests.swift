import Foundation
import Testing

import SupportSession
import SupportWire
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupportVocabulary
import SupporterModel

/// Code rules (SPEC §15.3) in the store: schema version 5, read and written with every code record.
@Suite struct SessionStoreFeatureRulesTests {
    static let chat = Feature.ID(rawValue: 6)
    static let rules = FeatureRules(
        default: .confirm, rules: [chat: .deny, .remoteControl: .allow, Feature.ID(rawValue: 0xFFFF): .confirm])

    static func record(_ code: String, _ rules: FeatureRules = rules, created: Int64 = 0) -> SessionCodeRecord {
        SessionCodeRecord(
            code: code, createdAt: SessionStoreTests.date(created), validUntil: SessionStoreTests.date(9_999_999),
            featureRules: rules)
    }

    @Test func rulesReadBackWithTheCodeEveryWayItIsRead() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("rules.sqlite")
        let plain = Self.record("000000002", .codeDefault, created: 1)
        do {
            let store = try SessionStore(path: path)
            try store.insert(Self.record("000000001"))
            try store.insert(plain)
        }
        let store = try SessionStore(path: path)
        #expect(try store.record(code: "000000001")?.featureRules == Self.rules)
        #expect(try store.record(code: "000000002")?.featureRules == .codeDefault)
        #expect(try store.allRecords() == [Self.record("000000001"), plain])
        #expect(try store.records(offset: 0, limit: 10).records == [Self.record("000000001"), plain])
        #expect(try store.records(offset: 1, limit: 1).records == [plain])
        let inTransaction = try store.write { (transaction: inout StoreTransaction) throws(StoreError) in
            try transaction.record(code: "000000001")
        }
        #expect(inTransaction?.featureRules == Self.rules)
    }

    @Test func anUpdateReplacesTheRulesAsAWhole() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.record("000000001"))
        var changed = Self.record("000000001", FeatureRules(default: .deny, rules: [.voip: .allow]))
        try store.update(changed)
        #expect(try store.record(code: "000000001") == changed)
        changed.featureRules = .codeDefault
        try store.update(changed)
        #expect(try store.record(code: "000000001")?.featureRules == .codeDefault)
        #expect(try SQLiteDatabaseTests.scalar(store.database, "SELECT count(*) FROM session_code_feature_rules") == "0")
    }

    @Test func deletingACodeDeletesItsRules() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.record("000000001"))
        try store.insert(Self.record("000000002"))
        #expect(try store.delete(code: "000000001"))
        #expect(try SQLiteDatabaseTests.scalar(store.database, "SELECT count(*) FROM session_code_feature_rules") == "3")
        // Inserting the code again starts from its own rules, not the deleted code's.
        try store.insert(Self.record("000000001", .codeDefault))
        #expect(try store.record(code: "000000001")?.featureRules == .codeDefault)
    }

    @Test func aFailedUpdateOfAMissingCodeWritesNoRules() throws {
        let store = try SessionStore(path: ":memory:")
        #expect(throws: StoreError.self) { try store.update(Self.record("000000009")) }
        #expect(try SQLiteDatabaseTests.scalar(store.database, "SELECT count(*) FROM session_code_feature_rules") == "0")
    }

    @Test func theDatabaseRefusesRuleValuesThatAreNotRules() throws {
        let store = try SessionStore(path: ":memory:")
        try store.insert(Self.record("000000001"))
        #expect(throws: StoreError.self) {
            try store.database.execute(
                "INSERT INTO session_code_feature_rules (code, feature, rule) VALUES ('000000001', 9, 4)")
        }
        #expect(throws: StoreError.self) {
            try store.database.execute("UPDATE session_codes SET default_feature_rule = 0")
        }
        #expect(throws: StoreError.self) {
            try store.database.execute(
                "INSERT INTO session_code_feature_rules (code, feature, rule) VALUES ('no-such-code', 1, 1)")
        }
    }

    /// A file as version 4 left it: codes without rules open with the code default, and take rules afterwards.
    @Test func aVersion4DatabaseOpensWithEveryCodeAtTheDefault() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("version4.sqlite")
        do {
            let database = try SQLiteDatabase(path: path)
            try StoreSchema.migrate(database, migrations: Array(StoreSchema.migrations.prefix(4)))
            try database.execute(
                """
                INSERT INTO session_codes (code, type, description, is_closed, created_at, valid_until)
                VALUES ('111222333', 1, 'old', 0, 1000, 9000000), ('444555666', 2, NULL, 1, 2000, 3000);
                """)
        }
        let store = try SessionStore(path: path)
        #expect(try StoreSchema.version(of: store.database) == StoreSchema.currentVersion)
        #expect(StoreSchema.currentVersion >= 5)
        let records = try store.allRecords()
        #expect(records.map(\.code) == ["111222333", "444555666"])
        #expect(records.allSatisfy { $0.featureRules == .codeDefault })
        #expect(records.first?.description == "old")
        var changed = try #require(records.first)
        changed.featureRules = Self.rules
        try store.update(changed)
        #expect(try store.record(code: "111222333") == changed)
    }
}
