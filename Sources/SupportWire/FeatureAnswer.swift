/// FEATURE_ANSWER (`0x1A`, SPEC §15.3): the device grants or refuses one FEATURE_REQUEST.
public struct FeatureAnswer: Hashable, Sendable {
    public var askID: UInt32
    public var decision: FeatureDecision
    /// `success` with grant; `rejected_by_user`, `request_timed_out`, `feature_denied` or `unsupported_feature` with
    /// refuse. The receiver acts on `decision` alone.
    public var reason: ReasonCode

    public init(askID: UInt32, decision: FeatureDecision, reason: ReasonCode? = nil) {
        self.askID = askID
        self.decision = decision
        self.reason = reason ?? (decision == .grant ? .success : .rejectedByUser)
    }
}

extension FeatureAnswer: WireMessage {
    static let frameType = FrameType.featureAnswer
    private static let askField = IntegerField<UInt32>(tag: 1, name: "ask_id", range: 1...UInt32.max)
    private static let decisionField = EnumField<FeatureDecision>(tag: 2, name: "decision")
    private static let reasonField = ReasonField(tag: 3, name: "reason")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 3])
        self.init(
            askID: try reader.required(FeatureAnswer.askField),
            decision: try reader.required(FeatureAnswer.decisionField),
            reason: try reader.required(FeatureAnswer.reasonField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(FeatureAnswer.askField, askID)
        writer.write(FeatureAnswer.decisionField, decision)
        writer.write(FeatureAnswer.reasonField, reason)
    }
}
