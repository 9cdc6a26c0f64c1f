/// A feature or rule name that ``FeatureRuleNames`` does not know, with the name at fault and what would be accepted.
///
/// A struct over a small kind, like `StoreError`, so new kinds can be added without breaking callers.
public struct FeatureRuleNameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which kind of name was wrong.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unknownFeature = "unknown_feature", unknownRule = "unknown_rule"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not one of the feature names of ``FeatureRuleNames/features``.
        public static let unknownFeature = Kind(.unknownFeature)
        /// Not `allow`, `confirm` or `deny`.
        public static let unknownRule = Kind(.unknownRule)

        public var description: String { base.rawValue }
    }

    /// Which kind of name was wrong.
    public let kind: Kind
    /// The name as given.
    public let name: String
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?

    public init(_ kind: Kind, _ name: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.name = name
        self.underlying = underlying
    }

    public static func == (lhs: FeatureRuleNameError, rhs: FeatureRuleNameError) -> Bool {
        lhs.kind == rhs.kind && lhs.name == rhs.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(name)
    }

    /// The name as messages quote it: at most 64 characters, control characters escaped.
    public var quotedName: String {
        let shown = name.count > 64 ? String(name.prefix(64)) + "…" : name
        var quoted = "'"
        for scalar in shown.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                quoted += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "'"
    }

    /// What was wrong and what would be accepted, e.g. `unknown rule 'maybe'; a rule is allow, confirm or deny`.
    public var message: String {
        switch kind {
        case .unknownFeature: "unknown feature \(quotedName); the features are \(FeatureRuleNames.featureList)"
        default: "unknown rule \(quotedName); a rule is \(FeatureRuleNames.ruleList)"
        }
    }

    /// The message.
    public var description: String { message }
}
