public import SupportVocabulary
// The one-byte enumerations of SPEC §5. Values outside them are `value_out_of_range` when decoding.

/// Which side of the protocol a node is (HELLO `role`).
public enum NodeRole: UInt8, Sendable, CaseIterable {
    case device = 1
    case supporter = 2
}

/// The device user's answer (CONNECTION_RESPONSE `decision`).
public enum ConnectionDecision: UInt8, Sendable, CaseIterable {
    case allow = 1
    case reject = 2
}

/// The device's VoIP state as the supporter learns it (VOIP_STATE `state`).
public enum VoIPCallState: UInt8, Sendable, CaseIterable {
    /// VoIP is set up.
    case started = 1
    /// Not set up: another call is running that is not the app's own.
    case notStartedOtherCallActive = 2
    /// VoIP ended (the app cleared its call hand-over, or the call ended).
    case ended = 3
    /// Not set up: the device or the supporter lacks the `voip` feature.
    case notStartedUnsupported = 4
}

/// The device's answer to a FEATURE_REQUEST (FEATURE_ANSWER `decision`, SPEC §15.3).
public enum FeatureDecision: UInt8, Sendable, CaseIterable {
    case grant = 1
    case refuse = 2
}

/// What a SESSION_MESSAGE carries (`kind`, SPEC §15.4), and so which feature it needs granted.
public enum MessageKind: UInt8, Sendable, CaseIterable {
    /// Chat text: well-formed UTF-8, at most 4 096 bytes; needs `chat`.
    case chat = 1
    /// Opaque application bytes with a content type; needs `app_messages`.
    case application = 2
    /// One part of a file; needs `file_share`.
    case filePart = 3

    /// The feature that must be granted for this kind.
    public var requiredFeature: Feature.ID {
        switch self {
        case .chat: .chat
        case .application: .appMessages
        case .filePart: .fileShare
        }
    }
}

/// The device's session state as a RESUME reports it (SPEC §15.5).
public enum ResumeState: UInt8, Sendable, CaseIterable {
    case online = 1
    case requestPending = 2
    case awaitingStart = 3
    case active = 4
}
