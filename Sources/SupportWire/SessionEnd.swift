/// SESSION_END (`0x16`, SPEC §5.11): ends the registration in whatever state it is; the connection stays open.
public struct SessionEnd: Hashable, Sendable {
    public var reason: ReasonCode
    public var text: String?
    public init(reason: ReasonCode, text: String? = nil) {
        self.reason = reason
        self.text = text
    }
}

extension SessionEnd: WireMessage {
    static let frameType = FrameType.sessionEnd
    private static let reasonField = ReasonField(tag: 1, name: "reason")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(reason: try reader.required(SessionEnd.reasonField), text: try reader.optional(CommonField.text))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(SessionEnd.reasonField, reason)
        try writer.write(CommonField.text, text)
    }
}
