/// FEATURE_WITHDRAW (`0x21`, SPEC §15.3, extension ask_withdraw): the supporter takes back an ask the device has not
/// answered yet; the device drops it (its prompt goes away) and answers it refused with `aborted_by_supporter`.
public struct FeatureWithdraw: Hashable, Sendable {
    /// The FEATURE_REQUEST's `ask_id`.
    public var askID: UInt32

    public init(askID: UInt32) { self.askID = askID }
}

extension FeatureWithdraw: WireMessage {
    static let frameType = FrameType.featureWithdraw
    private static let askField = IntegerField<UInt32>(tag: 1, name: "ask_id", range: 1...UInt32.max)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(askID: try reader.required(FeatureWithdraw.askField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(FeatureWithdraw.askField, askID)
    }
}
