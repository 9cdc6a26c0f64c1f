public import Foundation
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

/// `SessionUpdate` of protocol/openapi.yaml: the body of `PUT /sessions/{code}`. Present members change, absent ones
/// stay, `null` clears an optional text (``FieldChange``).
///
/// Decoding is strict, like ``APISessionCreate``'s; an empty object is refused (nothing to change). Whether
/// `valid_until` lies in the future depends on the clock: see ``validated(now:)``. Encoding writes `null` for
/// ``FieldChange/clear`` and leaves ``FieldChange/keep`` out.
public struct APISessionUpdate: Codable, Sendable, Hashable {
    public var description: FieldChange<String> = .keep
    public var customerName: FieldChange<String> = .keep
    public var customerEmail: FieldChange<String> = .keep
    public var waitingMessage: FieldChange<String> = .keep
    public var assignedSupporter: FieldChange<String> = .keep
    /// A new end of validity (cannot be cleared).
    public var validUntil: Date?
    /// `closed` closes the code for good; `open` only confirms an open code (a closed one cannot be reopened).
    public var state: APIStoredState?
    /// New code rules (SPEC §15.3), replacing the code's rules as a whole; nil keeps them. Applied with
    /// ``SupporterService/setFeatureRules(_:_:by:)`` (audited on their own), not by ``apply(to:)``.
    public var featureRules: FeatureRules?
    /// A new default media descriptor for the code (SPEC §15), or `null` to remove it.
    public var mediaDescriptor: FieldChange<[UInt8]> = .keep

    public init(
        description: FieldChange<String> = .keep, customerName: FieldChange<String> = .keep,
        customerEmail: FieldChange<String> = .keep, waitingMessage: FieldChange<String> = .keep,
        assignedSupporter: FieldChange<String> = .keep, validUntil: Date? = nil, state: APIStoredState? = nil,
        featureRules: FeatureRules? = nil
    ) {
        self.description = description
        self.customerName = customerName
        self.customerEmail = customerEmail
        self.waitingMessage = waitingMessage
        self.assignedSupporter = assignedSupporter
        self.validUntil = validUntil
        self.state = state
        self.featureRules = featureRules
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case description, state
        case customerName = "customer_name", customerEmail = "customer_email", waitingMessage = "waiting_message"
        case validUntil = "valid_until", assignedSupporter = "assigned_supporter"
        case featureRules = "feature_rules", mediaDescriptor = "media_descriptor"
    }

    public init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: Set(CodingKeys.allCases.map(\.stringValue)))
        guard !object.allKeys.isEmpty else { throw RESTError.unprocessable("nothing to change") }
        description = try object.text("description", max: 256, nullable: true)
        customerName = try object.text("customer_name", max: 128, nullable: true)
        customerEmail = try object.text("customer_email", min: 3, max: 254, nullable: true)
        waitingMessage = try object.text("waiting_message", max: 256, nullable: true)
        assignedSupporter = try object.text("assigned_supporter", max: 64, nullable: true)
        if case .set(let email) = customerEmail, !isEmailAddress(email) {
            throw RESTError.unprocessable("customer_email is not an email address")
        }
        validUntil = try object.time("valid_until")
        state = try object.choice("state", APIStoredState.self)
        featureRules = try object.featureRules()
        mediaDescriptor = try object.mediaDescriptor("media_descriptor", nullable: true)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(description, forKey: .description)
        try container.encode(customerName, forKey: .customerName)
        try container.encode(customerEmail, forKey: .customerEmail)
        try container.encode(waitingMessage, forKey: .waitingMessage)
        try container.encode(assignedSupporter, forKey: .assignedSupporter)
        try container.encodeIfPresent(validUntil.map(RESTTime.format), forKey: .validUntil)
        try container.encodeIfPresent(state, forKey: .state)
        try container.encodeIfPresent(featureRules.map(APIFeatureRules.init), forKey: .featureRules)
        switch mediaDescriptor {
        case .keep: break
        case .clear: try container.encodeNil(forKey: .mediaDescriptor)
        case .set(let bytes): try container.encode(Base64.encode(bytes), forKey: .mediaDescriptor)
        }
    }

    /// The checks that depend on the clock: `valid_until` must lie after `now`.
    public func validated(now: Date) throws(RESTError) -> Self {
        if let validUntil, validUntil <= now { throw RESTError.unprocessable("valid_until must be in the future") }
        return self
    }

    /// Whether stored metadata changes (not the state, not the code rules).
    public var changesMetadata: Bool {
        description.isChange || customerName.isChange || customerEmail.isChange || waitingMessage.isChange
            || assignedSupporter.isChange || validUntil != nil || mediaDescriptor.isChange
    }

    /// Applies the metadata changes to `record`.
    public func apply(to record: inout SessionCodeRecord) {
        record.description = description.applied(to: record.description)
        record.customerName = customerName.applied(to: record.customerName)
        record.customerEmail = customerEmail.applied(to: record.customerEmail)
        record.waitingMessage = waitingMessage.applied(to: record.waitingMessage)
        record.assignedSupporter = assignedSupporter.applied(to: record.assignedSupporter)
        if let validUntil { record.validUntil = validUntil }
        record.mediaDescriptor = mediaDescriptor.applied(to: record.mediaDescriptor)
    }
}
