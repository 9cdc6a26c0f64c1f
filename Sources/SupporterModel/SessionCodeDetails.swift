public import SupportVocabulary

/// What a new session code holds besides its type.
public struct SessionCodeDetails: Sendable, Hashable {
    public var description: String?
    public var customerName: String?
    public var customerEmail: String?
    /// Shown to the device's user while waiting (sent with REGISTER_RESULT).
    public var waitingMessage: String?
    /// The code rules (SPEC §15.3); `allow` for every feature unless given.
    public var featureRules: FeatureRules
    /// The supporter account (login) the code is assigned to; unassigned when nil.
    public var assignedSupporter: String?
    /// What SESSION_STARTED hands the app when a request names none (SPEC §15); secret.
    public var mediaDescriptor: [UInt8]?

    public init(
        description: String? = nil, customerName: String? = nil, customerEmail: String? = nil,
        waitingMessage: String? = nil, featureRules: FeatureRules = .codeDefault, assignedSupporter: String? = nil,
        mediaDescriptor: [UInt8]? = nil
    ) {
        self.mediaDescriptor = mediaDescriptor
        self.assignedSupporter = assignedSupporter
        self.description = description
        self.customerName = customerName
        self.customerEmail = customerEmail
        self.waitingMessage = waitingMessage
        self.featureRules = featureRules
    }
}
