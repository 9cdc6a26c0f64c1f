public import SupporterModel

extension SupporterNodeError {
    /// The registry refused a change.
    public init(registry error: RegistryError) {
        let kind: Kind
        switch error.kind {
        case .notFound: kind = .notFound
        case .conflict: kind = .conflict
        default: kind = .invalid
        }
        self.init(error.message, kind: kind, underlying: error)
    }
}
