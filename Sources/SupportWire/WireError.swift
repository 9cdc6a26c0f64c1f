/// A decoding or encoding failure of the RemoteSupport wire protocol (SPEC §10.1).
///
/// Says what was wrong (``code``), where (``offset`` in the byte stream), and, for a field, which one (``field``).
/// Every decoding error is fatal to the connection it came from; it never affects another connection.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong, by its SPEC §10.1 name: the error's kind. A struct over a private enum (the `StoreError`
    /// pattern), so that codes can be added without breaking callers.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The SPEC §10.1 names, in the spec's order.
        private enum Base: String, Hashable, Sendable, CaseIterable {
            case truncatedHeader = "truncated_header", truncatedPayload = "truncated_payload"
            case unsupportedFrameVersion = "unsupported_frame_version", reservedFlags = "reserved_flags"
            case reservedByte = "reserved_byte", frameTooLarge = "frame_too_large"
            case ignorableKnownType = "ignorable_known_type", unknownFrameType = "unknown_frame_type"
            case trailingBytes = "trailing_bytes", truncatedField = "truncated_field"
            case duplicateField = "duplicate_field", fieldOutOfOrder = "field_out_of_order"
            case missingField = "missing_field", invalidFieldLength = "invalid_field_length"
            case valueOutOfRange = "value_out_of_range", stringEmpty = "string_empty"
            case stringTooLong = "string_too_long", invalidUTF8 = "invalid_utf8"
            case duplicateFeature = "duplicate_feature", featureOutOfOrder = "feature_out_of_order"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The name used in SPEC.md and in `protocol/vectors/`, e.g. `missing_field`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }

        public static let truncatedHeader = Kind(.truncatedHeader)
        public static let truncatedPayload = Kind(.truncatedPayload)
        public static let unsupportedFrameVersion = Kind(.unsupportedFrameVersion)
        public static let reservedFlags = Kind(.reservedFlags)
        public static let reservedByte = Kind(.reservedByte)
        public static let frameTooLarge = Kind(.frameTooLarge)
        public static let ignorableKnownType = Kind(.ignorableKnownType)
        public static let unknownFrameType = Kind(.unknownFrameType)
        public static let trailingBytes = Kind(.trailingBytes)
        public static let truncatedField = Kind(.truncatedField)
        public static let duplicateField = Kind(.duplicateField)
        public static let fieldOutOfOrder = Kind(.fieldOutOfOrder)
        public static let missingField = Kind(.missingField)
        public static let invalidFieldLength = Kind(.invalidFieldLength)
        public static let valueOutOfRange = Kind(.valueOutOfRange)
        public static let stringEmpty = Kind(.stringEmpty)
        public static let stringTooLong = Kind(.stringTooLong)
        public static let invalidUTF8 = Kind(.invalidUTF8)
        public static let duplicateFeature = Kind(.duplicateFeature)
        public static let featureOutOfOrder = Kind(.featureOutOfOrder)

        /// Every code SPEC §10.1 defines, in its order.
        public static let allCases: [Kind] = Base.allCases.map { Kind($0) }

        /// Looks a code up by its SPEC name.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.init(base)
        }
    }

    /// SPEC §10.1 calls the kinds of wire error *codes*; the name callers and the vectors use.
    public typealias Code = Kind

    /// What was wrong (SPEC §10.1 calls it the error's code).
    public let kind: Kind
    /// ``kind`` by the name SPEC §10.1 gives it.
    public var code: Code { kind }
    /// Offset in the byte stream of the byte the error is about (SPEC §10.1). When encoding: offset in the frame.
    public let offset: Int
    /// The field's tag, when the error concerns a field.
    public let field: UInt8?
    /// The field's name in SPEC.md, when known.
    public let fieldName: String?
    /// The frame type byte of the frame concerned, when the header was read.
    public let frameType: UInt8?
    /// Extra detail for people (a value, a limit); not part of the error's identity in the spec. Empty when the
    /// code and offset say it all.
    public let message: String
    /// ``message`` by its older name.
    public var detail: String { message }
    /// The error underneath, when there is one. Not part of equality.
    public let underlying: (any Error & Sendable)?

    public init(
        _ code: Code, offset: Int, field: UInt8? = nil, fieldName: String? = nil, frameType: UInt8? = nil,
        detail: String = "", underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = code
        self.offset = offset
        self.field = field
        self.fieldName = fieldName
        self.frameType = frameType
        self.message = detail
        self.underlying = underlying
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

    /// Two errors are the same when SPEC §10.1 would say so: same code, offset and field. Names, the message and the
    /// underlying error are for people and do not count.
    public static func == (lhs: WireError, rhs: WireError) -> Bool {
        lhs.kind == rhs.kind && lhs.offset == rhs.offset && lhs.field == rhs.field
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
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
