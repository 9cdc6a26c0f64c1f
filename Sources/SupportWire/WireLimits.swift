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
    /// The protocol version this module implements.
    public static let protocolVersion: UInt8 = 1
}
