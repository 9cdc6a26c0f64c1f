
/// How a feature may be granted in a session (SPEC §15.3): at once, only after the device's user confirms it, or never.
///
/// Two rules meet for every feature: the device's (set by the app) and the code's (set by the supporter team); the
/// stricter one applies (``stricter(_:)``).
public enum AccessRule: UInt8, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Granted with the connection (or an ask) without a question.
    case allow = 1
    /// Granted only if the device's user confirms it.
    case confirm = 2
    /// Never granted; asks are refused without a prompt.
    case deny = 3

    public static func < (lhs: AccessRule, rhs: AccessRule) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The stricter of two rules: `deny` over `confirm` over `allow`.
    public func stricter(_ other: AccessRule) -> AccessRule { max(self, other) }

    /// The SPEC name: `allow`, `confirm`, `deny`.
    public var description: String {
        switch self {
        case .allow: "allow"
        case .confirm: "confirm"
        case .deny: "deny"
        }
    }

    /// Reads a SPEC name (`allow`, `confirm`, `deny`); nil for anything else.
    public init?(name: String) {
        guard let rule = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = rule
    }
}

/// One side's rules, feature by feature, with a rule for every feature not listed.
public struct FeatureRules: Sendable, Hashable {
    /// The rule of features without an entry.
    public var defaultRule: AccessRule
    /// Rules of named features.
    public var rules: [Feature.ID: AccessRule]

    /// Rules that say `defaultRule` for every feature except those in `rules`.
    public init(default defaultRule: AccessRule, rules: [Feature.ID: AccessRule] = [:]) {
        self.defaultRule = defaultRule
        self.rules = rules
    }

    /// The device's default (SPEC §15.3): every feature needs the user's confirmation.
    public static let deviceDefault = FeatureRules(default: .confirm)
    /// The code's default (SPEC §15.3): the code adds no restriction.
    public static let codeDefault = FeatureRules(default: .allow)

    /// The rule for `feature`.
    public func rule(for feature: Feature.ID) -> AccessRule { rules[feature] ?? defaultRule }

    /// Sets the rule of one feature.
    public mutating func set(_ rule: AccessRule, for feature: Feature.ID) { rules[feature] = rule }
}
