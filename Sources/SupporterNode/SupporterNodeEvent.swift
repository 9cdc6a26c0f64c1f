public import SupportSession
public import SupportRuntime
import SupporterCore
import SupportWire
import SupportUtilities

/// Something that happened on one session code, as the supporter node reports it.
public struct SupporterNodeEvent: Sendable, Hashable {
    public var code: String
    public var event: SupporterSessionEvent
    /// The device's name (HELLO) when known.
    public var deviceName: String?
}

/// A supporter-side command or setup step that cannot be carried out, in words a person can act on.
public struct SupporterNodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        public static let refused = Kind(name: "refused")
        public static let notFound = Kind(name: "not_found")
        public static let conflict = Kind(name: "conflict")
        public static let invalid = Kind(name: "invalid")
        public static let transport = Kind(name: "transport")
        public static let store = Kind(name: "store")
        /// The acting account may not do this (another supporter's code, an admin's task).
        public static let forbidden = Kind(name: "forbidden")
        /// Too much work waiting; try again shortly.
        public static let busy = Kind(name: "busy")
    }

    public let kind: Kind
    public let description: String
    /// The transport error underneath, for `.transport`.
    public let transportError: TransportError?
    /// The store error's kind underneath, for `.store`.
    let storeErrorKind: StoreError.Kind?

    public init(_ description: String, kind: Kind = .refused) {
        self.kind = kind
        self.description = description
        self.transportError = nil
        self.storeErrorKind = nil
    }

    init(transport error: TransportError) {
        kind = .transport
        description = error.description
        transportError = error
        storeErrorKind = nil
    }

    init(registry error: RegistryError) {
        switch error.kind {
        case .notFound: kind = .notFound
        case .conflict: kind = .conflict
        default: kind = .invalid
        }
        description = error.message
        transportError = nil
        storeErrorKind = nil
    }

    init(store error: StoreError) {
        kind = .store
        description = "the node's store: \(error)"
        transportError = nil
        storeErrorKind = error.kind
    }

    /// The store refused a new code because one with that text exists (another node drew it at the same time).
    var isDuplicateCode: Bool { storeErrorKind == .duplicate }
}
