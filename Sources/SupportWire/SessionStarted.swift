/// SESSION_STARTED (`0x15`, SPEC §5.10): the supporter node confirms an allowed request; the session runs.
public struct SessionStarted: Hashable, Sendable {
    public var requestID: UInt32
    public init(requestID: UInt32) { self.requestID = requestID }
}

extension SessionStarted: WireMessage {
    static let frameType = FrameType.sessionStarted

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(requestID: try reader.required(CommonField.requestID))
    }

    func write(to writer: inout FieldWriter) throws(WireError) { try writer.write(CommonField.requestID, requestID) }
}
