// Checks shared by the fuzz targets. Every check that fails calls `fail`, which traps: in a libFuzzer target a trap
// is how a finding is reported (libFuzzer then writes the input to a crash-<sha1> file).
//
// Inputs are raw wire streams, exactly what a peer could send, so one corpus serves both targets and the unit test
// (Tests/SupportWireTests/FailCasesTests.swift). The chunking used to feed FrameDecoder is derived from a hash of the
// input, so it is reproducible from the input file alone and changes with every mutation.
import SupportWire

/// Reports a finding: traps with a message that says what went wrong and on which input.
public func fail(_ what: String, input: [UInt8], file: StaticString = #file, line: UInt = #line) -> Never {
    let shown = input.prefix(256).map(hexByte).joined()
    fatalError("FUZZ FINDING: \(what)\ninput (\(input.count) bytes): \(shown)\(input.count > 256 ? "…" : "")",
               file: file, line: line)
}

@inline(__always) func hexByte(_ byte: UInt8) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
}

public func hex(_ bytes: some Collection<UInt8>) -> String { bytes.map(hexByte).joined() }

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
        switch (error, other.error) {
        case (nil, nil): return true
        case (let a?, let b?): return a.code == b.code && a.offset == b.offset && a.field == b.field
        default: return false
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
public func inputHash(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash
}

/// Feeds `bytes` to a FrameDecoder in chunks of the sizes `nextChunk` returns (each ≥ 1), draining messages after
/// every chunk as a connection would, then ends the stream. Checks the decoder's own invariants on the way.
public func decodeChunked(
    _ bytes: [UInt8], maxPayloadLength: Int = 16_384, nextChunk: () -> Int
) -> DecodeOutcome {
    var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
    var outcome = DecodeOutcome()
    var position = 0
    do throws(WireError) {
        while position < bytes.count {
            let size = min(max(1, nextChunk()), bytes.count - position)
            decoder.append(bytes[position..<position + size])
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
        decoder.append([0x01, 0x03, 0, 0, 0, 0, 0, 11, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0])
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
public func decodeWhole(_ bytes: [UInt8], maxPayloadLength: Int = 16_384) -> DecodeOutcome {
    var done = false
    return decodeChunked(bytes, maxPayloadLength: maxPayloadLength) {
        if done { return 1 }
        done = true
        return max(1, bytes.count)
    }
}

/// `FrameDecoder.decodeAll` must agree with a manual whole-buffer decode.
public func checkDecodeAll(_ bytes: [UInt8], whole: DecodeOutcome, maxPayloadLength: Int) {
    do throws(WireError) {
        let messages = try FrameDecoder.decodeAll(bytes, maxPayloadLength: maxPayloadLength)
        if whole.error != nil || messages != whole.messages {
            fail("decodeAll gave \(messages.count) message(s); incremental decode gave \(whole.summary)", input: bytes)
        }
    } catch {
        let expected = DecodeOutcome(messages: whole.messages, error: error, discarded: whole.discarded)
        if !expected.sameResult(as: whole) {
            fail("decodeAll threw \(error); incremental decode gave \(whole.summary)", input: bytes)
        }
    }
}

/// The chunkings tried for an input: one drawn from its hash, and byte-at-a-time for short inputs.
public func checkChunkings(_ bytes: [UInt8], whole: DecodeOutcome, maxPayloadLength: Int) {
    var rng = SplitMix(seed: inputHash(bytes))
    let style = rng.next() % 4
    let chunked = decodeChunked(bytes, maxPayloadLength: maxPayloadLength) {
        switch style {
        case 0: Int(rng.next() % 8) + 1  // tiny pieces: headers split everywhere
        case 1: Int(rng.next() % 64) + 1
        case 2: Int(rng.next() % 4096) + 1
        default: [1, 7, 8, 9, 3, 11, 4096][Int(rng.next() % 7)]  // around the header size
        }
    }
    if !chunked.sameResult(as: whole) {
        fail("chunked decode (style \(style)) gave \(chunked.summary); whole buffer gave \(whole.summary)", input: bytes)
    }
    if bytes.count <= 2048 {
        let single = decodeChunked(bytes, maxPayloadLength: maxPayloadLength) { 1 }
        if !single.sameResult(as: whole) {
            fail("byte-at-a-time decode gave \(single.summary); whole buffer gave \(whole.summary)", input: bytes)
        }
    }
}

// MARK: - Round trip

/// The highest tag SPEC §5 defines for each frame type (tags 1 through it are all defined).
func highestKnownTag(_ type: FrameType) -> UInt8 {
    switch type {
    case .hello: 7
    case .helloAck: 6
    case .ping, .pong, .sessionStarted: 1
    case .goAway, .requestAbort, .sessionEnd, .voipState: 2
    case .register, .connectionResponse, .sessionError: 3
    case .registerResult, .connectionRequest: 4
    }
}

/// The frames of `bytes` that carry messages (complete, not IGNORABLE), in order, as ranges of `bytes`.
/// Only the prefix the decoder accepted is used, so the headers there are known to be valid.
func messageFrames(_ bytes: [UInt8]) -> [Range<Int>] {
    var frames: [Range<Int>] = []
    var position = 0
    while bytes.count - position >= 8 {
        let length = Int(bytes[position + 4]) << 24 | Int(bytes[position + 5]) << 16
            | Int(bytes[position + 6]) << 8 | Int(bytes[position + 7])
        let end = position + 8 + length
        guard end <= bytes.count else { break }
        if bytes[position + 2] & 0x01 == 0 { frames.append(position..<end) }
        position = end
    }
    return frames
}

/// Whether every field of the payload has a tag SPEC §5 defines for `type` (layout already validated).
func hasOnlyKnownTags(_ frame: ArraySlice<UInt8>, type: FrameType) -> Bool {
    var index = frame.startIndex + 8
    let top = highestKnownTag(type)
    while index + 3 <= frame.endIndex {
        let tag = frame[index]
        if tag == 0 || tag > top { return false }
        index += 3 + (Int(frame[index + 1]) << 8 | Int(frame[index + 2]))
    }
    return true
}

/// Decodes `bytes` with `maxPayloadLength`, then re-encodes every message and decodes it again.
///
/// - encoding a message that decoded never throws (with the 1 MiB encoder, and with an encoder limited to the decode
///   maximum: the canonical payload is never longer than the received one);
/// - decoding the encoding gives back exactly that message, and encoding that again gives the same bytes;
/// - when the received frame had only fields the spec defines, the encoding is byte for byte the received frame
///   (SPEC §4.1: every message has exactly one encoding); otherwise it is shorter (unknown fields are dropped).
public func checkRoundTrip(_ bytes: [UInt8], maxPayloadLength: Int) {
    let whole = decodeWhole(bytes, maxPayloadLength: maxPayloadLength)
    let frames = messageFrames(bytes)
    if frames.count < whole.messages.count {
        fail("decoder returned \(whole.messages.count) messages from \(frames.count) frames", input: bytes)
    }
    let bigEncoder = FrameEncoder(maxPayloadLength: 1_048_576)
    let sameLimitEncoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
    for (index, message) in whole.messages.enumerated() {
        let original = bytes[frames[index]]
        let encoded: [UInt8]
        do throws(WireError) {
            encoded = try bigEncoder.encode(message)
        } catch {
            fail("encoding message #\(index) \(message) threw \(error)", input: bytes)
        }
        do throws(WireError) {
            let limited = try sameLimitEncoder.encode(message)
            if limited != encoded { fail("two encoders disagree on message #\(index)", input: bytes) }
        } catch {
            fail("encoding message #\(index) with max \(maxPayloadLength) threw \(error)", input: bytes)
        }
        if encoded.count < 8 || encoded[1] != message.frameType.rawValue {
            fail("encoding of message #\(index) has a wrong header: \(hex(encoded.prefix(8)))", input: bytes)
        }
        if hasOnlyKnownTags(original, type: message.frameType) {
            if !encoded.elementsEqual(original) {
                fail("message #\(index) re-encodes to \(hex(encoded)), received \(hex(original))", input: bytes)
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
        do throws(WireError) {
            let twice = try bigEncoder.encode(again[0])
            if twice != encoded {
                fail("re-encoding message #\(index) changed the bytes: \(hex(encoded)) then \(hex(twice))", input: bytes)
            }
        } catch {
            fail("encoding the round-tripped message #\(index) threw \(error)", input: bytes)
        }
    }
}
