import TestSupport
import Testing
import SupportVocabulary
@testable import SupportWire

@Suite struct FrameDecoderTests {
    private func decode(_ bytes: [UInt8], chunks sizes: () -> Int) throws(WireError) -> [Message] {
        var decoder = FrameDecoder()
        var messages: [Message] = []
        var index = 0
        while index < bytes.count {
            let end = min(bytes.count, index + max(1, sizes()))
            decoder.append(bytes[index..<end])
            index = end
            while let message = try decoder.nextMessage() { messages.append(message) }
        }
        try decoder.finish()
        return messages
    }

    @Test func decodesOneByteAtATime() throws {
        #expect(try decode(SampleMessages.stream, chunks: { 1 }) == SampleMessages.all)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    func decodesAnyRandomSplit(seed: UInt64) throws {
        var random = SplitMix64(state: seed)
        let messages = try decode(SampleMessages.stream, chunks: { Int.random(in: 1...40, using: &random) })
        #expect(messages == SampleMessages.all)
    }

    @Test func decodesTheWholeStreamAtOnce() throws {
        #expect(try FrameDecoder.decodeAll(SampleMessages.stream) == SampleMessages.all)
    }

    @Test func findsAnOversizedLengthBeforeThePayloadArrives() {
        var decoder = FrameDecoder()
        decoder.append([0x01, 0x03, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: WireError(.frameTooLarge, offset: 4, frameType: 0x03)) { try decoder.nextMessage() }
    }

    @Test func staysFailedAfterAnError() throws {
        var decoder = FrameDecoder()
        decoder.append([0x02, 0, 0, 0, 0, 0, 0, 0])
        let first = #expect(throws: WireError.self) { try decoder.nextMessage() }
        decoder.append(try FrameEncoder().encode(.ping(Ping(nonce: 1))))
        let second = #expect(throws: WireError.self) { try decoder.nextMessage() }
        #expect(first == second)
        #expect(first?.code == .unsupportedFrameVersion)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func reportsOffsetsFromTheStartOfTheStream() throws {
        var bytes = try FrameEncoder().encode(.ping(Ping(nonce: 1)))  // 19 bytes
        bytes += [0x01, 0x10, 0x00, 0x00, 0, 0, 0, 0]  // REGISTER with no fields
        let error = #expect(throws: WireError.self) { try FrameDecoder.decodeAll(bytes) }
        #expect(error?.code == .missingField)
        #expect(error?.offset == 19)
        #expect(error?.field == 1)
    }

    @Test func discardsUndefinedIgnorableFramesAndGoesOn() throws {
        var bytes: [UInt8] = [0x01, 0xEE, 0x01, 0x00, 0, 0, 0, 3, 0xDE, 0xAD, 0xBF]
        bytes += try FrameEncoder().encode(.pong(Pong(nonce: 5)))
        var decoder = FrameDecoder()
        decoder.append(bytes)
        #expect(try decoder.nextMessage() == .pong(Pong(nonce: 5)))
        #expect(decoder.discardedFrameCount == 1)
    }

    @Test func skipsUnknownFieldsInTheirPlace() throws {
        // GOAWAY: reason (1), an unknown tag 9 with 2 bytes, nothing else.
        let bytes: [UInt8] = [0x01, 0x05, 0x00, 0x00, 0, 0, 0, 9, 1, 0, 1, 0x01, 9, 0, 2, 0xFF, 0xFF]
        #expect(try FrameDecoder.decodeAll(bytes) == [.goAway(GoAway(reason: .normalClose))])
    }

    @Test func reportsAStreamThatEndsInsideAFrame() throws {
        let ping = try FrameEncoder().encode(.ping(Ping(nonce: 1)))
        #expect(throws: WireError(.truncatedHeader, offset: 19)) {
            try FrameDecoder.decodeAll(ping + ping.prefix(3))
        }
        let error = #expect(throws: WireError.self) { try FrameDecoder.decodeAll(ping.dropLast()) }
        #expect(error?.code == .truncatedPayload)
        #expect(error?.offset == 0)
    }

    @Test func holdsAtMostOnePartialFrame() throws {
        var decoder = FrameDecoder()
        let stream = SampleMessages.stream
        var largest = 0
        for byte in stream {
            decoder.append([byte])
            while try decoder.nextMessage() != nil {}
            largest = max(largest, decoder.bufferedByteCount)
        }
        let largestFrame = SampleMessages.all.map { (try? FrameEncoder().encode($0).count) ?? 0 }.max() ?? 0
        #expect(largest < largestFrame)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.consumedByteCount == stream.count)
    }

    @Test func acceptsAMaximumAnnouncedOverTheDefault() throws {
        let big = FeatureSet((1...8000).map { Feature(.init(rawValue: UInt16($0))) })
        let message = Message.register(.init(sessionCode: "c", apiToken: "t", capabilities: big))
        let bytes = try FrameEncoder(maxPayloadLength: 1_048_576).encode(message)
        #expect(throws: WireError.self) { try FrameDecoder.decodeAll(bytes) }
        #expect(try FrameDecoder.decodeAll(bytes, maxPayloadLength: 1_048_576) == [message])
    }
}
