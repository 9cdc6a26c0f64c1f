public import SupportVocabulary
/// SESSION_STARTED (`0x15`, SPEC §5.10): the supporter node confirms an allowed request; the session runs.
public struct SessionStarted: Hashable, Sendable {
    public var requestID: UInt32
    /// With access control in effect: the grants in effect as the session starts (SPEC §15.3).
    public var grantedFeatures: FeatureSet?
    /// With session messages in effect: app-defined bytes the integrator supplies, handed to the app unchanged.
    public var mediaDescriptor: [UInt8]?
    /// With session resume in effect: the rotated resume secret (SPEC §15.5).
    public var resumeSecret: String?

    public init(
        requestID: UInt32, grantedFeatures: FeatureSet? = nil, mediaDescriptor: [UInt8]? = nil,
        resumeSecret: String? = nil
    ) {
        self.requestID = requestID
        self.grantedFeatures = grantedFeatures
        self.mediaDescriptor = mediaDescriptor
        self.resumeSecret = resumeSecret
    }
}

extension SessionStarted: WireMessage {
    static let frameType = FrameType.sessionStarted
    private static let grantedField = FeaturesField(tag: 2, name: "granted_features")
    private static let mediaField = BytesField(
        tag: 3, name: "media_descriptor", maxLength: WireLimits.mediaDescriptorLength)
    private static let secretField = StringField(
        tag: 4, name: "resume_secret", maxLength: WireLimits.resumeSecretLength)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            requestID: try reader.required(CommonField.requestID),
            grantedFeatures: try reader.optional(SessionStarted.grantedField),
            mediaDescriptor: try reader.optional(SessionStarted.mediaField),
            resumeSecret: try reader.optional(SessionStarted.secretField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(CommonField.requestID, requestID)
        try writer.write(SessionStarted.grantedField, grantedFeatures)
        try writer.write(SessionStarted.mediaField, mediaDescriptor)
        try writer.write(SessionStarted.secretField, resumeSecret)
    }
}
