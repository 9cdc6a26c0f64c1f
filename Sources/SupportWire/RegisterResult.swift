public import SupportVocabulary
/// REGISTER_RESULT (`0x11`, SPEC §5.6): `success` means the code is online; any other reason says why not.
public struct RegisterResult: Hashable, Sendable {
    public var reason: ReasonCode
    public var text: String?
    /// With `rate_limited`: wait at least this long before registering again.
    public var retryAfterMilliseconds: UInt32?
    /// With `success`: the kind of code joined.
    public var codeType: SessionCodeType?
    /// With `success` and session resume in effect: the secret that resumes this registration (SPEC §15.5).
    public var resumeSecret: String?

    public init(
        reason: ReasonCode, text: String? = nil, retryAfterMilliseconds: UInt32? = nil,
        codeType: SessionCodeType? = nil, resumeSecret: String? = nil
    ) {
        self.resumeSecret = resumeSecret
        self.reason = reason
        self.text = text
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.codeType = codeType
    }
}

extension RegisterResult: WireMessage {
    static let frameType = FrameType.registerResult
    private static let reasonField = ReasonField(tag: 1, name: "reason")
    private static let retryField = IntegerField<UInt32>(tag: 3, name: "retry_after_ms")
    private static let codeTypeField = EnumField<SessionCodeType>(tag: 4, name: "code_type")
    private static let secretField = StringField(
        tag: 5, name: "resume_secret", maxLength: WireLimits.resumeSecretLength)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            reason: try reader.required(RegisterResult.reasonField),
            text: try reader.optional(CommonField.text),
            retryAfterMilliseconds: try reader.optional(RegisterResult.retryField),
            codeType: try reader.optional(RegisterResult.codeTypeField),
            resumeSecret: try reader.optional(RegisterResult.secretField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(RegisterResult.reasonField, reason)
        try writer.write(CommonField.text, text)
        try writer.write(RegisterResult.retryField, retryAfterMilliseconds)
        writer.write(RegisterResult.codeTypeField, codeType)
        try writer.write(RegisterResult.secretField, resumeSecret)
    }
}
