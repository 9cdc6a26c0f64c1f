import SupportRegistry

// TEMPORARY until the store's transactional batch API lands: applies intents one call at a time.
struct StoreTransaction {
    let store: SessionStore

    func apply(_ intents: [StoreIntent]) throws(StoreError) {
        for intent in intents {
            switch intent {
            case .insertCode(let record): try store.insert(record)
            case .updateCode(let record): try store.update(record)
            case .deleteCode(let code): try store.delete(code: code)
            case .audit(let event): try store.append(event)
            case .saveBackoff(let row):
                try store.saveBackoff(
                    key: row.key, failures: row.failures, blockedUntil: row.blockedUntil, lastFailure: row.lastFailure)
            case .deleteBackoff(let key): try store.deleteBackoff(key: key)
            }
        }
    }
}

extension SessionStore {
    func write<R>(_ body: (inout StoreTransaction) throws(StoreError) -> R) throws(StoreError) -> R {
        var transaction = StoreTransaction(store: self)
        return try body(&transaction)
    }
}
