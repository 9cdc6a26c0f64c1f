import SupportUtilities

/// What a change does to one optional member: JSON distinguishes an absent member (keep the value) from `null`
/// (clear it).
public enum FieldChange<Value: Sendable & Hashable>: Sendable, Hashable {
    /// Absent: the value stays.
    case keep
    /// `null`: the value is removed.
    case clear
    /// A new value.
    case set(Value)

    /// Whether this changes anything.
    public var isChange: Bool { self != .keep }

    /// `current` after this change.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .keep: current
        case .clear: nil
        case .set(let value): value
        }
    }

    /// The value a creation gives (absent and null both give none).
    public var value: Value? {
        if case .set(let value) = self { return value }
        return nil
    }
}

extension KeyedEncodingContainer {
    /// Writes `change` as JSON: nothing for ``FieldChange/keep``, `null` for ``FieldChange/clear``.
    mutating func encode<Value: Encodable>(_ change: FieldChange<Value>, forKey key: Key) throws {
        switch change {
        case .keep: break
        case .clear: try encodeNil(forKey: key)
        case .set(let value): try encode(value, forKey: key)
        }
    }
}
