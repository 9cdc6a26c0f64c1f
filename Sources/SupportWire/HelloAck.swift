public import SupportVocabulary
/// HELLO_ACK (`0x02`, SPEC §5.2): the responder's answer with the chosen version and the effective keepalive.
public struct HelloAck: Hashable, Sendable {
    /// The protocol version chosen for this connection.
    public var version: UInt8
    public var role: NodeRole
    public var nodeName: String
    public var features: FeatureSet
    /// The effective keepalive interval: the larger of the initiator's proposal and the responder's own.
    public var keepaliveMilliseconds: UInt32
    /// Largest payload the responder will receive.
    public var maxFrameSize: UInt32
    /// With session resume in effect (SPEC §15.5): how long the responder keeps a session whose link was lost.
    public var resumeGraceMilliseconds: UInt32?

    public init(
        version: UInt8 = WireLimits.protocolVersion, role: NodeRole, nodeName: String, features: FeatureSet = [],
        keepaliveMilliseconds: UInt32 = 15_000, maxFrameSize: UInt32 = UInt32(WireLimits.defaultMaxFrameSize),
        resumeGraceMilliseconds: UInt32? = nil
    ) {
        self.resumeGraceMilliseconds = resumeGraceMilliseconds
        self.version = version
        self.role = role
        self.nodeName = nodeName
        self.features = features
        self.keepaliveMilliseconds = keepaliveMilliseconds
        self.maxFrameSize = maxFrameSize
    }
}

extension HelloAck: WireMessage {
    static let frameType = FrameType.helloAck
    private static let versionField = IntegerField<UInt8>(tag: 1, name: "version", range: 1...255)
    private static let roleField = EnumField<NodeRole>(tag: 2, name: "role")
    private static let nodeNameField = StringField(tag: 3, name: "node_name", maxLength: WireLimits.nameLength)
    private static let featuresField = FeaturesField(tag: 4, name: "features")
    private static let keepaliveField = IntegerField<UInt32>(
        tag: 5, name: "keepalive_ms", range: WireLimits.keepaliveRange)
    private static let maxFrameSizeField = IntegerField<UInt32>(
        tag: 6, name: "max_frame_size", range: WireLimits.maxFrameSizeRange)
    private static let resumeGraceField = IntegerField<UInt32>(
        tag: 7, name: "resume_grace_ms", range: WireLimits.resumeGraceRange)

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3, 4, 5, 6])
        self.init(
            version: try reader.required(HelloAck.versionField),
            role: try reader.required(HelloAck.roleField),
            nodeName: try reader.required(HelloAck.nodeNameField),
            features: try reader.required(HelloAck.featuresField),
            keepaliveMilliseconds: try reader.required(HelloAck.keepaliveField),
            maxFrameSize: try reader.required(HelloAck.maxFrameSizeField),
            resumeGraceMilliseconds: try reader.optional(HelloAck.resumeGraceField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(HelloAck.versionField, version)
        writer.write(HelloAck.roleField, role)
        try writer.write(HelloAck.nodeNameField, nodeName)
        try writer.write(HelloAck.featuresField, features)
        try writer.write(HelloAck.keepaliveField, keepaliveMilliseconds)
        try writer.write(HelloAck.maxFrameSizeField, maxFrameSize)
        try writer.write(HelloAck.resumeGraceField, resumeGraceMilliseconds)
    }
}
