public import SupporterCore
public import SupporterStore

extension APITokenStore {
    /// Every active token of `store`, with its record.
    public init(loadingFrom store: SessionStore) throws(StoreError) {
        self.init()
        for (digest, record) in try store.activeTokens() { add(digest: digest, record: record) }
    }
}
