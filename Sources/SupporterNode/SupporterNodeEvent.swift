import SupportSession

/// Something that happened on one session code, as the supporter node reports it.
public struct SupporterNodeEvent: Sendable, Hashable {
    public var code: String
    public var event: SupporterSessionEvent
    /// The device's name (HELLO) when known.
    public var deviceName: String?
}

/// A supporter-side command that cannot be carried out now.
public struct SupporterNodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
