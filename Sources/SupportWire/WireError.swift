/// A decoding or encoding failure of the RemoteSupport wire protocol (SPEC §10.1).
///
/// Says what was wrong (``code``), where (``offset`` in the byte stream), and, for a field, which one (``field``).
/// Every decoding error is fatal to the connection it came from; it never affects another connection.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong, by its SPEC §10.1 name. A struct so that codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The name used in SPEC.md and in `protocol/vectors/`, e.g. `missing_field`.
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let truncatedHeader = Code("truncated_header")
        public static let truncatedPayload = Code("truncated_payload")
        public static let unsupportedFrameVersion = Code("unsupported_frame_version")
        public static let reservedFlags = Code("reserved_flags")
        public static let reservedByte = Code("reserved_byte")
        public static let frameTooLarge = Code("frame_too_large")
        public static let ignorableKnownType = Code("ignorable_known_type")
        public static let unknownFrameType = Code("unknown_frame_type")
        public static let trailingBytes = Code("trailing_bytes")
        public static let truncatedField = Code("truncated_field")
        public static let duplicateField = Code("duplicate_field")
        public static let fieldOutOfOrder = Code("field_out_of_order")
        public static let missingField = Code("missing_field")
        public static let invalidFieldLength = Code("invalid_field_length")
        public static let valueOutOfRange = Code("value_out_of_range")
        public static let stringEmpty = Code("string_empty")
        public static let stringTooLong = Code("string_too_long")
        public static let invalidUTF8 = Code("invalid_utf8")
        public static let duplicateFeature = Code("duplicate_feature")
        public static let featureOutOfOrder = Code("feature_out_of_order")

        /// Every code SPEC §10.1 defines.
        public static let allCases: [Code] = [
            .truncatedHeader, .truncatedPayload, .unsupportedFrameVersion, .reservedFlags, .reservedByte,
            .frameTooLarge, .ignorableKnownType, .unknownFrameType, .trailingBytes, .truncatedField,
            .duplicateField, .fieldOutOfOrder, .missingField, .invalidFieldLength, .valueOutOfRange, .stringEmpty,
            .stringTooLong, .invalidUTF8, .duplicateFeature, .featureOutOfOrder,
        ]

        /// Looks a code up by its SPEC name.
        public init?(name: String) {
            guard let code = Code.allCases.first(where: { $0.name == name }) else { return nil }
            self = code
        }
    }

    /// What was wrong.
    public let code: Code
    /// Offset in the byte stream of the byte the error is about (SPEC §10.1). When encoding: offset in the frame.
    public let offset: Int
    /// The field's tag, when the error concerns a field.
    public let field: UInt8?
    /// The field's name in SPEC.md, when known.
    public let fieldName: String?
    /// The frame type byte of the frame concerned, when the header was read.
    public let frameType: UInt8?
    /// Extra detail for people (a value, a limit); not part of the error's identity in the spec.
    public let detail: String

    public init(
        _ code: Code, offset: Int, field: UInt8? = nil, fieldName: String? = nil, frameType: UInt8? = nil,
        detail: String = ""
    ) {
        self.code = code
        self.offset = offset
        self.field = field
        self.fieldName = fieldName
        self.frameType = frameType
        self.detail = detail
    }

    public var description: String {
        var text = "\(code.name) at offset \(offset)"
        if let frameType {
            let name = FrameType(rawValue: frameType).map { $0.specName } ?? "type 0x" + String(frameType, radix: 16)
            text += " in \(name)"
        }
        if let field { text += ", field \(field)" + (fieldName.map { " (\($0))" } ?? "") }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// Two errors are the same when SPEC §10.1 would say so: same code, offset and field. Names and detail are for
    /// people and do not count.
    public static func == (lhs: WireError, rhs: WireError) -> Bool {
        lhs.code == rhs.code && lhs.offset == rhs.offset && lhs.field == rhs.field
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(offset)
        hasher.combine(field)
    }

    /// The reason code a receiver sends in GOAWAY for this error (SPEC §10.1).
    public var goAwayReason: ReasonCode { code == .frameTooLarge ? .frameTooLarge : .malformedFrame }

    /// The GOAWAY text for this error, exactly as SPEC §10.1 (errata 1.0.1) defines it: the error name, ` offset `
    /// and the decimal stream offset, then ` field ` and the decimal tag for the errors that carry one; ASCII, nothing
    /// else. For example `field_out_of_order offset 27 field 2`. ``detail`` is for local logs only.
    public var goAwayText: String {
        "\(code.name) offset \(offset)" + (field.map { " field \($0)" } ?? "")
    }

    /// The GOAWAY a receiver sends for this error (SPEC §10.1): ``goAwayReason`` and ``goAwayText``.
    public var goAway: GoAway { GoAway(reason: goAwayReason, text: goAwayText) }
}
