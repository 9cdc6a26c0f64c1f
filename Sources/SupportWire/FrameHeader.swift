/// The fixed 8-byte frame header (SPEC §3.1): version, type, flags, reserved byte, big-endian `u32` payload length.
public struct FrameHeader: Sendable, Hashable {
    /// Header size in bytes.
    public static let size = 8
    /// The only framing version this module speaks.
    public static let version: UInt8 = 1
    /// Flag bit 0: a receiver that does not know the frame type discards the frame instead of failing.
    public static let ignorableFlag: UInt8 = 0x01

    public var type: UInt8
    public var flags: UInt8
    public var payloadLength: UInt32

    public init(type: UInt8, flags: UInt8 = 0, payloadLength: UInt32) {
        self.type = type
        self.flags = flags
        self.payloadLength = payloadLength
    }

    /// Whether the IGNORABLE flag is set.
    public var isIgnorable: Bool { flags & FrameHeader.ignorableFlag != 0 }

    /// Parses and validates the 8 header bytes starting at `start` in the order SPEC §3.3 gives.
    ///
    /// - Parameters:
    ///   - bytes: holds at least 8 bytes from `start`.
    ///   - streamOffset: the stream offset of `bytes[start]`, for error offsets.
    ///   - maxPayloadLength: the receiver's own announced maximum.
    /// - Returns: the header and, when the type is defined, its ``FrameType`` (nil: undefined and ignorable).
    static func parse(
        _ bytes: ArraySlice<UInt8>, at start: Int, streamOffset: Int, maxPayloadLength: Int
    ) throws(WireError) -> (header: FrameHeader, type: FrameType?) {
        let typeByte = bytes[start + 1]
        let flags = bytes[start + 2]
        guard bytes[start] == FrameHeader.version else {
            throw WireError(
                .unsupportedFrameVersion, offset: streamOffset, detail: "version \(bytes[start]), expected 1")
        }
        guard flags & ~FrameHeader.ignorableFlag == 0 else {
            throw WireError(.reservedFlags, offset: streamOffset + 2, frameType: typeByte, detail: "flags \(flags)")
        }
        guard bytes[start + 3] == 0 else {
            throw WireError(.reservedByte, offset: streamOffset + 3, frameType: typeByte)
        }
        var length: UInt32 = 0
        for index in start + 4..<start + 8 { length = length << 8 | UInt32(bytes[index]) }
        guard UInt64(length) <= UInt64(max(0, maxPayloadLength)) else {
            throw WireError(
                .frameTooLarge, offset: streamOffset + 4, frameType: typeByte,
                detail: "payload length \(length) over the maximum \(maxPayloadLength)")
        }
        let header = FrameHeader(type: typeByte, flags: flags, payloadLength: length)
        if let known = FrameType(rawValue: typeByte) {
            guard !header.isIgnorable else {
                throw WireError(.ignorableKnownType, offset: streamOffset + 1, frameType: typeByte)
            }
            return (header, known)
        }
        guard header.isIgnorable else {
            throw WireError(.unknownFrameType, offset: streamOffset + 1, frameType: typeByte)
        }
        return (header, nil)
    }

    /// Appends the 8 header bytes.
    func write(to bytes: inout [UInt8]) {
        bytes.append(FrameHeader.version)
        bytes.append(type)
        bytes.append(flags)
        bytes.append(0)
        bytes.append(UInt8(truncatingIfNeeded: payloadLength >> 24))
        bytes.append(UInt8(truncatingIfNeeded: payloadLength >> 16))
        bytes.append(UInt8(truncatingIfNeeded: payloadLength >> 8))
        bytes.append(UInt8(truncatingIfNeeded: payloadLength))
    }
}
