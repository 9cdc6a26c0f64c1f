/// Sizes and ranges fixed by SPEC.md.
public enum WireLimits {
    /// Every node accepts payloads of this size; the maximum before HELLO has been exchanged (SPEC §3.2).
    public static let defaultMaxFrameSize = 16_384
    /// The largest payload maximum a node may announce: 1 MiB.
    public static let largestMaxFrameSize = 1_048_576
    /// Allowed announced maxima.
    public static let maxFrameSizeRange: ClosedRange<UInt32> = 16_384...1_048_576
    /// Allowed keepalive intervals, milliseconds.
    public static let keepaliveRange: ClosedRange<UInt32> = 100...600_000
    /// Longest node name, supporter name: bytes of UTF-8.
    public static let nameLength = 64
    /// Longest session code, bytes.
    public static let sessionCodeLength = 64
    /// Longest API token, bytes.
    public static let apiTokenLength = 256
    /// Longest reason text, bytes.
    public static let textLength = 256
    /// Allowed resume grace periods, milliseconds (HELLO_ACK `resume_grace_ms`, SPEC §15.2).
    public static let resumeGraceRange: ClosedRange<UInt32> = 1_000...600_000
    /// Longest resume secret on the wire, bytes (a sender sends 32–64, SPEC §15.2).
    public static let resumeSecretLength = 64
    /// Longest media descriptor, bytes (SESSION_STARTED, SPEC §15.2).
    public static let mediaDescriptorLength = 4_096
    /// Longest SESSION_MESSAGE content type, bytes.
    public static let contentTypeLength = 128
    /// Longest file name, bytes.
    public static let fileNameLength = 255
    /// Longest chat text, bytes (a session rule, SPEC §15.4, not a decoding limit).
    public static let chatTextLength = 4_096
    /// Largest file a transfer may announce, bytes: 16 MiB (SPEC §15.4).
    public static let largestFileSize: UInt64 = 16_777_216
    /// Messages a sender may have sent and not yet seen acknowledged (SPEC §15.4).
    public static let messageWindow = 16
    /// The protocol version this module implements.
    public static let protocolVersion: UInt8 = 1
}
