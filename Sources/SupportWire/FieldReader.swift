import SupportVocabulary
/// Reads the fields of one payload (SPEC §4.1) without allocating.
///
/// `init` checks the layout of all fields first (ordering, duplicates, truncation, trailing bytes). Then the message
/// calls ``requireFields(_:)`` once with its required tags, and reads its fields in ascending tag order; a forward
/// cursor makes the whole read linear.
struct FieldReader {
    private let payload: ArraySlice<UInt8>
    /// Stream offset of `payload.startIndex`.
    private let streamOffset: Int
    /// Stream offset of the frame's first header byte, for `missing_field`.
    private let frameOffset: Int
    private let frameType: UInt8
    /// Where the next lookup starts: fields before it have lower tags than any asked for next.
    private var cursor: Int

    init(payload: ArraySlice<UInt8>, streamOffset: Int, frameOffset: Int, frameType: UInt8) throws(WireError) {
        self.payload = payload
        self.streamOffset = streamOffset
        self.frameOffset = frameOffset
        self.frameType = frameType
        self.cursor = payload.startIndex
        var index = payload.startIndex
        var previousTag: Int = -1
        while index < payload.endIndex {
            let remaining = payload.endIndex - index
            guard remaining >= 3 else {
                throw WireError(
                    .trailingBytes, offset: offset(of: index), frameType: frameType,
                    detail: "\(remaining) byte(s) after the last field")
            }
            let tag = payload[index]
            if Int(tag) == previousTag {
                throw WireError(.duplicateField, offset: offset(of: index), field: tag, frameType: frameType)
            }
            if Int(tag) < previousTag {
                throw WireError(
                    .fieldOutOfOrder, offset: offset(of: index), field: tag, frameType: frameType,
                    detail: "tag \(tag) after tag \(previousTag)")
            }
            let length = Int(payload[index + 1]) << 8 | Int(payload[index + 2])
            guard length <= remaining - 3 else {
                throw WireError(
                    .truncatedField, offset: offset(of: index), field: tag, frameType: frameType,
                    detail: "value of \(length) bytes, \(remaining - 3) left in the payload")
            }
            previousTag = Int(tag)
            index += 3 + length
        }
    }

    private func offset(of index: Int) -> Int { streamOffset + (index - payload.startIndex) }

    /// Finds `tag` at or after the cursor; returns the index of its tag byte and its value.
    private mutating func find(_ tag: UInt8) -> (tagIndex: Int, value: ArraySlice<UInt8>)? {
        var index = cursor
        while index < payload.endIndex {
            let found = payload[index]
            let length = Int(payload[index + 1]) << 8 | Int(payload[index + 2])
            if found > tag { break }
            let valueStart = index + 3
            if found == tag {
                cursor = valueStart + length
                return (index, payload[valueStart..<valueStart + length])
            }
            index = valueStart + length
        }
        cursor = index
        return nil
    }

    /// Throws `missing_field` for the lowest of `tags` (ascending) that is absent.
    func requireFields(_ tags: [UInt8]) throws(WireError) {
        var index = payload.startIndex
        var tagIterator = tags.makeIterator()
        var wanted = tagIterator.next()
        while let tag = wanted {
            if index >= payload.endIndex || payload[index] > tag {
                throw WireError(.missingField, offset: frameOffset, field: tag, frameType: frameType)
            }
            if payload[index] == tag { wanted = tagIterator.next() }
            index += 3 + (Int(payload[index + 1]) << 8 | Int(payload[index + 2]))
        }
    }

    private func error(
        _ code: WireError.Code, at index: Int, tag: UInt8, name: String, detail: String = ""
    ) -> WireError {
        WireError(code, offset: offset(of: index), field: tag, fieldName: name, frameType: frameType, detail: detail)
    }

    private func integer<Value: FixedWidthInteger & UnsignedInteger>(
        _ value: ArraySlice<UInt8>, at tagIndex: Int, tag: UInt8, name: String, as: Value.Type
    ) throws(WireError) -> Value {
        guard value.count == MemoryLayout<Value>.size else {
            throw error(
                .invalidFieldLength, at: tagIndex, tag: tag, name: name,
                detail: "\(value.count) bytes, expected \(MemoryLayout<Value>.size)")
        }
        var result: Value = 0
        for byte in value { result = result << 8 | Value(byte) }
        return result
    }

    // MARK: typed reads; `optional` returns nil when absent, the plain form expects `requireFields` to have run.

    mutating func optional(_ field: StringField) throws(WireError) -> String? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        guard !value.isEmpty else { throw error(.stringEmpty, at: tagIndex, tag: field.tag, name: field.name) }
        guard value.count <= field.maxLength else {
            throw error(
                .stringTooLong, at: tagIndex, tag: field.tag, name: field.name,
                detail: "\(value.count) bytes, at most \(field.maxLength)")
        }
        guard let string = String(validating: value, as: UTF8.self) else {
            throw error(.invalidUTF8, at: tagIndex, tag: field.tag, name: field.name)
        }
        return string
    }

    mutating func optional<Value>(_ field: IntegerField<Value>) throws(WireError) -> Value? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        let number = try integer(value, at: tagIndex, tag: field.tag, name: field.name, as: Value.self)
        guard field.range.contains(number) else {
            throw error(
                .valueOutOfRange, at: tagIndex, tag: field.tag, name: field.name,
                detail: "\(number) outside \(field.range.lowerBound)...\(field.range.upperBound)")
        }
        return number
    }

    mutating func optional<Value>(_ field: EnumField<Value>) throws(WireError) -> Value? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        let raw = try integer(value, at: tagIndex, tag: field.tag, name: field.name, as: UInt8.self)
        guard let result = Value(rawValue: raw) else {
            throw error(.valueOutOfRange, at: tagIndex, tag: field.tag, name: field.name, detail: "value \(raw)")
        }
        return result
    }

    mutating func optional(_ field: BytesField) throws(WireError) -> [UInt8]? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        // SPEC §15.2 reuses the string errors' names for bytes.
        guard !value.isEmpty else { throw error(.stringEmpty, at: tagIndex, tag: field.tag, name: field.name) }
        guard value.count <= field.maxLength else {
            throw error(
                .stringTooLong, at: tagIndex, tag: field.tag, name: field.name,
                detail: "\(value.count) bytes, at most \(field.maxLength)")
        }
        return Array(value)
    }

    mutating func optional(_ field: ReasonField) throws(WireError) -> ReasonCode? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        return ReasonCode(rawValue: try integer(value, at: tagIndex, tag: field.tag, name: field.name, as: UInt8.self))
    }

    mutating func optional(_ field: FeaturesField) throws(WireError) -> FeatureSet? {
        guard let (tagIndex, value) = find(field.tag) else { return nil }
        guard value.count % 4 == 0 else {
            throw error(
                .invalidFieldLength, at: tagIndex, tag: field.tag, name: field.name,
                detail: "\(value.count) bytes is not a whole number of 4-byte entries")
        }
        var entries: [Feature] = []
        entries.reserveCapacity(value.count / 4)
        var index = value.startIndex
        while index < value.endIndex {
            let id = UInt16(value[index]) << 8 | UInt16(value[index + 1])
            let version = UInt16(value[index + 2]) << 8 | UInt16(value[index + 3])
            if let previous = entries.last {
                if previous.id.rawValue == id {
                    throw error(.duplicateFeature, at: index, tag: field.tag, name: field.name, detail: "id \(id)")
                }
                if previous.id.rawValue > id {
                    throw error(.featureOutOfOrder, at: index, tag: field.tag, name: field.name, detail: "id \(id)")
                }
            }
            guard version != 0 else {
                throw error(.valueOutOfRange, at: index, tag: field.tag, name: field.name, detail: "version 0")
            }
            entries.append(Feature(Feature.ID(rawValue: id), version: version))
            index += 4
        }
        return FeatureSet(ascending: entries)
    }

    // Required fields: present by `requireFields`, so a nil here cannot happen for a checked tag.
    mutating func required(_ field: StringField) throws(WireError) -> String {
        try present(optional(field), field.tag, field.name)
    }
    mutating func required<Value>(_ field: IntegerField<Value>) throws(WireError) -> Value {
        try present(optional(field), field.tag, field.name)
    }
    mutating func required<Value>(_ field: EnumField<Value>) throws(WireError) -> Value {
        try present(optional(field), field.tag, field.name)
    }
    mutating func required(_ field: BytesField) throws(WireError) -> [UInt8] {
        try present(optional(field), field.tag, field.name)
    }
    mutating func required(_ field: ReasonField) throws(WireError) -> ReasonCode {
        try present(optional(field), field.tag, field.name)
    }
    mutating func required(_ field: FeaturesField) throws(WireError) -> FeatureSet {
        try present(optional(field), field.tag, field.name)
    }

    private func present<Value>(_ value: Value?, _ tag: UInt8, _ name: String) throws(WireError) -> Value {
        guard let value else {
            throw WireError(.missingField, offset: frameOffset, field: tag, fieldName: name, frameType: frameType)
        }
        return value
    }
}
