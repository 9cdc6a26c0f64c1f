import Testing
@testable import SupportWire
import TestSupport
import SupportVocabulary

@Suite struct FrameEncoderTests {
    private func encodingError(_ message: Message, max: Int = 16_384) -> WireError? {
        do {
            _ = try FrameEncoder(maxPayloadLength: max).encode(message)
            return nil
        } catch {
            return error
        }
    }

    @Test func refusesAnEmptySupporterName() {
        let error = encodingError(.connectionRequest(.init(requestID: 1, supporterName: "", connectionType: .screenShare)))
        #expect(error?.code == .stringEmpty)
        #expect(error?.field == 2)
    }

    @Test func refusesANodeNameOverSixtyFourBytes() {
        // 22 three-byte characters: 66 bytes although only 22 characters.
        let error = encodingError(.hello(Hello(role: .device, nodeName: String(repeating: "€", count: 22))))
        #expect(error?.code == .stringTooLong)
        #expect(error?.fieldName == "node_name")
    }

    @Test func refusesAKeepaliveOutsideItsRange() {
        let error = encodingError(.hello(Hello(role: .device, nodeName: "d", keepaliveMilliseconds: 99)))
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.field == 6)
    }

    @Test func refusesRequestIDZero() {
        #expect(encodingError(.sessionStarted(SessionStarted(requestID: 0)))?.code == .valueOutOfRange)
    }

    @Test func refusesAnInvertedVersionRange() {
        let error = encodingError(.hello(Hello(minVersion: 3, maxVersion: 2, role: .device, nodeName: "d")))
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.field == 2)
    }

    @Test func refusesFeatureVersionZero() {
        let error = encodingError(.register(.init(sessionCode: "c", apiToken: "t", capabilities: [Feature(.voip, version: 0)])))
        #expect(error?.code == .valueOutOfRange)
    }

    @Test func refusesAPayloadOverThePeersMaximum() {
        let many = FeatureSet((1...5000).map { Feature(.init(rawValue: UInt16($0))) })
        let message = Message.register(.init(sessionCode: "c", apiToken: "t", capabilities: many))
        #expect(encodingError(message)?.code == .frameTooLarge)
        #expect(encodingError(message, max: 1_048_576) == nil)
    }

    @Test func leavesTheBufferAsItWasOnError() throws {
        var bytes: [UInt8] = [0xAA]
        #expect(throws: WireError.self) {
            try FrameEncoder().encode(.goAway(GoAway(reason: .normalClose, text: "")), into: &bytes)
        }
        #expect(bytes == [0xAA])
        try FrameEncoder().encode(.ping(Ping(nonce: 1)), into: &bytes)
        #expect(bytes.count == 1 + 8 + 11)
    }
}
