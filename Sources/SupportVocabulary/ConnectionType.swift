/// What a supporter asks the device for (CONNECTION_REQUEST `connection_type`).
public enum ConnectionType: UInt8, Sendable, CaseIterable {
    case screenShare = 1
    case assistAR = 2

    /// The feature a device needs to serve this connection type.
    public var requiredFeature: Feature.ID {
        switch self {
        case .screenShare: .screenShare
        case .assistAR: .assistAR
        }
    }
}
