import SupportWire
import SupportUtilities
import Testing
import SupportVocabulary
@testable import SupportSession

@Suite struct MessageChannelRefusalTests {
    typealias Refusal = MessageChannel.Refusal
    struct Cause: Error, Sendable {}

    @Test func anEmptyChatLineIsAnInvalidArgument() {
        var channel = MessageChannel()
        let refusal = #expect(throws: Refusal.self) { try channel.sendChat("") }
        #expect(refusal?.kind == .invalidArgument)
        #expect(refusal?.description == "chat text needs 1–\(WireLimits.chatTextLength) bytes of UTF-8")
    }

    @Test func aMessageWithoutItsGrantIsDenied() {
        var channel = MessageChannel()
        let refusal = #expect(throws: Refusal.self) { try channel.send(.chat("hi"), granted: []) }
        #expect(refusal?.kind == .denied)
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = Refusal(.limitReached, "4 files are already being sent", underlying: Cause())
        let two = Refusal(.limitReached, "4 files are already being sent")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != Refusal(.limitReached, "message ids exhausted in this session"))
        #expect(Refusal.Kind.invalidArgument.description == "invalid_argument")
    }
}
