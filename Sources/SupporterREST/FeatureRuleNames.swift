import SupportUtilities
public import SupportVocabulary

/// The names of features and code rules as the REST API and the command line write them (SPEC §4.3, §15.2, §15.3):
/// one table for both, so that `chat` means the same feature in a request body and on a command line.
///
/// Features are named by their SPEC names; the table holds every feature of protocol 1.1, so it does not depend on
/// which names ``Feature/ID/name`` knows. Only these names are read. A feature id the table lacks (a rule stored by a
/// newer node) is shown as `feature_<id>` in decimal; such a name is not accepted back.
public enum FeatureRuleNames {
    /// Every feature the API and the CLI can name, in id order.
    public static let features: [(name: String, id: Feature.ID)] = [
        ("screen_share", .screenShare),
        ("assist_ar", .assistAR),
        ("voip", .voip),
        ("remote_control", .remoteControl),
        ("file_share", Feature.ID(rawValue: 0x0005)),
        ("chat", Feature.ID(rawValue: 0x0006)),
        ("ar_pointer", Feature.ID(rawValue: 0x0007)),
        ("app_messages", Feature.ID(rawValue: 0x0008)),
    ]

    /// The list of feature names, for messages: `screen_share, assist_ar, …`.
    public static var featureList: String { features.map(\.name).joined(separator: ", ") }

    /// The list of rule names, for messages: `allow, confirm or deny`.
    public static let ruleList = "allow, confirm or deny"

    /// The feature `name` names; ``FeatureRuleNameError/Kind/unknownFeature`` naming it otherwise.
    public static func feature(named name: String) throws(FeatureRuleNameError) -> Feature.ID {
        if let entry = features.first(where: { $0.name == name }) { return entry.id }
        throw FeatureRuleNameError(.unknownFeature, name)
    }

    /// The name of `feature`: its SPEC name, or `feature_<id>` for an id the table lacks.
    public static func name(of feature: Feature.ID) -> String {
        features.first { $0.id == feature }?.name ?? "feature_\(feature.rawValue)"
    }

    /// The rule `name` names (`allow`, `confirm`, `deny`); ``FeatureRuleNameError/Kind/unknownRule`` naming it
    /// otherwise.
    public static func rule(named name: String) throws(FeatureRuleNameError) -> AccessRule {
        guard let rule = AccessRule(name: name) else { throw FeatureRuleNameError(.unknownRule, name) }
        return rule
    }
}
