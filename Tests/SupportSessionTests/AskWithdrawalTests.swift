// SPEC §15.3 (revision 1.2, extension ask_withdraw): the supporter withdraws a pending feature ask with FEATURE_WITHDRAW.
import Testing

@testable import SupportSession
import SupportWire
import SupportVocabulary

@Suite struct AskWithdrawalTests {
    /// A pair in an active session whose device prompts its user for chat (ask id 1 pending).
    static func askedForChat() throws -> SessionPair {
        var pair = SessionPair.v11()
        try pair.startSession(features: [])
        pair.fromSupporter(try pair.supporter.askFeature(.chat, text: "to chat"))
        #expect(pair.deviceReports.last == .featureRequested(FeatureAsk(askID: 1, feature: .chat, text: "to chat")))
        return pair
    }

    @Test func aWithdrawnAskEndsRefusedAbortedBySupporterOnBothSides() throws {
        var pair = try Self.askedForChat()
        let (askID, actions) = try pair.supporter.withdrawAsk(.chat)
        #expect(askID == 1)
        #expect(actions == [.send(.featureWithdraw(FeatureWithdraw(askID: 1)))])
        #expect(pair.supporter.pendingAsks[1] == .chat, "pending until the device answers")
        pair.fromSupporter(actions)
        #expect(pair.deviceReports.last == .featureRefused(.chat, reason: .abortedBySupporter), "the prompt goes")
        #expect(pair.device.featureAsks.isEmpty)
        #expect(pair.device.nextDeadline == nil, "no prompt timer is left")
        #expect(pair.supporterReports.last == .featureRefused(.chat, reason: .abortedBySupporter))
        #expect(pair.supporter.pendingAsks.isEmpty && pair.supporter.withdrawnAsks.isEmpty)
        #expect(!pair.supporter.granted.contains(.chat))
        // A late answer from the user counts for nothing; the feature may be asked for again.
        #expect(pair.device.answerFeature(askID: 1, grant: true).isEmpty)
        pair.fromSupporter(try pair.supporter.askFeature(.chat))
        #expect(pair.deviceReports.last == .featureRequested(FeatureAsk(askID: 2, feature: .chat, text: nil)))
        #expect(pair.violations.isEmpty)
    }

    @Test func aGrantThatCrossedTheWithdrawalStands() throws {
        var pair = try Self.askedForChat()
        let (_, withdrawal) = try pair.supporter.withdrawAsk(.chat)
        // The user allowed before the withdrawal arrived: the grant reaches the supporter first.
        pair.fromDevice(pair.device.answerFeature(askID: 1, grant: true))
        #expect(pair.supporterReports.last == .featureGranted(.chat))
        let before = pair.deviceReports.count
        pair.fromSupporter(withdrawal)
        #expect(pair.deviceReports.count == before, "a withdrawal for an answered ask changes nothing")
        #expect(pair.device.granted.contains(.chat) && pair.supporter.granted.contains(.chat))
        #expect(pair.violations.isEmpty)
    }

    @Test func withdrawingIsRefusedWithoutAPendingAskTwiceOrWithoutTheExtension() throws {
        var pair = try Self.askedForChat()
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.withdrawAsk(.fileShare) }
        _ = try pair.supporter.withdrawAsk(.chat)
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.withdrawAsk(.chat) }

        var old = SessionPair.v11(extensions: [.accessControl, .sessionMessages, .sessionResume])
        try old.startSession(features: [])
        old.fromSupporter(try old.supporter.askFeature(.chat))
        do {
            _ = try old.supporter.withdrawAsk(.chat)
            Issue.record("withdrew without ask_withdraw in effect")
        } catch {
            #expect(error.message.contains("ask_withdraw"), "\(error.message)")
        }
    }

    @Test func aDeviceTreatsAWithdrawalOfAnAskNeverMadeAsAProtocolError() throws {
        var pair = try Self.askedForChat()
        let actions = pair.device.received(.featureWithdraw(FeatureWithdraw(askID: 9)), now: pair.now, call: .idle)
        #expect(actions.contains { if case .protocolViolation = $0 { true } else { false } })
    }

    @Test func aWithdrawalThatCrossedTheSessionsEndIsDiscarded() throws {
        var pair = try Self.askedForChat()
        pair.fromSupporter(try pair.supporter.end())
        let actions = pair.device.received(.featureWithdraw(FeatureWithdraw(askID: 1)), now: pair.now, call: .idle)
        #expect(actions.isEmpty)
    }
}
