public import SupportVocabulary
/// Encodes messages into frames (SPEC §3–§5), always in the one canonical encoding.
///
/// Checks every value against the limits a receiver enforces, and the payload against the peer's announced maximum,
/// so what it produces is never rejected by a conforming peer.
public struct FrameEncoder: Sendable {
    /// The largest payload the peer accepts: 16 384 until its HELLO / HELLO_ACK says otherwise.
    public var maxPayloadLength: Int

    public init(maxPayloadLength: Int = WireLimits.defaultMaxFrameSize) {
        self.maxPayloadLength = maxPayloadLength
    }

    /// The frame for `message`.
    public func encode(_ message: Message) throws(WireError) -> [UInt8] {
        var bytes: [UInt8] = []
        try encode(message, into: &bytes)
        return bytes
    }

    /// Appends the frame for `message` to `bytes`; on error `bytes` is left as it was.
    public func encode(_ message: Message, into bytes: inout [UInt8]) throws(WireError) {
        let start = bytes.count
        let body = message.body
        let frameType = body.frameType.rawValue
        FrameHeader(type: frameType, payloadLength: 0).write(to: &bytes)
        // Move the buffer into the writer and back: no second reference, so appending never copies it.
        var writer = FieldWriter(bytes: [], frameStart: start, frameType: frameType)
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        do {
            try body.write(to: &writer)
        } catch {
            writer.bytes.removeSubrange(start...)
            throw error
        }
        let length = writer.bytes.count - start - FrameHeader.size
        guard length <= maxPayloadLength else {
            writer.bytes.removeSubrange(start...)
            throw WireError(
                .frameTooLarge, offset: 4, frameType: frameType,
                detail: "payload of \(length) bytes over the peer's maximum \(maxPayloadLength)")
        }
        writer.bytes[start + 4] = UInt8(truncatingIfNeeded: length >> 24)
        writer.bytes[start + 5] = UInt8(truncatingIfNeeded: length >> 16)
        writer.bytes[start + 6] = UInt8(truncatingIfNeeded: length >> 8)
        writer.bytes[start + 7] = UInt8(truncatingIfNeeded: length)
    }
}
