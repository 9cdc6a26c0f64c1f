public import Foundation
import SupportSession
public import SupportVocabulary
public import SupporterModel

/// A change of one session code, decided by the registry (`CodeRegistry.plan…`) and applied only once the store
/// intents recording it are committed (``CodeRegistry/apply(_:now:)``): the node's one audit rule, decide → commit →
/// apply → answer.
public enum CodeChange: Sendable, Hashable {
    /// A new code.
    case create(SessionCodeRecord)
    /// New metadata: the fields that differ between `before` and `after` change.
    case update(before: SessionCodeRecord, after: SessionCodeRecord)
    /// New code rules (SPEC §15.3).
    case featureRules(code: String, FeatureRules)
    /// The code goes; its audit history stays.
    case delete(String)
    /// The code is closed (`closing`) or expires, at `at`.
    case finish(code: String, closing: Bool, at: Date)
}

extension SessionCodeRecord {
    /// Takes every metadata field that an update changed from `before` to `after`, keeping the others as they are.
    mutating func merge(from before: SessionCodeRecord, to after: SessionCodeRecord) {
        if before.type != after.type { type = after.type }
        if before.description != after.description { description = after.description }
        if before.customerName != after.customerName { customerName = after.customerName }
        if before.customerEmail != after.customerEmail { customerEmail = after.customerEmail }
        if before.waitingMessage != after.waitingMessage { waitingMessage = after.waitingMessage }
        if before.validUntil != after.validUntil { validUntil = after.validUntil }
        if before.assignedSupporter != after.assignedSupporter { assignedSupporter = after.assignedSupporter }
        if before.mediaDescriptor != after.mediaDescriptor { mediaDescriptor = after.mediaDescriptor }
    }
}
