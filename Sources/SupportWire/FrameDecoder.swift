public import SupportVocabulary
/// Turns a byte stream, in any chunking, into messages (SPEC §3–§5). Pure: no I/O, no clock.
///
/// Feed bytes with ``append(_:)`` and take messages with ``nextMessage()`` until it returns nil. Header errors are
/// found as soon as the 8 header bytes are in, before the payload arrives. After an error the decoder stays failed
/// and rethrows that error: a receiver reads nothing after a malformed frame (SPEC §10.1).
///
/// Memory is bounded: besides the bytes of the last ``append(_:)``, it holds at most one partial frame, that is,
/// 8 + ``maxPayloadLength`` bytes.
public struct FrameDecoder: Sendable {
    /// The largest payload this receiver accepts: its own announced maximum (SPEC §3.2).
    public var maxPayloadLength: Int
    /// Frames of undefined types with the IGNORABLE flag, discarded so far.
    public private(set) var discardedFrameCount = 0

    private var buffer: [UInt8] = []
    /// Index in `buffer` of the first byte not yet consumed.
    private var readIndex = 0
    /// Stream offset of `buffer[0]`.
    private var bufferStreamOffset = 0
    private var failure: WireError?

    public init(maxPayloadLength: Int = WireLimits.defaultMaxFrameSize) {
        self.maxPayloadLength = maxPayloadLength
    }

    /// Bytes received and not yet consumed as whole frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Total bytes consumed as whole frames since the stream began.
    public var consumedByteCount: Int { bufferStreamOffset + readIndex }

    /// Adds received bytes. After a decoding error they are dropped: nothing after a malformed frame is read.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes from raw memory (what a socket read fills).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Drops consumed bytes so the buffer holds only the partial frame. An emptied buffer is released, so an idle
    /// connection holds no decoder memory at all.
    private mutating func compact() {
        guard readIndex > 0 else { return }
        bufferStreamOffset += readIndex
        if readIndex == buffer.count {
            buffer = []
        } else {
            buffer.removeSubrange(0..<readIndex)
        }
        readIndex = 0
    }

    /// The next complete message, or nil when more bytes are needed.
    public mutating func nextMessage() throws(WireError) -> Message? {
        if let failure { throw failure }
        do {
            while true {
                let available = buffer.count - readIndex
                guard available >= FrameHeader.size else { return nil }
                let frameOffset = bufferStreamOffset + readIndex
                let (header, type) = try FrameHeader.parse(
                    buffer[...], at: readIndex, streamOffset: frameOffset, maxPayloadLength: maxPayloadLength)
                let length = Int(header.payloadLength)
                guard available - FrameHeader.size >= length else {
                    // Grow once to the whole frame rather than once per network read.
                    let needed = readIndex + FrameHeader.size + length
                    if buffer.capacity < needed { buffer.reserveCapacity(needed) }
                    return nil
                }
                let payloadStart = readIndex + FrameHeader.size
                let payloadEnd = payloadStart + length
                readIndex = payloadEnd
                guard let type else {
                    discardedFrameCount += 1
                    continue
                }
                var reader = try FieldReader(
                    payload: buffer[payloadStart..<payloadEnd], streamOffset: frameOffset + FrameHeader.size,
                    frameOffset: frameOffset, frameType: header.type)
                return try Message.decode(type, from: &reader)
            }
        } catch {
            failure = error
            buffer = []
            readIndex = 0
            throw error
        }
    }

    /// Call when the stream ended cleanly: throws `truncated_header` or `truncated_payload` if a frame is incomplete.
    /// Call it only after ``nextMessage()`` has returned nil.
    public func finish() throws(WireError) {
        if let failure { throw failure }
        let available = buffer.count - readIndex
        guard available > 0 else { return }
        let frameOffset = bufferStreamOffset + readIndex
        if available < FrameHeader.size {
            throw WireError(.truncatedHeader, offset: frameOffset, detail: "\(available) of 8 header bytes")
        }
        throw WireError(
            .truncatedPayload, offset: frameOffset, frameType: buffer[readIndex + 1],
            detail: "\(available - FrameHeader.size) payload bytes received")
    }

    /// Decodes a whole stream that then ends: every message in it, or the first error (what the test vectors do).
    public static func decodeAll(
        _ bytes: some Collection<UInt8>, maxPayloadLength: Int = WireLimits.defaultMaxFrameSize
    ) throws(WireError) -> [Message] {
        var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
        decoder.append(bytes)
        var messages: [Message] = []
        while let message = try decoder.nextMessage() { messages.append(message) }
        try decoder.finish()
        return messages
    }
}
