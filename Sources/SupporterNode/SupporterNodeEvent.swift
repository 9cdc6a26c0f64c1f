public import SupportSession
import SupporterCore
import SupporterStore
import SupportWire
import SupportUtilities

/// Something that happened on one session code, as the supporter node reports it.
public struct SupporterNodeEvent: Sendable, Hashable {
    public var code: String
    public var event: SupporterSessionEvent
    /// The device's name (HELLO) when known.
    public var deviceName: String?
}
