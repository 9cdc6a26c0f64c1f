import SupportVocabulary
/// SESSION_MESSAGE (`0x1C`, SPEC §15.4): chat text, an application message or a file part, in an active session.
///
/// The decoder checks types and limits only; the kind-dependent rules (UTF-8 chat, content type for application
/// messages, file fields) belong to the session, which acknowledges a breach with `message_refused`.
public struct SessionMessage: Hashable, Sendable {
    /// 1 for the sender's first message of the registration, then +1 each.
    public var messageID: UInt32
    public var kind: MessageKind
    public var contentType: String?
    public var body: [UInt8]
    /// Kind 3: names one file in the sender's own id space.
    public var transferID: UInt32?
    /// Kind 3 with offset 0.
    public var fileName: String?
    /// Kind 3 with offset 0: the file's total bytes.
    public var fileSize: UInt64?
    /// Kind 3: where `body` goes in the file.
    public var offset: UInt64?

    public init(
        messageID: UInt32, kind: MessageKind, contentType: String? = nil, body: [UInt8], transferID: UInt32? = nil,
        fileName: String? = nil, fileSize: UInt64? = nil, offset: UInt64? = nil
    ) {
        self.messageID = messageID
        self.kind = kind
        self.contentType = contentType
        self.body = body
        self.transferID = transferID
        self.fileName = fileName
        self.fileSize = fileSize
        self.offset = offset
    }

    /// A chat message.
    public static func chat(id: UInt32, text: String) -> SessionMessage {
        SessionMessage(messageID: id, kind: .chat, body: Array(text.utf8))
    }
}

extension SessionMessage: WireMessage {
    static let frameType = FrameType.sessionMessage
    static let idField = IntegerField<UInt32>(tag: 1, name: "message_id", range: 1...UInt32.max)
    private static let kindField = EnumField<MessageKind>(tag: 2, name: "kind")
    private static let contentTypeField = StringField(
        tag: 3, name: "content_type", maxLength: WireLimits.contentTypeLength)
    private static let bodyField = BytesField(tag: 4, name: "body", maxLength: Int(UInt16.max))
    private static let transferField = IntegerField<UInt32>(tag: 5, name: "transfer_id")
    private static let fileNameField = StringField(tag: 6, name: "file_name", maxLength: WireLimits.fileNameLength)
    /// The 16 MiB maximum is a limit of the table, so the decoder checks it (`value_out_of_range`).
    private static let fileSizeField = IntegerField<UInt64>(
        tag: 7, name: "file_size", range: 0...WireLimits.largestFileSize)
    private static let offsetField = IntegerField<UInt64>(tag: 8, name: "offset")

    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1, 2, 4])
        self.init(
            messageID: try reader.required(SessionMessage.idField),
            kind: try reader.required(SessionMessage.kindField),
            contentType: try reader.optional(SessionMessage.contentTypeField),
            body: try reader.required(SessionMessage.bodyField),
            transferID: try reader.optional(SessionMessage.transferField),
            fileName: try reader.optional(SessionMessage.fileNameField),
            fileSize: try reader.optional(SessionMessage.fileSizeField),
            offset: try reader.optional(SessionMessage.offsetField))
    }

    func write(to writer: inout FieldWriter) throws(WireError) {
        try writer.write(SessionMessage.idField, messageID)
        writer.write(SessionMessage.kindField, kind)
        try writer.write(SessionMessage.contentTypeField, contentType)
        try writer.write(SessionMessage.bodyField, body)
        try writer.write(SessionMessage.transferField, transferID)
        try writer.write(SessionMessage.fileNameField, fileName)
        try writer.write(SessionMessage.fileSizeField, fileSize)
        try writer.write(SessionMessage.offsetField, offset)
    }
}
