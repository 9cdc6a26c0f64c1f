public import Foundation
import SupportUtilities
public import SupportVocabulary

/// A session code as the supporter node stores it durably (see ``SessionStore``).
///
/// Only the stored facts: whether a device is online or a session runs is live state, kept in memory. Whether an
/// open code has expired follows from ``validUntil``. Dates are stored as Unix milliseconds: they read back rounded
/// to the nearest millisecond.
public struct SessionCodeRecord: Sendable, Hashable {
    /// The code itself; unique.
    public var code: String
    public var type: SessionCodeType
    public var description: String?
    public var customerName: String?
    public var customerEmail: String?
    /// Shown to the customer while they wait for a supporter.
    public var waitingMessage: String?
    /// Whether the code was closed (it can never be joined again).
    public var isClosed: Bool
    public var createdAt: Date
    /// After this the code is expired.
    public var validUntil: Date
    public var closedAt: Date?
    /// The supporter the code is assigned to.
    public var assignedSupporter: String?
    /// The code rules (SPEC §15.3): how each feature may be granted in a session on this code, set by the supporter
    /// team. ``FeatureRules/codeDefault`` (`allow` for every feature) unless set.
    public var featureRules: FeatureRules
    /// What SESSION_STARTED hands the app (SPEC §15) when a connection request names none: a WebRTC room, a
    /// screen-share token (1–4,096 bytes). Secret: never logged, audited or shown, only whether it is set.
    public var mediaDescriptor: [UInt8]?

    public init(
        code: String, type: SessionCodeType = .remoteSupport, description: String? = nil, customerName: String? = nil,
        customerEmail: String? = nil, waitingMessage: String? = nil, isClosed: Bool = false, createdAt: Date,
        validUntil: Date, closedAt: Date? = nil, assignedSupporter: String? = nil,
        featureRules: FeatureRules = .codeDefault, mediaDescriptor: [UInt8]? = nil
    ) {
        self.code = code
        self.type = type
        self.description = description
        self.customerName = customerName
        self.customerEmail = customerEmail
        self.waitingMessage = waitingMessage
        self.isClosed = isClosed
        self.createdAt = createdAt
        self.validUntil = validUntil
        self.closedAt = closedAt
        self.assignedSupporter = assignedSupporter
        self.featureRules = featureRules
        self.mediaDescriptor = mediaDescriptor
    }
}
