public import SupportVocabulary
/// HELLO (`0x01`, SPEC §5.1): the initiator's first frame, proposing versions, keepalive and its receive limit.
public struct Hello: Hashable, Sendable {
    public var minVersion: UInt8
    public var maxVersion: UInt8
    public var role: NodeRole
    /// For a device: the device name supporters see. 1–64 bytes.
    public var nodeName: String
    /// Protocol extensions; none are defined in version 1.
    public var features: FeatureSet
    /// Proposed keepalive interval, 100–600 000 ms.
    public var keepaliveMilliseconds: UInt32
    /// Largest payload the sender will receive, 16 384–1 048 576.
    public var maxFrameSize: UInt32

    public init(
        minVersion: UInt8 = WireLimits.protocolVersion, maxVersion: UInt8 = WireLimits.protocolVersion,
        role: NodeRole, nodeName: String, features: FeatureSet = [], keepaliveMilliseconds: UInt32 = 15_000,
        maxFrameSize: UInt32 = UInt32(WireLimits.defaultMaxFrameSize)
    ) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.role = role
        self.nodeName = nodeName
        self.features = features
        self.keepaliveMilliseconds = keepaliveMilliseconds
        self.maxFrameSize = maxFrameSize
    }
}

extension Hello: WireMessage {
    static let frameType = FrameType.hello
    private static let minVersionField = IntegerField<UInt8>(tag: 1, name: "min_version", range: 1...255)
    private static let maxVersionName = "max_version"
    private static let roleField = EnumField<NodeRole>(tag: 3, name: "role")
    private static let nodeNameField = StringField(tag: 4, name: "node_name", maxLength: WireLimits.nameLength)
    private static let featuresField = FeaturesField(tag: 5, name: "features")
    private static let keepaliveField = IntegerField<UInt32>(
        tag: 6, name: "keepalive_ms", range: WireLimits.keepaliveRange)
    private static let maxFrameSizeField = IntegerField<UInt32>(
        tag: 7, name: "max_frame_size", range: WireLimits.maxFrameSizeRange)

    /// `max_version` ranges from `min_version`, so its field depends on the value read before it.
    private static func maxVersionField(atLeast minVersion: UInt8) -> IntegerField<UInt8> {
        IntegerField(tag: 2, name: maxVersionName, range: minVersion...255)
    }

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3, 4, 5, 6, 7])
        let minVersion = try reader.required(Hello.minVersionField)
        self.init(
            minVersion: minVersion,
            maxVersion: try reader.required(Hello.maxVersionField(atLeast: minVersion)),
            role: try reader.required(Hello.roleField),
            nodeName: try reader.required(Hello.nodeNameField),
            features: try reader.required(Hello.featuresField),
            keepaliveMilliseconds: try reader.required(Hello.keepaliveField),
            maxFrameSize: try reader.required(Hello.maxFrameSizeField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(Hello.minVersionField, minVersion)
        try writer.write(Hello.maxVersionField(atLeast: max(minVersion, 1)), maxVersion)
        writer.write(Hello.roleField, role)
        try writer.write(Hello.nodeNameField, nodeName)
        try writer.write(Hello.featuresField, features)
        try writer.write(Hello.keepaliveField, keepaliveMilliseconds)
        try writer.write(Hello.maxFrameSizeField, maxFrameSize)
    }
}
