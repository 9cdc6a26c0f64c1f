// A message's fields, each described once with its tag, SPEC name and limits, and used by both the reader and the
// writer, so that what we send and what we accept can never disagree.

/// A `string` field (SPEC §4.2): UTF-8, 1 to `maxLength` bytes.
struct StringField: Sendable {
    let tag: UInt8
    let name: String
    let maxLength: Int
}

/// An unsigned integer field of fixed width with an allowed range.
struct IntegerField<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    let tag: UInt8
    let name: String
    let range: ClosedRange<Value>

    init(tag: UInt8, name: String, range: ClosedRange<Value> = Value.min...Value.max) {
        self.tag = tag
        self.name = name
        self.range = range
    }
}

/// A `u8` field holding one of an enumeration's values.
struct EnumField<Value: RawRepresentable & Sendable>: Sendable where Value.RawValue == UInt8 {
    let tag: UInt8
    let name: String
}

/// A `reason` field: any byte, kept as a ``ReasonCode``.
struct ReasonField: Sendable {
    let tag: UInt8
    let name: String
}

/// A `bytes` field (SPEC §15.2): opaque octets, 1 to `maxLength` of them.
struct BytesField: Sendable {
    let tag: UInt8
    let name: String
    let maxLength: Int
}

/// A `features` field: ascending 4-byte entries.
struct FeaturesField: Sendable {
    let tag: UInt8
    let name: String
}
