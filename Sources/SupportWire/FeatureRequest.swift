public import SupportVocabulary
/// FEATURE_REQUEST (`0x19`, SPEC §15.3): during an active session the supporter asks for a feature not yet granted.
public struct FeatureRequest: Hashable, Sendable {
    /// Chosen by the supporter node; starts at 1 per connection and strictly increases.
    public var askID: UInt32
    public var feature: Feature.ID
    /// Whether the code rule says `confirm` (the device must prompt even where its own rule allows).
    public var confirm: Bool
    /// Why the supporter asks, shown to the user.
    public var text: String?

    public init(askID: UInt32, feature: Feature.ID, confirm: Bool = false, text: String? = nil) {
        self.askID = askID
        self.feature = feature
        self.confirm = confirm
        self.text = text
    }
}

extension FeatureRequest: WireMessage {
    static let frameType = FrameType.featureRequest
    private static let askField = IntegerField<UInt32>(tag: 1, name: "ask_id", range: 1...UInt32.max)
    private static let featureField = IntegerField<UInt16>(tag: 2, name: "feature")
    private static let confirmField = IntegerField<UInt8>(tag: 3, name: "confirm", range: 1...1)
    private static let textField = StringField(tag: 4, name: "text", maxLength: WireLimits.textLength)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2])
        self.init(
            askID: try reader.required(FeatureRequest.askField),
            feature: Feature.ID(rawValue: try reader.required(FeatureRequest.featureField)),
            confirm: try reader.optional(FeatureRequest.confirmField) != nil,
            text: try reader.optional(FeatureRequest.textField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(FeatureRequest.askField, askID)
        try writer.write(FeatureRequest.featureField, feature.rawValue)
        try writer.write(FeatureRequest.confirmField, confirm ? 1 : nil)
        try writer.write(FeatureRequest.textField, text)
    }
}
