public import SupportVocabulary
/// CONNECTION_RESPONSE (`0x13`, SPEC §5.8): the device user's allow or reject for one request.
public struct ConnectionResponse: Hashable, Sendable {
    public var requestID: UInt32
    public var decision: ConnectionDecision
    /// `success` with allow; `rejected_by_user` or `request_timed_out` with reject.
    public var reason: ReasonCode
    /// With allow and access control in effect: what the device grants (SPEC §15.3).
    public var grantedFeatures: FeatureSet?

    public init(
        requestID: UInt32, decision: ConnectionDecision, reason: ReasonCode? = nil, grantedFeatures: FeatureSet? = nil
    ) {
        self.grantedFeatures = grantedFeatures
        self.requestID = requestID
        self.decision = decision
        self.reason = reason ?? (decision == .allow ? .success : .rejectedByUser)
    }
}

extension ConnectionResponse: WireMessage {
    static let frameType = FrameType.connectionResponse
    private static let decisionField = EnumField<ConnectionDecision>(tag: 2, name: "decision")
    private static let reasonField = ReasonField(tag: 3, name: "reason")
    private static let grantedField = FeaturesField(tag: 4, name: "granted_features")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3])
        self.init(
            requestID: try reader.required(CommonField.requestID),
            decision: try reader.required(ConnectionResponse.decisionField),
            reason: try reader.required(ConnectionResponse.reasonField),
            grantedFeatures: try reader.optional(ConnectionResponse.grantedField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(CommonField.requestID, requestID)
        writer.write(ConnectionResponse.decisionField, decision)
        writer.write(ConnectionResponse.reasonField, reason)
        try writer.write(ConnectionResponse.grantedField, grantedFeatures)
    }
}
