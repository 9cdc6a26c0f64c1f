import SupportSession
import SupportWire
import SupportUtilities
public import SupportVocabulary

extension FeatureRules {
    /// The rules as one line for the audit trail and logs: `default=allow`, then each feature's rule in id order,
    /// e.g. `default=allow remote_control=confirm voip=deny`. Features without a SPEC name here show as
    /// `feature(0x…)` (``Feature/ID/description``).
    public var auditText: String {
        (["default=\(defaultRule)"]
            + rules.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }
}
