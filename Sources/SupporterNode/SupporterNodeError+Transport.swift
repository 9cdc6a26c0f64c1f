import SupporterCore
import SupporterStore
public import SupportRuntime
public import SupporterModel

extension SupporterNodeError {
    /// The TLS transport failed (`.transport`), with the transport's error kept.
    init(transport error: TransportError) {
        self.init(error.description, kind: .transport, underlying: error)
    }

    /// The transport error underneath, for `.transport`.
    public var transportError: TransportError? { underlying as? TransportError }
}
