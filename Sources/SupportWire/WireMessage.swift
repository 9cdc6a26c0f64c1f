import SupportVocabulary
/// What every message type does to cross the wire: one frame type, fields read from and written to a payload.
protocol WireMessage: Sendable {
    static var frameType: FrameType { get }
    init(reading reader: inout FieldReader) throws(WireError)
    func write(to writer: inout FieldWriter) throws(WireError)
}

/// Fields shared by several messages.
enum CommonField {
    static let text = StringField(tag: 2, name: "text", maxLength: WireLimits.textLength)
    static let requestID = IntegerField<UInt32>(tag: 1, name: "request_id", range: 1...UInt32.max)
}
