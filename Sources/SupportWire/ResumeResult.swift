import SupportVocabulary
/// RESUME_RESULT (`0x1F`, SPEC §15.5): whether the registration moved to this connection.
public struct ResumeResult: Hashable, Sendable {
    /// `success`, `resume_rejected`, `rate_limited` or `internal_error`.
    public var reason: ReasonCode
    public var text: String?
    /// With `success`: the new secret; the old one is invalid from now.
    public var resumeSecret: String?
    /// The last SESSION_MESSAGE id the node received from the device.
    public var lastMessageID: UInt32?
    /// With `rate_limited`.
    public var retryAfterMilliseconds: UInt32?

    public init(
        reason: ReasonCode, text: String? = nil, resumeSecret: String? = nil, lastMessageID: UInt32? = nil,
        retryAfterMilliseconds: UInt32? = nil
    ) {
        self.reason = reason
        self.text = text
        self.resumeSecret = resumeSecret
        self.lastMessageID = lastMessageID
        self.retryAfterMilliseconds = retryAfterMilliseconds
    }
}

extension ResumeResult: WireMessage {
    static let frameType = FrameType.resumeResult
    private static let reasonField = ReasonField(tag: 1, name: "reason")
    private static let secretField = StringField(
        tag: 3, name: "resume_secret", maxLength: WireLimits.resumeSecretLength)
    /// No range: SPEC §15.5 gives none, so any `u32` decodes.
    private static let lastMessageField = IntegerField<UInt32>(tag: 4, name: "last_message_id")
    private static let retryField = IntegerField<UInt32>(tag: 5, name: "retry_after_ms")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            reason: try reader.required(ResumeResult.reasonField),
            text: try reader.optional(CommonField.text),
            resumeSecret: try reader.optional(ResumeResult.secretField),
            lastMessageID: try reader.optional(ResumeResult.lastMessageField),
            retryAfterMilliseconds: try reader.optional(ResumeResult.retryField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(ResumeResult.reasonField, reason)
        try writer.write(CommonField.text, text)
        try writer.write(ResumeResult.secretField, resumeSecret)
        try writer.write(ResumeResult.lastMessageField, lastMessageID)
        try writer.write(ResumeResult.retryField, retryAfterMilliseconds)
    }
}
