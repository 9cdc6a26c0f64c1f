/// GOAWAY (`0x05`, SPEC §5.4): the sender closes the connection after this frame, for `reason`.
public struct GoAway: Hashable, Sendable {
    public var reason: ReasonCode
    /// Human-readable detail for logs, 1–256 bytes when present.
    public var text: String?
    public init(reason: ReasonCode, text: String? = nil) {
        self.reason = reason
        self.text = text
    }
}

extension GoAway: WireMessage {
    static let frameType = FrameType.goAway
    private static let reasonField = ReasonField(tag: 1, name: "reason")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(reason: try reader.required(GoAway.reasonField), text: try reader.optional(CommonField.text))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(GoAway.reasonField, reason)
        try writer.write(CommonField.text, text)
    }
}
