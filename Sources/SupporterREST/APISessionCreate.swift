public import Foundation
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

/// `SessionCreate` of protocol/openapi.yaml: the body of `POST /sessions`.
///
/// Decoding is strict (``StrictJSON``): unknown members, wrong types, `null`, strings out of their length, a
/// malformed email address, a lifetime out of range, an unreadable time, both lifetime members, or `feature_rules` that
/// ``APIFeatureRules`` refuses (an unknown feature name or rule) are refused with
/// ``RESTError/Kind/unprocessable`` naming the member; a body that is not a JSON object with
/// ``RESTError/Kind/badRequest``. Whether `valid_until` lies in the future depends on the clock: see
/// ``validated(now:)``. Encoding leaves absent members out.
public struct APISessionCreate: Codable, Sendable, Hashable {
    public var type: APISessionType?
    public var description: String?
    public var customerName: String?
    public var customerEmail: String?
    public var waitingMessage: String?
    /// Lifetime from now, 60 to 31 536 000 seconds.
    public var validForSeconds: Int?
    public var validUntil: Date?
    /// The code rules (SPEC §15.3); the code default (`allow` for every feature) when absent.
    public var featureRules: FeatureRules?
    /// The account (login) the code is assigned to.
    public var assignedSupporter: String?
    /// What SESSION_STARTED hands the app when a connection request names none (SPEC §15); never shown again.
    public var mediaDescriptor: [UInt8]?

    public init(
        type: APISessionType? = nil, description: String? = nil, customerName: String? = nil,
        customerEmail: String? = nil, waitingMessage: String? = nil, validForSeconds: Int? = nil,
        validUntil: Date? = nil, featureRules: FeatureRules? = nil
    ) {
        self.type = type
        self.description = description
        self.customerName = customerName
        self.customerEmail = customerEmail
        self.waitingMessage = waitingMessage
        self.validForSeconds = validForSeconds
        self.validUntil = validUntil
        self.featureRules = featureRules
    }

    /// Shortest and longest lifetime `valid_for_seconds` may ask for.
    public static let lifetimeRange = 60...31_536_000

    enum CodingKeys: String, CodingKey, CaseIterable {
        case type, description
        case customerName = "customer_name", customerEmail = "customer_email", waitingMessage = "waiting_message"
        case validForSeconds = "valid_for_seconds", validUntil = "valid_until"
        case featureRules = "feature_rules", assignedSupporter = "assigned_supporter"
        case mediaDescriptor = "media_descriptor"
    }

    public init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: Set(CodingKeys.allCases.map(\.stringValue)))
        type = try object.choice("type", APISessionType.self)
        description = try object.text("description", max: 256, nullable: false).value
        customerName = try object.text("customer_name", max: 128, nullable: false).value
        customerEmail = try object.text("customer_email", min: 3, max: 254, nullable: false).value
        waitingMessage = try object.text("waiting_message", max: 256, nullable: false).value
        if let email = customerEmail, !isEmailAddress(email) {
            throw RESTError.unprocessable("customer_email is not an email address")
        }
        if object.has("valid_for_seconds"), object.has("valid_until") {
            throw RESTError.unprocessable("give valid_for_seconds or valid_until, not both")
        }
        validForSeconds = try object.integer("valid_for_seconds", in: Self.lifetimeRange)
        validUntil = try object.time("valid_until")
        featureRules = try object.featureRules()
        assignedSupporter = try object.string("assigned_supporter", max: 64, required: false)
        mediaDescriptor = try object.mediaDescriptor("media_descriptor", nullable: false).value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(type, forKey: .type)
        try container.encodeIfPresent(description, forKey: .description)
        try container.encodeIfPresent(customerName, forKey: .customerName)
        try container.encodeIfPresent(customerEmail, forKey: .customerEmail)
        try container.encodeIfPresent(waitingMessage, forKey: .waitingMessage)
        try container.encodeIfPresent(validForSeconds, forKey: .validForSeconds)
        try container.encodeIfPresent(validUntil.map(RESTTime.format), forKey: .validUntil)
        try container.encodeIfPresent(featureRules.map(APIFeatureRules.init), forKey: .featureRules)
        try container.encodeIfPresent(assignedSupporter, forKey: .assignedSupporter)
        try container.encodeIfPresent(mediaDescriptor.map { Base64.encode($0) }, forKey: .mediaDescriptor)
    }

    /// The checks that depend on the clock: `valid_until` must lie after `now`.
    public func validated(now: Date) throws(RESTError) -> Self {
        if let validUntil, validUntil <= now { throw RESTError.unprocessable("valid_until must be in the future") }
        return self
    }

    /// The node's code type (remote support unless given).
    public var codeType: SessionCodeType { (type ?? .remoteSupport).codeType }

    /// The node's details of the new code.
    public var details: SessionCodeDetails {
        SessionCodeDetails(
            description: description, customerName: customerName, customerEmail: customerEmail,
            waitingMessage: waitingMessage, featureRules: featureRules ?? .codeDefault,
            assignedSupporter: assignedSupporter, mediaDescriptor: mediaDescriptor)
    }

    /// The lifetime asked for, if any (else the node's default, or ``validUntil``).
    public var lifetime: Duration? { validForSeconds.map { .seconds($0) } }
}
