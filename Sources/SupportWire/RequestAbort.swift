/// REQUEST_ABORT (`0x14`, SPEC §5.9): the supporter withdraws a pending request before the device answered.
public struct RequestAbort: Hashable, Sendable {
    public var requestID: UInt32
    /// `aborted_by_supporter` or `request_timed_out`.
    public var reason: ReasonCode

    public init(requestID: UInt32, reason: ReasonCode = .abortedBySupporter) {
        self.requestID = requestID
        self.reason = reason
    }
}

extension RequestAbort: WireMessage {
    static let frameType = FrameType.requestAbort
    private static let reasonField = ReasonField(tag: 2, name: "reason")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2])
        self.init(
            requestID: try reader.required(CommonField.requestID), reason: try reader.required(RequestAbort.reasonField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(CommonField.requestID, requestID)
        writer.write(RequestAbort.reasonField, reason)
    }
}
