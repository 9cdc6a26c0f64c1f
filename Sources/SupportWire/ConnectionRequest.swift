public import SupportVocabulary
/// CONNECTION_REQUEST (`0x12`, SPEC §5.7): a named supporter asks the device's user to let them in.
public struct ConnectionRequest: Hashable, Sendable {
    /// Chosen by the supporter node; starts at 1 per connection and strictly increases.
    public var requestID: UInt32
    /// Who asks, 1–64 bytes; shown to the device's user.
    public var supporterName: String
    public var connectionType: ConnectionType
    /// Features the supporter wants in the session.
    public var requestedFeatures: FeatureSet
    /// With access control in effect: the requested features whose code rule is `confirm` (SPEC §15.3).
    public var confirmFeatures: FeatureSet?

    public init(
        requestID: UInt32, supporterName: String, connectionType: ConnectionType,
        requestedFeatures: FeatureSet = [], confirmFeatures: FeatureSet? = nil
    ) {
        self.confirmFeatures = confirmFeatures
        self.requestID = requestID
        self.supporterName = supporterName
        self.connectionType = connectionType
        self.requestedFeatures = requestedFeatures
    }
}

extension ConnectionRequest: WireMessage {
    static let frameType = FrameType.connectionRequest
    private static let nameField = StringField(tag: 2, name: "supporter_name", maxLength: WireLimits.nameLength)
    private static let typeField = EnumField<ConnectionType>(tag: 3, name: "connection_type")
    private static let featuresField = FeaturesField(tag: 4, name: "requested_features")
    private static let confirmField = FeaturesField(tag: 5, name: "confirm_features")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3, 4])
        self.init(
            requestID: try reader.required(CommonField.requestID),
            supporterName: try reader.required(ConnectionRequest.nameField),
            connectionType: try reader.required(ConnectionRequest.typeField),
            requestedFeatures: try reader.required(ConnectionRequest.featuresField),
            confirmFeatures: try reader.optional(ConnectionRequest.confirmField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(CommonField.requestID, requestID)
        try writer.write(ConnectionRequest.nameField, supporterName)
        writer.write(ConnectionRequest.typeField, connectionType)
        try writer.write(ConnectionRequest.featuresField, requestedFeatures)
        try writer.write(ConnectionRequest.confirmField, confirmFeatures)
    }
}
