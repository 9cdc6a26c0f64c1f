import Foundation
import SupportHTTP
import SupporterNode
import Testing

@testable import SupporterREST
import SupportSession
import SupportWire
import SupporterCore
import SupportRuntime
import TestSupport
import SupportVocabulary
import SupporterModel

/// `feature_rules` in request and answer bodies (protocol/openapi.yaml `FeatureRules`, `FeatureRulesChange`).
@Suite struct APIFeatureRulesTests {
    static let now = Date(unixMilliseconds: 1_796_033_700_000)
    static let chat = Feature.ID(rawValue: 6)
    static let fileShare = Feature.ID(rawValue: 5)

    static func create(_ json: String) throws(RESTError) -> APISessionCreate {
        try StrictJSON.decode(APISessionCreate.self, from: Array(json.utf8)).validated(now: now)
    }

    static func update(_ json: String) throws(RESTError) -> APISessionUpdate {
        try StrictJSON.decode(APISessionUpdate.self, from: Array(json.utf8)).validated(now: now)
    }

    @Test func creationReadsTheDefaultAndEachFeaturesRule() throws {
        let body = try Self.create(
            #"{"feature_rules":{"default":"confirm","rules":{"chat":"deny","remote_control":"allow"}}}"#)
        let expected = FeatureRules(default: .confirm, rules: [Self.chat: .deny, .remoteControl: .allow])
        #expect(body.featureRules == expected)
        #expect(body.details.featureRules == expected)
    }

    @Test func withoutFeatureRulesACodeGetsTheCodeDefault() throws {
        #expect(try Self.create("{}").details.featureRules == .codeDefault)
        #expect(try Self.update(#"{"description":"x"}"#).featureRules == nil)
    }

    @Test(arguments: [
        (#"{}"#, FeatureRules.codeDefault),
        (#"{"default":"deny"}"#, FeatureRules(default: .deny)),
        (#"{"rules":{"file_share":"confirm"}}"#, FeatureRules(default: .allow, rules: [fileShare: .confirm])),
    ])
    func membersLeftOutTakeTheCodeDefault(_ object: String, _ expected: FeatureRules) throws {
        #expect(try Self.update(#"{"feature_rules":\#(object)}"#).featureRules == expected)
    }

    @Test func everyFeatureOfProtocol11HasAName() throws {
        let names = FeatureRuleNames.features.map(\.name)
        #expect(
            names == [
                "screen_share", "assist_ar", "voip", "remote_control", "file_share", "chat", "ar_pointer",
                "app_messages",
            ])
        #expect(FeatureRuleNames.features.map(\.id.rawValue) == Array(1...8))
        for (name, id) in FeatureRuleNames.features {
            #expect(try FeatureRuleNames.feature(named: name) == id)
            #expect(FeatureRuleNames.name(of: id) == name)
        }
        #expect(FeatureRuleNames.name(of: Feature.ID(rawValue: 42)) == "feature_42")
    }

    @Test func anUnknownNameIsATypedErrorNamingIt() {
        #expect(throws: FeatureRuleNameError(.unknownFeature, "telepathy")) {
            try FeatureRuleNames.feature(named: "telepathy")
        }
        #expect(throws: FeatureRuleNameError(.unknownRule, "maybe")) { try FeatureRuleNames.rule(named: "maybe") }
        #expect(throws: FeatureRuleNameError(.unknownFeature, "feature_42")) {
            try FeatureRuleNames.feature(named: "feature_42")
        }
    }

    /// Values the schema forbids: 422, with a message naming the member and the bad value.
    @Test(arguments: [
        (#"null"#, "feature_rules cannot be null"),
        (#""allow""#, "feature_rules must be an object"),
        (#"[]"#, "feature_rules must be an object"),
        (#"{"bogus":1}"#, "unknown member 'feature_rules.bogus'"),
        (#"{"Default":"allow"}"#, "unknown member 'feature_rules.Default'"),
        (#"{"default":"sometimes"}"#, "feature_rules.default must be allow, confirm or deny, not 'sometimes'"),
        (#"{"default":"ALLOW"}"#, "feature_rules.default must be allow, confirm or deny, not 'ALLOW'"),
        (#"{"default":null}"#, "feature_rules.default must be the string allow, confirm or deny"),
        (#"{"default":1}"#, "feature_rules.default must be the string allow, confirm or deny"),
        (#"{"rules":[]}"#, "feature_rules.rules must be an object of feature names to rules"),
        (#"{"rules":"chat=deny"}"#, "feature_rules.rules must be an object of feature names to rules"),
        (#"{"rules":{"telepathy":"deny"}}"#, "feature_rules.rules: unknown feature 'telepathy'; the features are"),
        (#"{"rules":{"Chat":"deny"}}"#, "feature_rules.rules: unknown feature 'Chat'"),
        (#"{"rules":{"chat":"maybe"}}"#, "feature_rules.rules.chat must be allow, confirm or deny, not 'maybe'"),
        (#"{"rules":{"chat":3}}"#, "feature_rules.rules.chat must be the string allow, confirm or deny"),
        (#"{"rules":{"chat":null}}"#, "feature_rules.rules.chat must be the string allow, confirm or deny"),
    ])
    func refusedRulesAre422NamingMemberAndValue(_ object: String, _ message: String) {
        let body = #"{"feature_rules":\#(object)}"#
        for operation in ["POST", "PUT"] {
            do throws(RESTError) {
                if operation == "POST" { _ = try Self.create(body) } else { _ = try Self.update(body) }
                Issue.record("\(operation) accepted \(object)")
            } catch {
                #expect(error.kind == .unprocessable, "\(operation) \(object)")
                #expect(error.message.hasPrefix(message), "\(operation) \(object): \(error.message)")
            }
        }
    }

    @Test func aLongBadNameIsShortenedAndControlCharactersEscaped() {
        let error = FeatureRuleNameError(.unknownFeature, String(repeating: "x", count: 100) + "\u{1B}")
        #expect(error.quotedName == "'" + String(repeating: "x", count: 64) + "…'")
        #expect(FeatureRuleNameError(.unknownRule, "a\u{1B}[31m").quotedName == "'a\\u{1b}[31m'")
    }

    @Test func answersCarryBothMembersWithFeatureNames() {
        let rules = FeatureRules(
            default: .confirm, rules: [Self.chat: .deny, .remoteControl: .allow, Feature.ID(rawValue: 42): .deny])
        let json = String(decoding: HTTPResponse.json(.ok, encoding: APIFeatureRules(rules)).body, as: UTF8.self)
        #expect(json == #"{"default":"confirm","rules":{"chat":"deny","feature_42":"deny","remote_control":"allow"}}"#)
        let empty = String(decoding: HTTPResponse.json(.ok, encoding: APIFeatureRules(.codeDefault)).body, as: UTF8.self)
        #expect(empty == #"{"default":"allow","rules":{}}"#)
    }

    @Test func aSessionReadsBackItsRules() throws {
        let rules = FeatureRules(default: .allow, rules: [Self.chat: .deny, .voip: .confirm])
        let info = SessionCodeInfo(
            record: SessionCodeRecord(
                code: "123-456-789", createdAt: Self.now, validUntil: Self.now.addingTimeInterval(60),
                featureRules: rules),
            state: .open, deviceName: nil)
        let body = HTTPResponse.json(.ok, encoding: APISession(info)).body
        let decoded = try JSONDecoder().decode(APISession.self, from: Data(body))
        #expect(decoded.featureRules == rules)
        #expect(decoded == APISession(info))
    }

    @Test func requestBodiesEncodeWhatTheyDecode() throws {
        let rules = FeatureRules(default: .deny, rules: [.screenShare: .allow])
        let create = APISessionCreate(description: "x", featureRules: rules)
        let encoded = try JSONEncoder().encode(create)
        #expect(try StrictJSON.decode(APISessionCreate.self, from: Array(encoded)) == create)
        let update = APISessionUpdate(featureRules: rules)
        let encodedUpdate = try JSONEncoder().encode(update)
        #expect(try StrictJSON.decode(APISessionUpdate.self, from: Array(encodedUpdate)) == update)
        #expect(!update.changesMetadata, "rules are applied on their own, not as metadata")
    }
}
