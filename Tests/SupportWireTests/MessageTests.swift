import Testing
@testable import SupportWire
import TestSupport
import SupportVocabulary

@Suite struct MessageTests {
    @Test func samplesCoverEveryFrameType() {
        #expect(SampleMessages.coveredTypes == Set(FrameType.allCases))
    }

    @Test(arguments: SampleMessages.all)
    func roundTripsThroughOneFrame(_ message: Message) throws {
        let bytes = try FrameEncoder().encode(message)
        #expect(bytes.count >= FrameHeader.size)
        #expect(bytes[1] == message.frameType.rawValue)
        #expect(try FrameDecoder.decodeAll(bytes) == [message])
    }

    @Test(arguments: SampleMessages.all)
    func encodingIsCanonical(_ message: Message) throws {
        // Decode then encode again gives the same bytes: one encoding per value.
        let bytes = try FrameEncoder().encode(message)
        let again = try FrameDecoder.decodeAll(bytes).map { try FrameEncoder().encode($0) }
        #expect(again == [bytes])
    }

    @Test func pingHasTheSpecifiedLayout() throws {
        let bytes = try FrameEncoder().encode(.ping(Ping(nonce: 0x0102_0304_0506_0708)))
        #expect(bytes.hex == "010300000000000b" + "010008" + "0102030405060708")
    }

    @Test func connectionResponseDefaultsItsReasonFromTheDecision() {
        #expect(ConnectionResponse(requestID: 1, decision: .allow).reason == .success)
        #expect(ConnectionResponse(requestID: 1, decision: .reject).reason == .rejectedByUser)
    }

    @Test func reasonCodesClassifyByRange() {
        #expect(!ReasonCode.endedByDevice.isError)
        #expect(ReasonCode.invalidAPIToken.isError)
        #expect(ReasonCode(rawValue: 0x7F).description == "unspecified(0x7f)")
        #expect(ReasonCode(rawValue: 0xFE).description == "unspecified_error(0xfe)")
        #expect(ReasonCode.sessionCodeInUse.name == "session_code_in_use")
    }

    @Test func samplesHoldAMinimalAndAFullMessageOfEveryRevision1_1Frame() {
        let newTypes: [FrameType] = [
            .featureRequest, .featureAnswer, .featureRevoke, .sessionMessage, .messageAck, .resume, .resumeResult,
        ]
        for type in newTypes {
            #expect(SampleMessages.revision1_1.filter { $0.frameType == type }.count >= 2, "\(type.specName)")
        }
    }

    @Test func featureAnswerDefaultsItsReasonFromTheDecision() {
        #expect(FeatureAnswer(askID: 1, decision: .grant).reason == .success)
        #expect(FeatureAnswer(askID: 1, decision: .refuse).reason == .rejectedByUser)
    }

    /// SPEC §15.2: an empty `confirm_features` / `granted_features` list is a present field (tag, length 0), distinct
    /// from the absent one.
    @Test func keepsAnEmptyFeatureListApartFromAnAbsentOne() throws {
        let empty = Message.connectionRequest(
            ConnectionRequest(requestID: 1, supporterName: "S", connectionType: .screenShare, confirmFeatures: []))
        let absent = Message.connectionRequest(
            ConnectionRequest(requestID: 1, supporterName: "S", connectionType: .screenShare))
        let emptyBytes = try FrameEncoder().encode(empty)
        #expect(emptyBytes.suffix(3) == [5, 0, 0])
        #expect(try FrameEncoder().encode(absent).count == emptyBytes.count - 3)
        #expect(try FrameDecoder.decodeAll(emptyBytes) == [empty])
        let granted = Message.sessionStarted(SessionStarted(requestID: 1, grantedFeatures: []))
        #expect(try FrameDecoder.decodeAll(FrameEncoder().encode(granted)) == [granted])
    }

    /// A `confirm` of 1 is the only value (SPEC §15.3); `false` is the absent field.
    @Test func encodesFeatureRequestConfirmAsPresentOrAbsent() throws {
        let plain = try FrameEncoder().encode(.featureRequest(FeatureRequest(askID: 1, feature: .chat)))
        let confirm = try FrameEncoder().encode(
            .featureRequest(FeatureRequest(askID: 1, feature: .chat, confirm: true)))
        #expect(confirm.count == plain.count + 4)
        #expect(confirm.suffix(4) == [3, 0, 1, 1])
    }

    /// SPEC §15.4: `file_size` is at most 16 MiB, a limit the encoder keeps as the decoder checks it.
    @Test func refusesToEncodeAFileSizeOver16MiB() throws {
        let part = SessionMessage(
            messageID: 1, kind: .filePart, body: [0], transferID: 1, fileName: "f",
            fileSize: WireLimits.largestFileSize + 1, offset: 0)
        let error = #expect(throws: WireError.self) { try FrameEncoder().encode(.sessionMessage(part)) }
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.field == 7)
    }

    /// SPEC §15.4: `body` is bounded by its field length (65 535) and by the peer's maximum frame size only.
    @Test func carriesABodyOfTheFullFieldLengthInALargerFrame() throws {
        let message = Message.sessionMessage(
            SessionMessage(
                messageID: 1, kind: .application, contentType: "x", body: Array(repeating: 1, count: 65_535)))
        let error = #expect(throws: WireError.self) { try FrameEncoder().encode(message) }
        #expect(error?.code == .frameTooLarge)
        let bytes = try FrameEncoder(maxPayloadLength: WireLimits.largestMaxFrameSize).encode(message)
        #expect(try FrameDecoder.decodeAll(bytes, maxPayloadLength: WireLimits.largestMaxFrameSize) == [message])
        var tooLong = message
        if case .sessionMessage(var body) = tooLong {
            body.body.append(1)
            tooLong = .sessionMessage(body)
        }
        let over = #expect(throws: WireError.self) {
            try FrameEncoder(maxPayloadLength: WireLimits.largestMaxFrameSize).encode(tooLong)
        }
        #expect(over?.code == .stringTooLong)
        #expect(over?.field == 4)
    }

    /// SPEC §15.2: `bytes` of length 0 is `string_empty`, both ways.
    @Test func refusesAnEmptyMediaDescriptor() throws {
        let error = #expect(throws: WireError.self) {
            try FrameEncoder().encode(.sessionStarted(SessionStarted(requestID: 1, mediaDescriptor: [])))
        }
        #expect(error?.code == .stringEmpty)
        #expect(error?.field == 3)
    }

    @Test func featureSetKeepsOneVersionPerIDInAscendingOrder() {
        var set: FeatureSet = [Feature(.voip), Feature(.screenShare), Feature(.voip, version: 3)]
        #expect(set.map(\.id) == [.screenShare, .voip])
        #expect(set.version(of: .voip) == 3)
        set.insert(Feature(.assistAR))
        #expect(set.map(\.id) == [.screenShare, .assistAR, .voip])
        #expect(!set.contains(.remoteControl))
    }
}
