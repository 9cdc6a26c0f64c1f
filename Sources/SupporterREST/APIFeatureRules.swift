import Foundation
import SupportUtilities
public import SupportVocabulary

/// `FeatureRules` of protocol/openapi.yaml: a code's rules (SPEC §15.3) as
/// `{"default": "allow", "rules": {"chat": "deny", "remote_control": "confirm"}}`.
///
/// `default` is the rule of every feature not listed in `rules`; feature names are those of ``FeatureRuleNames``.
/// Answers always carry both members. In a request, the object replaces the code's rules as a whole, and a member
/// left out takes the code default: `default` `allow`, no per-feature rules (so `{}` resets the code to allowing
/// everything).
///
/// Decoding is strict: unknown members, wrong types, `null`, an unknown feature name or rule are refused with
/// ``RESTError/Kind/unprocessable`` naming the member (`feature_rules.rules.chat`) and the bad value.
public struct APIFeatureRules: Codable, Sendable, Hashable {
    /// The rules.
    public var value: FeatureRules

    public init(_ value: FeatureRules) { self.value = value }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case `default`, rules
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value.defaultRule.description, forKey: .default)
        var rules: [String: String] = [:]
        for (feature, rule) in value.rules { rules[FeatureRuleNames.name(of: feature)] = rule.description }
        try container.encode(rules, forKey: .rules)
    }

    /// Reads the object `{"default": …, "rules": {…}}` as the member `feature_rules` of a request; see the type's
    /// documentation for what is refused.
    public init(from decoder: any Decoder) throws {
        let object: KeyedDecodingContainer<JSONKey>
        do { object = try decoder.container(keyedBy: JSONKey.self) } catch {
            throw RESTError.unprocessable(
                "\(Self.member) must be an object such as {\"default\": \"allow\", \"rules\": {\"chat\": \"deny\"}}")
        }
        try self.init(object)
    }

    /// The name of the member in request bodies.
    static let member = "feature_rules"

    init(_ object: KeyedDecodingContainer<JSONKey>) throws(RESTError) {
        let unknown = object.allKeys.map(\.stringValue).filter { CodingKeys(rawValue: $0) == nil }.sorted()
        if let first = unknown.first {
            throw RESTError.unprocessable(
                "unknown member '\(Self.member).\(first)'; \(Self.member) has only default and rules")
        }
        var value = FeatureRules.codeDefault
        if object.has("default") {
            value.defaultRule = try Self.rule(object, JSONKey("default"), at: "\(Self.member).default")
        }
        if object.has("rules") {
            let rules: KeyedDecodingContainer<JSONKey>
            do { rules = try object.nestedContainer(keyedBy: JSONKey.self, forKey: JSONKey("rules")) } catch {
                throw RESTError.unprocessable(
                    "\(Self.member).rules must be an object of feature names to rules, such as {\"chat\": \"deny\"}")
            }
            for key in rules.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                let feature: Feature.ID
                do throws(FeatureRuleNameError) { feature = try FeatureRuleNames.feature(named: key.stringValue) } catch {
                    throw RESTError.unprocessable("\(Self.member).rules: \(error)")
                }
                value.set(try Self.rule(rules, key, at: "\(Self.member).rules.\(key.stringValue)"), for: feature)
            }
        }
        self.value = value
    }

    /// The rule in member `key` of `object`; 422 naming `path` and the bad value otherwise.
    private static func rule(_ object: KeyedDecodingContainer<JSONKey>, _ key: JSONKey, at path: String)
        throws(RESTError) -> AccessRule
    {
        guard !object.isNull(key.stringValue), let text = try? object.decode(String.self, forKey: key) else {
            throw RESTError.unprocessable("\(path) must be the string \(FeatureRuleNames.ruleList)")
        }
        do throws(FeatureRuleNameError) { return try FeatureRuleNames.rule(named: text) } catch {
            throw RESTError.unprocessable("\(path) must be \(FeatureRuleNames.ruleList), not \(error.quotedName)")
        }
    }
}

extension KeyedDecodingContainer where Key == JSONKey {
    /// The `feature_rules` member (``APIFeatureRules``), or nil when absent; `null` and anything but an object are
    /// refused.
    func featureRules() throws(RESTError) -> FeatureRules? {
        let name = APIFeatureRules.member
        guard has(name) else { return nil }
        guard !isNull(name) else {
            throw RESTError.unprocessable("\(name) cannot be null; send {} for the code default (allow everything)")
        }
        let object: KeyedDecodingContainer<JSONKey>
        do { object = try nestedContainer(keyedBy: JSONKey.self, forKey: JSONKey(name)) } catch {
            throw RESTError.unprocessable(
                "\(name) must be an object such as {\"default\": \"allow\", \"rules\": {\"chat\": \"deny\"}}")
        }
        return try APIFeatureRules(object).value
    }
}
