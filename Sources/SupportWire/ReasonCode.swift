/// One byte saying why something ended or failed (SPEC §6). Below `0x80`: outcomes; from `0x80`: errors.
///
/// Unknown codes are kept as they are, so a newer peer's codes survive a round trip.
public struct ReasonCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Whether this code is an error (`0x80` and above).
    public var isError: Bool { rawValue >= 0x80 }

    public static let success = ReasonCode(rawValue: 0x00)
    public static let normalClose = ReasonCode(rawValue: 0x01)
    public static let endedBySupporter = ReasonCode(rawValue: 0x02)
    public static let endedByDevice = ReasonCode(rawValue: 0x03)
    public static let rejectedByUser = ReasonCode(rawValue: 0x04)
    public static let abortedBySupporter = ReasonCode(rawValue: 0x05)
    public static let requestTimedOut = ReasonCode(rawValue: 0x06)
    public static let goingAway = ReasonCode(rawValue: 0x07)
    /// An access rule refused a feature or a message (SPEC §15.3).
    public static let featureDenied = ReasonCode(rawValue: 0x08)
    /// The registration was resumed on another connection (SPEC §15.5).
    public static let sessionMoved = ReasonCode(rawValue: 0x09)
    public static let unspecifiedError = ReasonCode(rawValue: 0x80)
    public static let malformedFrame = ReasonCode(rawValue: 0x81)
    public static let protocolError = ReasonCode(rawValue: 0x82)
    public static let unsupportedVersion = ReasonCode(rawValue: 0x83)
    public static let frameTooLarge = ReasonCode(rawValue: 0x84)
    public static let roleMismatch = ReasonCode(rawValue: 0x85)
    public static let keepaliveTimeout = ReasonCode(rawValue: 0x86)
    public static let internalError = ReasonCode(rawValue: 0x87)
    public static let invalidSessionCode = ReasonCode(rawValue: 0x88)
    public static let invalidAPIToken = ReasonCode(rawValue: 0x89)
    public static let sessionCodeExpired = ReasonCode(rawValue: 0x8A)
    public static let sessionCodeClosed = ReasonCode(rawValue: 0x8B)
    public static let sessionCodeInUse = ReasonCode(rawValue: 0x8C)
    public static let rateLimited = ReasonCode(rawValue: 0x8D)
    public static let unsupportedFeature = ReasonCode(rawValue: 0x8E)
    public static let featureVersionMismatch = ReasonCode(rawValue: 0x8F)
    /// Local only, never sent: the link died (EOF, unclean shutdown, keepalive).
    public static let connectionLost = ReasonCode(rawValue: 0x90)
    /// No resumable session for that code and secret (SPEC §15.5).
    public static let resumeRejected = ReasonCode(rawValue: 0x91)
    /// A message broke a rule of SPEC §15.4.
    public static let messageRefused = ReasonCode(rawValue: 0x92)

    private static let names: [UInt8: String] = [
        0x00: "success", 0x01: "normal_close", 0x02: "ended_by_supporter", 0x03: "ended_by_device",
        0x04: "rejected_by_user", 0x05: "aborted_by_supporter", 0x06: "request_timed_out", 0x07: "going_away",
        0x08: "feature_denied", 0x09: "session_moved",
        0x80: "unspecified_error", 0x81: "malformed_frame", 0x82: "protocol_error", 0x83: "unsupported_version",
        0x84: "frame_too_large", 0x85: "role_mismatch", 0x86: "keepalive_timeout", 0x87: "internal_error",
        0x88: "invalid_session_code", 0x89: "invalid_api_token", 0x8A: "session_code_expired",
        0x8B: "session_code_closed", 0x8C: "session_code_in_use", 0x8D: "rate_limited",
        0x8E: "unsupported_feature", 0x8F: "feature_version_mismatch", 0x90: "connection_lost",
        0x91: "resume_rejected", 0x92: "message_refused",
    ]

    /// The SPEC §6 name, or nil for a code this version does not define.
    public var name: String? { ReasonCode.names[rawValue] }

    /// Whether SPEC §6 defines this code.
    public var isKnown: Bool { name != nil }

    public var description: String {
        name ?? (isError ? "unspecified_error" : "unspecified") + "(0x" + String(rawValue, radix: 16) + ")"
    }
}
