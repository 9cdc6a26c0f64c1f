public import SupportVocabulary
/// RESUME (`0x1E`, SPEC §15.5): on a new connection, the device takes back its registration after a link loss.
public struct Resume: Hashable, Sendable {
    public var sessionCode: String
    /// The last secret the device received.
    public var resumeSecret: String
    /// The device's session state.
    public var state: ResumeState
    /// With request_pending, awaiting_start and active: that state's request; with online: the last request the
    /// device rejected (or let time out), if any.
    public var requestID: UInt32?
    /// The last SESSION_MESSAGE id received from the node.
    public var lastMessageID: UInt32?
    /// With state awaiting_start and access control: the grant the lost allow carried.
    public var grantedFeatures: FeatureSet?

    public init(
        sessionCode: String, resumeSecret: String, state: ResumeState, requestID: UInt32? = nil,
        lastMessageID: UInt32? = nil, grantedFeatures: FeatureSet? = nil
    ) {
        self.grantedFeatures = grantedFeatures
        self.sessionCode = sessionCode
        self.resumeSecret = resumeSecret
        self.state = state
        self.requestID = requestID
        self.lastMessageID = lastMessageID
    }
}

extension Resume: WireMessage {
    static let frameType = FrameType.resume
    private static let codeField = StringField(tag: 1, name: "session_code", maxLength: WireLimits.sessionCodeLength)
    private static let secretField = StringField(
        tag: 2, name: "resume_secret", maxLength: WireLimits.resumeSecretLength)
    private static let stateField = EnumField<ResumeState>(tag: 3, name: "state")
    // No range for these two: SPEC §15.5 gives none, so any `u32` decodes; what a value means is the session's.
    private static let requestField = IntegerField<UInt32>(tag: 4, name: "request_id")
    private static let lastMessageField = IntegerField<UInt32>(tag: 5, name: "last_message_id")
    private static let grantedField = FeaturesField(tag: 6, name: "granted_features")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3])
        self.init(
            sessionCode: try reader.required(Resume.codeField),
            resumeSecret: try reader.required(Resume.secretField),
            state: try reader.required(Resume.stateField),
            requestID: try reader.optional(Resume.requestField),
            lastMessageID: try reader.optional(Resume.lastMessageField),
            grantedFeatures: try reader.optional(Resume.grantedField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(Resume.codeField, sessionCode)
        try writer.write(Resume.secretField, resumeSecret)
        writer.write(Resume.stateField, state)
        try writer.write(Resume.requestField, requestID)
        try writer.write(Resume.lastMessageField, lastMessageID)
        try writer.write(Resume.grantedField, grantedFeatures)
    }
}
