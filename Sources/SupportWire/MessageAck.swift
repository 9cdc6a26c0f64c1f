import SupportVocabulary
/// MESSAGE_ACK (`0x1D`, SPEC §15.4): one message was handed to the application, or refused, and why.
public struct MessageAck: Hashable, Sendable {
    public var messageID: UInt32
    /// `success` (delivered), `feature_denied` (its feature is not granted) or `message_refused`.
    public var reason: ReasonCode
    public var text: String?

    public init(messageID: UInt32, reason: ReasonCode = .success, text: String? = nil) {
        self.messageID = messageID
        self.reason = reason
        self.text = text
    }
}

extension MessageAck: WireMessage {
    static let frameType = FrameType.messageAck
    /// No range: SPEC §15.4 gives none, so any `u32` decodes (the session decides what an unknown id means).
    private static let idField = IntegerField<UInt32>(tag: 1, name: "message_id")
    private static let reasonField = ReasonField(tag: 2, name: "reason")
    private static let textField = StringField(tag: 3, name: "text", maxLength: WireLimits.textLength)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2])
        self.init(
            messageID: try reader.required(MessageAck.idField),
            reason: try reader.required(MessageAck.reasonField),
            text: try reader.optional(MessageAck.textField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(MessageAck.idField, messageID)
        writer.write(MessageAck.reasonField, reason)
        try writer.write(MessageAck.textField, text)
    }
}
