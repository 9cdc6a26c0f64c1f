import Testing
@testable import SupportWire

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

    @Test func featureSetKeepsOneVersionPerIDInAscendingOrder() {
        var set: FeatureSet = [Feature(.voip), Feature(.screenShare), Feature(.voip, version: 3)]
        #expect(set.map(\.id) == [.screenShare, .voip])
        #expect(set.version(of: .voip) == 3)
        set.insert(Feature(.assistAR))
        #expect(set.map(\.id) == [.screenShare, .assistAR, .voip])
        #expect(!set.contains(.remoteControl))
    }
}
