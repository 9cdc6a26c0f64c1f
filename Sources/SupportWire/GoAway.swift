/// GOAWAY (`0x05`, SPEC §5.4): the sender closes the connection after this frame, for `reason`.
public struct GoAway: Hashable, Sendable {
    public var reason: ReasonCode
    /// Human-readable detail for logs, 1–256 bytes when present.
    public var text: String?
    /// Session resume in effect (SPEC §15.5, "Drain"): the supporter node is draining and keeps the session for a
    /// resume — on another node of the service, or on this one once it has restarted. The receiver treats the close
    /// as a link loss, not as the end of its session. Sent with `going_away` only.
    public var resumeElsewhere: Bool

    public init(reason: ReasonCode, text: String? = nil, resumeElsewhere: Bool = false) {
        self.reason = reason
        self.text = text
        self.resumeElsewhere = resumeElsewhere
    }
}

extension GoAway: WireMessage {
    static let frameType = FrameType.goAway
    private static let reasonField = ReasonField(tag: 1, name: "reason")
    private static let resumeElsewhereField = IntegerField<UInt8>(tag: 4, name: "resume_elsewhere", range: 1...1)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            reason: try reader.required(GoAway.reasonField), text: try reader.optional(CommonField.text),
            resumeElsewhere: try reader.optional(GoAway.resumeElsewhereField) != nil)
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(GoAway.reasonField, reason)
        try writer.write(CommonField.text, text)
        try writer.write(GoAway.resumeElsewhereField, resumeElsewhere ? 1 : nil)
    }
}
