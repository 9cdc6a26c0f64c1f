// Checks shared by the fuzz targets. Every check that fails calls `fail`, which traps: in a libFuzzer target a trap
// is how a finding is reported (libFuzzer then writes the input to a crash-<sha1> file).
//
// Inputs are raw wire streams, exactly what a peer could send, so one corpus serves both targets and the unit test
// (Tests/SupportWireTests/FailCasesTests.swift). The chunking used to feed FrameDecoder, and the smaller maximum of
// the limit check, are derived from a hash of the input, so they are reproducible from the input file alone and
// change with every mutation.
//
// Speed: the targets run millions of inputs, so the checks read libFuzzer's buffer in place (no copy of the input)
// and feed the decoder through its raw-memory `append`, the one the transport uses; text (hex dumps, summaries) is
// built only inside `fail`, that is, only when a check has already failed.
import SupportWire

/// Reports a finding: traps with a message that says what went wrong and on which input.
public func fail(
    _ what: String, input: UnsafeRawBufferPointer, file: StaticString = #file, line: UInt = #line
) -> Never {
    let shown = hex(input.prefix(256))
    fatalError("FUZZ FINDING: \(what)\ninput (\(input.count) bytes): \(shown)\(input.count > 256 ? "…" : "")",
               file: file, line: line)
}

/// Lower-case hex, for failure messages only.
public func hex(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
}

// MARK: - Decoding outcomes

/// What decoding a complete stream gives: the messages before the first error, and that error (nil: clean end).
public struct DecodeOutcome {
    public var messages: [Message] = []
    public var error: WireError?
    public var discarded = 0

    /// Same messages, and the same error by its spec identity (code, offset, field tag). `detail` is for people and
    /// is not compared.
    public func sameResult(as other: DecodeOutcome) -> Bool {
        guard messages == other.messages, discarded == other.discarded else { return false }
        return Self.sameError(error, other.error)
    }

    static func sameError(_ a: WireError?, _ b: WireError?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.code == b.code && a.offset == b.offset && a.field == b.field
        default: false
        }
    }

    public var summary: String {
        "\(messages.count) message(s), \(discarded) discarded, " + (error.map { "error \($0)" } ?? "clean end")
    }
}

/// A small deterministic PRNG (splitmix64) seeded from the input, for chunk sizes.
public struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a of the input: the seed of its chunking.
public func inputHash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash
}

/// A valid PING frame, appended after an error to check that the decoder stays failed.
let validPing: [UInt8] = [0x01, 0x03, 0, 0, 0, 0, 0, 11, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]

/// Feeds `bytes` to a FrameDecoder in chunks of the sizes `nextChunk` returns (each ≥ 1), draining messages after
/// every chunk as a connection would, then ends the stream. Checks the decoder's own invariants on the way.
public func decodeChunked(
    _ bytes: UnsafeRawBufferPointer, maxPayloadLength: Int = 16_384, nextChunk: () -> Int
) -> DecodeOutcome {
    var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
    var outcome = DecodeOutcome()
    var position = 0
    do throws(WireError) {
        while position < bytes.count {
            let size = min(max(1, nextChunk()), bytes.count - position)
            decoder.append(UnsafeRawBufferPointer(rebasing: bytes[position..<position + size]))
            position += size
            while let message = try decoder.nextMessage() { outcome.messages.append(message) }
            // Needs more bytes: what is buffered is one partial frame, never more than 8 + maximum bytes (SPEC §3.2),
            // and nothing was lost or invented.
            if decoder.bufferedByteCount >= 8 + maxPayloadLength {
                fail("decoder buffers \(decoder.bufferedByteCount) bytes, max payload \(maxPayloadLength)", input: bytes)
            }
            if decoder.consumedByteCount + decoder.bufferedByteCount != position {
                fail("consumed \(decoder.consumedByteCount) + buffered \(decoder.bufferedByteCount) ≠ fed \(position)",
                     input: bytes)
            }
        }
    } catch {
        outcome.error = error
        // The decoder stays failed (SPEC §10.1: nothing is read after a malformed frame): more bytes, even a valid
        // frame, change nothing. (Only for errors of nextMessage(); finish() ends the stream, nothing comes after.)
        decoder.append(validPing)
        do throws(WireError) {
            _ = try decoder.nextMessage()
            fail("nextMessage() did not rethrow after \(error)", input: bytes)
        } catch let again {
            if again != error { fail("sticky error changed: \(error) then \(again)", input: bytes) }
        }
        do throws(WireError) {
            try decoder.finish()
            fail("finish() did not rethrow after \(error)", input: bytes)
        } catch let again {
            if again != error { fail("finish() error changed: \(error) then \(again)", input: bytes) }
        }
    }
    if outcome.error == nil {
        do throws(WireError) {
            try decoder.finish()
            if decoder.bufferedByteCount != 0 { fail("finish() passed with bytes buffered", input: bytes) }
        } catch {
            outcome.error = error
            if error.code != .truncatedHeader && error.code != .truncatedPayload {
                fail("finish() threw \(error)", input: bytes)
            }
        }
    }
    if let error = outcome.error, error.offset < 0 || error.offset >= bytes.count {
        fail("error offset \(error.offset) outside the \(bytes.count)-byte stream: \(error)", input: bytes)
    }
    outcome.discarded = decoder.discardedFrameCount
    return outcome
}

/// The whole stream in one append.
public func decodeWhole(_ bytes: UnsafeRawBufferPointer, maxPayloadLength: Int = 16_384) -> DecodeOutcome {
    decodeChunked(bytes, maxPayloadLength: maxPayloadLength) { bytes.count }
}

/// `FrameDecoder.decodeAll` (its generic `append`, where the chunked decodes use the raw-memory one) must agree with
/// a manual whole-buffer decode.
public func checkDecodeAll(_ bytes: UnsafeRawBufferPointer, whole: DecodeOutcome, maxPayloadLength: Int) {
    do throws(WireError) {
        let messages = try FrameDecoder.decodeAll(bytes, maxPayloadLength: maxPayloadLength)
        if whole.error != nil || messages != whole.messages {
            fail("decodeAll gave \(messages.count) message(s); incremental decode gave \(whole.summary)", input: bytes)
        }
    } catch {
        if !DecodeOutcome.sameError(error, whole.error) {
            fail("decodeAll threw \(error); incremental decode gave \(whole.summary)", input: bytes)
        }
    }
}

/// A chunk size drawn from `rng` in one of four styles.
@inline(__always) func chunkSize(style: UInt64, _ rng: inout SplitMix) -> Int {
    switch style {
    case 0: Int(rng.next() % 8) + 1  // tiny pieces: headers split everywhere
    case 1: Int(rng.next() % 64) + 1
    case 2: Int(rng.next() % 4096) + 1
    default:  // around the header size
        switch rng.next() % 7 {
        case 0: 1
        case 1: 7
        case 2: 8
        case 3: 9
        case 4: 3
        case 5: 11
        default: 4096
        }
    }
}

/// Chunk sizes that split every frame header byte by byte and cut every payload after its first byte and before its
/// last: every state the decoder can be in between two appends (1–7 header bytes buffered; a whole header and part of
/// its payload; a whole frame), at a cost per frame rather than per byte. Splits inside payloads are drawn by the
/// hash chunking.
struct FrameEdgeChunks {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    var frameStart = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func next() -> Int {
        var inFrame = position - frameStart
        if inFrame >= 8 {
            let length = Int(bytes[frameStart + 4]) << 24 | Int(bytes[frameStart + 5]) << 16
                | Int(bytes[frameStart + 6]) << 8 | Int(bytes[frameStart + 7])
            if inFrame - 8 >= length {  // the frame is complete: the next one starts here
                frameStart = position
                inFrame = 0
            }
        }
        var size = 1
        if inFrame >= 8 {
            let length = Int(bytes[frameStart + 4]) << 24 | Int(bytes[frameStart + 5]) << 16
                | Int(bytes[frameStart + 6]) << 8 | Int(bytes[frameStart + 7])
            let payloadOffset = inFrame - 8
            if payloadOffset > 0 && payloadOffset < length - 1 { size = length - 1 - payloadOffset }
        }
        size = min(size, bytes.count - position)
        position += size
        return max(1, size)
    }
}

/// A chunking drawn from the input's hash must give what the whole buffer gave.
public func checkChunkings(_ bytes: UnsafeRawBufferPointer, whole: DecodeOutcome, maxPayloadLength: Int) {
    var rng = SplitMix(seed: inputHash(bytes))
    let style = rng.next() % 4
    let chunked = decodeChunked(bytes, maxPayloadLength: maxPayloadLength) { chunkSize(style: style, &rng) }
    if !chunked.sameResult(as: whole) {
        fail("chunked decode (style \(style)) gave \(chunked.summary); whole buffer gave \(whole.summary)", input: bytes)
    }
}

// MARK: - A smaller maximum

/// The frame headers of `bytes` as the length fields chain them: (offset, length) of each complete 8-byte header,
/// ending at the first frame that does not fit in the stream. Valid only as far as the decoder accepted the stream.
struct HeaderWalk: Sequence, IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func next() -> (offset: Int, length: Int)? {
        guard bytes.count - position >= 8 else { return nil }
        let offset = position
        let length = Int(bytes[offset + 4]) << 24 | Int(bytes[offset + 5]) << 16 | Int(bytes[offset + 6]) << 8
            | Int(bytes[offset + 7])
        position = bytes.count - offset - 8 >= length ? offset + 8 + length : bytes.count
        return (offset, length)
    }
}

/// The stream split at every frame edge (``FrameEdgeChunks``) must give what the whole buffer gave, with the same
/// maximum for half the inputs and, for the other half (by the input's hash), with a smaller one, so that the paths
/// of large frames are reached by short inputs (SPEC §3.2–§3.3): one of the stream's own payload lengths, or one
/// less, so that a frame sits exactly at the maximum or one byte over it. With the smaller maximum the result must be
/// what `whole` gave up to the first frame whose length field exceeds it; there `frame_too_large` at the length field
/// (byte 4), unless the stream failed earlier or that header fails a check made before the length (version, flags,
/// reserved byte). The decoder's buffer bound is checked against the maximum in use on the way.
public func checkFrameEdges(_ bytes: UnsafeRawBufferPointer, whole: DecodeOutcome, maxPayloadLength: Int) {
    var rng = SplitMix(seed: inputHash(bytes) ^ 0x5EED_0F11_A17)
    let limit = rng.next() & 1 == 0 ? maxPayloadLength : smallerLimit(bytes, &rng, atMost: maxPayloadLength)
    let expected = limit == maxPayloadLength ? whole : expectedOutcome(bytes, limit: limit, whole: whole)
    var edges = FrameEdgeChunks(bytes)
    let split = decodeChunked(bytes, maxPayloadLength: limit) { edges.next() }
    if !split.sameResult(as: expected) {
        fail("split at every frame edge, max payload \(limit): \(split.summary); expected \(expected.summary)",
             input: bytes)
    }
}

/// One of the stream's payload lengths, or one less, chosen by `rng`; at most `maximum`; 0 without a whole header.
func smallerLimit(_ bytes: UnsafeRawBufferPointer, _ rng: inout SplitMix, atMost maximum: Int) -> Int {
    var headers = 0
    for _ in HeaderWalk(bytes) { headers += 1 }
    guard headers > 0 else { return 0 }
    var walk = HeaderWalk(bytes)
    for _ in 0..<Int(rng.next() % UInt64(headers)) { _ = walk.next() }
    let length = walk.next().map { $0.length } ?? 0
    return min(max(0, length - Int(rng.next() & 1)), maximum)
}

/// What decoding with `limit` must give, from `whole` (decoded with a maximum ≥ `limit`).
func expectedOutcome(_ bytes: UnsafeRawBufferPointer, limit: Int, whole: DecodeOutcome) -> DecodeOutcome {
    // The first frame whose length is over the limit, and the frames before it.
    var cut = -1
    var messagesBefore = 0
    var discardedBefore = 0
    for header in HeaderWalk(bytes) {
        if header.length > limit {
            cut = header.offset
            break
        }
        if bytes[header.offset + 2] & FrameHeader.ignorableFlag != 0 {
            discardedBefore += 1
        } else {
            messagesBefore += 1
        }
    }
    if cut < 0 { return whole }
    if let error = whole.error {
        // Failed before that frame, or on a header check made before the length: the limit changes nothing.
        if error.offset < cut { return whole }
        let checkedBeforeLength = error.code == .unsupportedFrameVersion || error.code == .reservedFlags
            || error.code == .reservedByte
        if checkedBeforeLength && error.offset < cut + 4 { return whole }
    }
    // Every frame before the cut decoded (no error before it), one message per non-IGNORABLE frame.
    var expected = DecodeOutcome()
    expected.messages = Array(whole.messages.prefix(messagesBefore))
    expected.discarded = discardedBefore
    expected.error = WireError(.frameTooLarge, offset: cut + 4, frameType: bytes[cut + 1])
    return expected
}

// MARK: - Round trip

/// The highest tag SPEC §5 and §15 define for each frame type (tags 1 through it are all defined, except GOAWAY's
/// tag 3: see ``isKnownTag(_:_:)``).
func highestKnownTag(_ type: FrameType) -> UInt8 {
    switch type {
    case .hello, .helloAck: 7
    case .ping, .pong, .featureWithdraw: 1
    case .goAway: 4
    case .requestAbort, .sessionEnd, .voipState, .featureRevoke: 2
    case .register, .sessionError, .featureAnswer, .messageAck: 3
    case .connectionResponse, .sessionStarted, .featureRequest: 4
    case .registerResult, .connectionRequest, .resumeResult: 5
    case .resume: 6
    case .sessionMessage: 8
    }
}

/// Whether SPEC §5 or §15 defines `tag` for `type`, whose highest known tag is `top`: GOAWAY defines 1, 2 and 4
/// (revision 1.1.2 added `resume_elsewhere` as tag 4; tag 3 stays undefined), every other type 1 through `top`.
func isKnownTag(_ tag: UInt8, _ type: FrameType, top: UInt8) -> Bool {
    if type == .goAway { return tag == 1 || tag == 2 || tag == 4 }
    return tag >= 1 && tag <= top
}

/// Whether every field of the payload has a tag SPEC §5 or §15 defines for `type` (layout already validated).
func hasOnlyKnownTags(_ bytes: UnsafeRawBufferPointer, frame: Range<Int>, type: FrameType) -> Bool {
    var index = frame.lowerBound + 8
    let top = highestKnownTag(type)
    while index + 3 <= frame.upperBound {
        let tag = bytes[index]
        if !isKnownTag(tag, type, top: top) { return false }
        index += 3 + (Int(bytes[index + 1]) << 8 | Int(bytes[index + 2]))
    }
    return true
}

/// Decodes `bytes` with `maxPayloadLength`, then re-encodes every message and decodes it again.
///
/// - encoding a message that decoded never throws (with the 1 MiB encoder, with an encoder limited to the decode
///   maximum, and with one limited to the very payload length the message was received with: the canonical payload
///   is never longer than the received one);
/// - decoding the encoding gives back exactly that message, and encoding that again gives the same bytes;
/// - when the received frame had only fields the spec defines, the encoding is byte for byte the received frame
///   (SPEC §4.1: every message has exactly one encoding); otherwise it is shorter (unknown fields are dropped).
public func checkRoundTrip(_ bytes: UnsafeRawBufferPointer, maxPayloadLength: Int) {
    let whole = decodeWhole(bytes, maxPayloadLength: maxPayloadLength)
    guard !whole.messages.isEmpty else { return }
    let bigEncoder = FrameEncoder(maxPayloadLength: 1_048_576)
    let sameLimitEncoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
    // Reused for every message: the encodings are compared, never kept.
    var encoded: [UInt8] = []
    var scratch: [UInt8] = []
    encoded.reserveCapacity(256)
    scratch.reserveCapacity(256)
    // The frames that carry messages (complete, not IGNORABLE), in order: the message frames of the prefix the
    // decoder accepted, so their headers are known to be valid.
    var frames = HeaderWalk(bytes).lazy.filter { bytes.count - $0.offset - 8 >= $0.length }
        .filter { bytes[$0.offset + 2] & FrameHeader.ignorableFlag == 0 }.makeIterator()
    for (index, message) in whole.messages.enumerated() {
        guard let header = frames.next() else {
            fail("decoder returned \(whole.messages.count) messages from \(index) frames", input: bytes)
        }
        let original = header.offset..<header.offset + 8 + header.length
        encoded.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try bigEncoder.encode(message, into: &encoded)
        } catch {
            fail("encoding message #\(index) \(message) threw \(error)", input: bytes)
        }
        scratch.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try sameLimitEncoder.encode(message, into: &scratch)
            if scratch != encoded { fail("two encoders disagree on message #\(index)", input: bytes) }
        } catch {
            fail("encoding message #\(index) with max \(maxPayloadLength) threw \(error)", input: bytes)
        }
        scratch.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try FrameEncoder(maxPayloadLength: header.length).encode(message, into: &scratch)
            if scratch != encoded { fail("the received-length encoder disagrees on message #\(index)", input: bytes) }
        } catch {
            fail("message #\(index) came in a \(header.length)-byte payload and does not encode within it: \(error)",
                 input: bytes)
        }
        if encoded.count < 8 || encoded[1] != message.frameType.rawValue {
            fail("encoding of message #\(index) has a wrong header: \(hex(encoded.prefix(8)))", input: bytes)
        }
        if hasOnlyKnownTags(bytes, frame: original, type: message.frameType) {
            if !encoded.elementsEqual(bytes[original]) {
                fail("message #\(index) re-encodes to \(hex(encoded)), received \(hex(bytes[original]))", input: bytes)
            }
        } else if encoded.count >= original.count {
            fail("message #\(index) with unknown fields re-encodes to \(encoded.count) bytes, received \(original.count)",
                 input: bytes)
        }
        let again: [Message]
        do throws(WireError) {
            again = try FrameDecoder.decodeAll(encoded, maxPayloadLength: 1_048_576)
        } catch {
            fail("decoding the encoding \(hex(encoded)) of message #\(index) threw \(error)", input: bytes)
        }
        guard again.count == 1, again[0] == message, again[0].hashValue == message.hashValue else {
            fail("round trip of message #\(index) \(message) gave \(again)", input: bytes)
        }
        scratch.removeAll(keepingCapacity: true)
        do throws(WireError) {
            try bigEncoder.encode(again[0], into: &scratch)
            if scratch != encoded {
                fail("re-encoding message #\(index) changed the bytes: \(hex(encoded)) then \(hex(scratch))", input: bytes)
            }
        } catch {
            fail("encoding the round-tripped message #\(index) threw \(error)", input: bytes)
        }
    }
}
