public import SupportVocabulary
/// REGISTER (`0x10`, SPEC §5.5): the device joins a session code with an API token.
public struct Register: Hashable, Sendable {
    /// The session code, 1–64 bytes. Whether it is valid is the supporter node's decision.
    public var sessionCode: String
    /// The API token, 1–256 bytes. A secret: never log it.
    public var apiToken: String
    /// What the device can do.
    public var capabilities: FeatureSet

    public init(sessionCode: String, apiToken: String, capabilities: FeatureSet = []) {
        self.sessionCode = sessionCode
        self.apiToken = apiToken
        self.capabilities = capabilities
    }
}

extension Register: WireMessage {
    static let frameType = FrameType.register
    private static let codeField = StringField(
        tag: 1, name: "session_code", maxLength: WireLimits.sessionCodeLength)
    private static let tokenField = StringField(tag: 2, name: "api_token", maxLength: WireLimits.apiTokenLength)
    private static let capabilitiesField = FeaturesField(tag: 3, name: "capabilities")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3])
        self.init(
            sessionCode: try reader.required(Register.codeField),
            apiToken: try reader.required(Register.tokenField),
            capabilities: try reader.required(Register.capabilitiesField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(Register.codeField, sessionCode)
        try writer.write(Register.tokenField, apiToken)
        try writer.write(Register.capabilitiesField, capabilities)
    }
}
