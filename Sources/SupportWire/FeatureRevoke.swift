public import SupportVocabulary
/// FEATURE_REVOKE (`0x1B`, SPEC §15.3): the device ends a grant; it takes effect when sent.
public struct FeatureRevoke: Hashable, Sendable {
    public var feature: Feature.ID
    public var text: String?

    public init(feature: Feature.ID, text: String? = nil) {
        self.feature = feature
        self.text = text
    }
}

extension FeatureRevoke: WireMessage {
    static let frameType = FrameType.featureRevoke
    private static let featureField = IntegerField<UInt16>(tag: 1, name: "feature")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            feature: Feature.ID(rawValue: try reader.required(FeatureRevoke.featureField)),
            text: try reader.optional(CommonField.text))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(FeatureRevoke.featureField, feature.rawValue)
        try writer.write(CommonField.text, text)
    }
}
