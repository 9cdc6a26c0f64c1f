/// VOIP_STATE (`0x18`, SPEC §5.13): the device tells the supporter whether VoIP runs, and if not, why.
public struct VoIPState: Hashable, Sendable {
    public var state: VoIPCallState
    public var text: String?
    public init(state: VoIPCallState, text: String? = nil) {
        self.state = state
        self.text = text
    }
}

extension VoIPState: WireMessage {
    static let frameType = FrameType.voipState
    private static let stateField = EnumField<VoIPCallState>(tag: 1, name: "state")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(state: try reader.required(VoIPState.stateField), text: try reader.optional(CommonField.text))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(VoIPState.stateField, state)
        try writer.write(CommonField.text, text)
    }
}
