/// A capability a node or device has, with its version (SPEC §4.3).
public struct Feature: Hashable, Sendable, CustomStringConvertible {
    /// A feature's identifier. Unknown identifiers from newer peers are carried and ignored.
    public struct ID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static func < (lhs: ID, rhs: ID) -> Bool { lhs.rawValue < rhs.rawValue }

        public static let screenShare = ID(rawValue: 0x0001)
        public static let assistAR = ID(rawValue: 0x0002)
        public static let voip = ID(rawValue: 0x0003)
        public static let remoteControl = ID(rawValue: 0x0004)
        /// Files move between device and supporter (SPEC §15.4, kind 3).
        public static let fileShare = ID(rawValue: 0x0005)
        /// Chat text (SPEC §15.4, kind 1).
        public static let chat = ID(rawValue: 0x0006)
        /// The supporter may place AR pointers.
        public static let arPointer = ID(rawValue: 0x0007)
        /// Application messages (SPEC §15.4, kind 2).
        public static let appMessages = ID(rawValue: 0x0008)

        /// Every identifier SPEC.md defines, in order.
        public static let defined: [ID] = [
            .screenShare, .assistAR, .voip, .remoteControl, .fileShare, .chat, .arPointer, .appMessages,
        ]

        /// The identifier with this SPEC name (`chat`, `remote_control`, …), or nil.
        public init?(name: String) {
            guard let id = ID.defined.first(where: { $0.name == name }) else { return nil }
            self = id
        }

        /// The SPEC name, or nil for an identifier this version does not define.
        public var name: String? {
            switch rawValue {
            case 0x0001: "screen_share"
            case 0x0002: "assist_ar"
            case 0x0003: "voip"
            case 0x0004: "remote_control"
            case 0x0005: "file_share"
            case 0x0006: "chat"
            case 0x0007: "ar_pointer"
            case 0x0008: "app_messages"
            default: nil
            }
        }

        public var description: String { name ?? "feature(0x" + String(rawValue, radix: 16) + ")" }
    }

    public var id: ID
    /// Version, 1 or more. Every feature SPEC.md defines is at version 1.
    public var version: UInt16

    public init(_ id: ID, version: UInt16 = 1) {
        self.id = id
        self.version = version
    }

    public var description: String { "\(id) v\(version)" }
}

/// A set of features, at most one version per identifier, kept in ascending identifier order as the wire needs it.
public struct FeatureSet: Hashable, Sendable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    private var entries: [Feature]

    /// The empty set.
    public init() { entries = [] }

    /// A set of the given features; where an identifier appears twice, the later one wins.
    public init(_ features: some Sequence<Feature>) {
        entries = []
        for feature in features { insert(feature) }
    }

    public init(arrayLiteral elements: Feature...) { self.init(elements) }

    /// Builds from entries already known to be strictly ascending (the decoder checked it).
    package init(ascending entries: [Feature]) { self.entries = entries }

    /// Adds `feature`, replacing any feature with the same identifier.
    public mutating func insert(_ feature: Feature) {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].id < feature.id { low = middle + 1 } else { high = middle }
        }
        if low < entries.count, entries[low].id == feature.id {
            entries[low] = feature
        } else {
            entries.insert(feature, at: low)
        }
    }

    /// The version of `id` in this set, or nil when absent.
    public func version(of id: Feature.ID) -> UInt16? { entries.first { $0.id == id }?.version }

    /// Whether the set has `id`, at any version.
    public func contains(_ id: Feature.ID) -> Bool { version(of: id) != nil }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public func makeIterator() -> IndexingIterator<[Feature]> { entries.makeIterator() }

    public var description: String { "[" + entries.map(\.description).joined(separator: ", ") + "]" }
}
