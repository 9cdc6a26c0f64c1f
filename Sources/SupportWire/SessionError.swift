public import SupportVocabulary
/// SESSION_ERROR (`0x17`, SPEC §5.12): informative only; the session goes on.
public struct SessionError: Hashable, Sendable {
    /// Usually `unsupported_feature` or `feature_version_mismatch`.
    public var reason: ReasonCode
    /// The feature concerned.
    public var feature: Feature.ID?
    public var text: String?

    public init(reason: ReasonCode, feature: Feature.ID? = nil, text: String? = nil) {
        self.reason = reason
        self.feature = feature
        self.text = text
    }
}

extension SessionError: WireMessage {
    static let frameType = FrameType.sessionError
    private static let reasonField = ReasonField(tag: 1, name: "reason")
    private static let featureField = IntegerField<UInt16>(tag: 2, name: "feature")
    private static let textField = StringField(tag: 3, name: "text", maxLength: WireLimits.textLength)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(
            reason: try reader.required(SessionError.reasonField),
            feature: try reader.optional(SessionError.featureField).map(Feature.ID.init(rawValue:)),
            text: try reader.optional(SessionError.textField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        writer.write(SessionError.reasonField, reason)
        try writer.write(SessionError.featureField, feature?.rawValue)
        try writer.write(SessionError.textField, text)
    }
}
