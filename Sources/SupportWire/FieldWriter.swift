import SupportVocabulary
/// Appends fields to a frame under construction, checking each value against the same limits the reader enforces,
/// so an encoder never emits a frame a conforming receiver would reject.
struct FieldWriter {
    var bytes: [UInt8]
    /// Index in `bytes` of the frame's first header byte, for error offsets.
    let frameStart: Int
    let frameType: UInt8

    private func error(_ code: WireError.Code, tag: UInt8, name: String, detail: String = "") -> WireError {
        WireError(
            code, offset: bytes.count - frameStart, field: tag, fieldName: name, frameType: frameType, detail: detail)
    }

    private mutating func header(_ tag: UInt8, length: Int) {
        bytes.append(tag)
        bytes.append(UInt8(truncatingIfNeeded: length >> 8))
        bytes.append(UInt8(truncatingIfNeeded: length))
    }

    private mutating func appendInteger<Value: FixedWidthInteger>(_ value: Value) {
        var shift = Value.bitWidth - 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    mutating func write(_ field: StringField, _ value: String?) throws(WireError) {
        guard let value else { return }
        let length = value.utf8.count
        guard length > 0 else { throw error(.stringEmpty, tag: field.tag, name: field.name) }
        guard length <= field.maxLength else {
            throw error(
                .stringTooLong, tag: field.tag, name: field.name,
                detail: "\(length) bytes, at most \(field.maxLength)")
        }
        header(field.tag, length: length)
        bytes.append(contentsOf: value.utf8)
    }

    mutating func write<Value>(_ field: IntegerField<Value>, _ value: Value?) throws(WireError) {
        guard let value else { return }
        guard field.range.contains(value) else {
            throw error(
                .valueOutOfRange, tag: field.tag, name: field.name,
                detail: "\(value) outside \(field.range.lowerBound)...\(field.range.upperBound)")
        }
        header(field.tag, length: MemoryLayout<Value>.size)
        appendInteger(value)
    }

    mutating func write<Value>(_ field: EnumField<Value>, _ value: Value?) {
        guard let value else { return }
        header(field.tag, length: 1)
        bytes.append(value.rawValue)
    }

    mutating func write(_ field: ReasonField, _ value: ReasonCode?) {
        guard let value else { return }
        header(field.tag, length: 1)
        bytes.append(value.rawValue)
    }

    mutating func write(_ field: BytesField, _ value: [UInt8]?) throws(WireError) {
        guard let value else { return }
        guard !value.isEmpty else { throw error(.stringEmpty, tag: field.tag, name: field.name) }
        guard value.count <= field.maxLength else {
            throw error(
                .stringTooLong, tag: field.tag, name: field.name,
                detail: "\(value.count) bytes, at most \(field.maxLength)")
        }
        header(field.tag, length: value.count)
        bytes.append(contentsOf: value)
    }

    mutating func write(_ field: FeaturesField, _ value: FeatureSet?) throws(WireError) {
        guard let value else { return }
        try write(field, value)
    }

    mutating func write(_ field: FeaturesField, _ value: FeatureSet) throws(WireError) {
        let length = value.count * 4
        guard length <= Int(UInt16.max) else {
            throw error(.invalidFieldLength, tag: field.tag, name: field.name, detail: "\(value.count) features")
        }
        for feature in value where feature.version == 0 {
            throw error(.valueOutOfRange, tag: field.tag, name: field.name, detail: "\(feature.id) version 0")
        }
        header(field.tag, length: length)
        for feature in value {
            appendInteger(feature.id.rawValue)
            appendInteger(feature.version)
        }
    }
}
