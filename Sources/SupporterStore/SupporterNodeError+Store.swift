import SupporterCore
public import SupporterModel

extension SupporterNodeError {
    /// The store failed (`.store`), with its error kept.
    public init(store error: StoreError) {
        self.init(
            "the node's store: \(error)", kind: .store, underlying: error, isDuplicateCode: error.kind == .duplicate)
    }

    /// The store error underneath, for `.store`.
    public var storeError: StoreError? { underlying as? StoreError }
}
