// SPEC §15.3: device and code rules, the stricter wins; grants at the request and during the session; revocation.
import Testing

@testable import SupportSession

extension SessionPair {
    /// A pair with 1.1 extensions in effect on the link, the device having these capabilities and rules.
    static func v11(
        capabilities: FeatureSet = [Feature(.screenShare), Feature(.voip), Feature(.chat), Feature(.fileShare),
            Feature(.remoteControl), Feature(.appMessages)],
        rules: FeatureRules = .deviceDefault, extensions: ProtocolExtensions = .all
    ) -> SessionPair {
        var pair = SessionPair()
        pair.device = DeviceSessionMachine(capabilities: capabilities, rules: rules)
        let secrets = Mutex(0)
        pair.supporter = SupporterSessionMachine(secretSource: {
            let next = secrets.withLock { value -> Int in
                value += 1
                return value
            }
            return "secret-" + String(repeating: "x", count: 30) + "\(next)"
        })
        pair.device.linkOpened(extensions: extensions, peerMaxFrameSize: 16_384)
        pair.supporter.linkOpened(extensions: extensions, peerMaxFrameSize: 16_384)
        return pair
    }

    /// Registers, requests `features` under `codeRules`, and answers with `grant`.
    mutating func startSession(
        features: FeatureSet, codeRules: FeatureRules = .codeDefault, allow: Bool = true, grant: FeatureSet? = nil
    ) throws {
        fromDevice(try device.register(code: "c", token: "t"))
        fromSupporter(
            try supporter.requestConnection(
                supporterName: "Alice", type: .screenShare, features: features, now: now, codeRules: codeRules,
                mediaDescriptor: [1, 2, 3]))
        fromDevice(device.answer(requestID: 1, allow: allow, grant: grant))
    }
}

import Synchronization
import SupportWire
import SupportUtilities
import SupportVocabulary

@Suite struct AccessControlTests {
    @Test func theStricterRuleWinsAndTheUserChoosesWhatToConfirm() throws {
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .chat)
        rules.set(.deny, for: .remoteControl)
        var pair = SessionPair.v11(rules: rules)
        var codeRules = FeatureRules.codeDefault
        codeRules.set(.confirm, for: .chat)  // the code makes chat need confirmation although the device allows it
        codeRules.set(.deny, for: .voip)
        try pair.startSession(
            features: [Feature(.chat), Feature(.voip), Feature(.remoteControl), Feature(.fileShare)],
            codeRules: codeRules, grant: [Feature(.chat)])
        guard case .connectionRequest(let info)? = pair.deviceReports.first(where: {
            if case .connectionRequest = $0 { true } else { false }
        }) else {
            Issue.record("no request reported")
            return
        }
        // voip never reached the device: the code denies it.
        #expect(!info.requestedFeatures.contains(.voip))
        #expect(pair.supporterReports.contains(.featuresDenied([Feature(.voip)])))
        #expect(info.featuresToConfirm.map(\.id) == [.screenShare, .fileShare, .chat])
        #expect(info.deniedFeatures.map(\.id) == [.remoteControl])
        // The user kept chat only: the grant in effect is chat.
        #expect(pair.device.granted.map(\.id) == [.chat])
        #expect(pair.supporter.granted.map(\.id) == [.chat])
        #expect(pair.supporterReports.contains(.grantInEffect([Feature(.chat)])))
        #expect(
            pair.deviceReports.contains(
                .supporterConnected(
                    supporterName: "Alice", connectionType: .screenShare,
                    details: SessionDetails(grantedFeatures: [Feature(.chat)], mediaDescriptor: [1, 2, 3]))))
        #expect(pair.violations.isEmpty)
    }

    @Test func askDuringTheSessionByRule() throws {
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .fileShare)
        rules.set(.deny, for: .remoteControl)
        var pair = SessionPair.v11(rules: rules)
        try pair.startSession(features: [])
        // allow: granted at once, no prompt.
        pair.fromSupporter(try pair.supporter.askFeature(.fileShare))
        #expect(pair.supporter.granted.contains(.fileShare))
        #expect(pair.deviceReports.last == .featureGranted(.fileShare))
        // deny: refused without a prompt.
        pair.fromSupporter(try pair.supporter.askFeature(.remoteControl))
        #expect(pair.supporterReports.last == .featureRefused(.remoteControl, reason: .featureDenied))
        // a capability the device lacks: unsupported_feature.
        pair.fromSupporter(try pair.supporter.askFeature(.arPointer))
        #expect(pair.supporterReports.last == .featureRefused(.arPointer, reason: .unsupportedFeature))
        // confirm: the user is asked; a grant counts once.
        pair.fromSupporter(try pair.supporter.askFeature(.chat, text: "to chat"))
        #expect(pair.deviceReports.last == .featureRequested(FeatureAsk(askID: 4, feature: .chat, text: "to chat")))
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.askFeature(.chat) }
        pair.fromDevice(pair.device.answerFeature(askID: 4, grant: true))
        #expect(pair.device.answerFeature(askID: 4, grant: false).isEmpty)
        #expect(pair.supporterReports.last == .featureGranted(.chat))
        #expect(pair.supporter.granted.contains(.chat))
        #expect(pair.violations.isEmpty)
    }

    @Test func aCodeDenyIsRefusedLocallyAndAnUnansweredAskTimesOut() throws {
        var pair = SessionPair.v11()
        try pair.startSession(features: [])
        var codeRules = FeatureRules.codeDefault
        codeRules.set(.deny, for: .chat)
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.askFeature(.chat, codeRules: codeRules) }
        pair.fromSupporter(try pair.supporter.askFeature(.fileShare))
        #expect(pair.device.nextDeadline == pair.now + .seconds(30))
        pair.fromDevice(pair.device.tick(now: pair.now + .seconds(30)))
        #expect(pair.supporterReports.last == .featureRefused(.fileShare, reason: .requestTimedOut))
    }

    @Test func theDeviceRevokesAGrantAndItsMessagesAreRefusedFromThen() throws {
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .chat)
        var pair = SessionPair.v11(rules: rules)
        try pair.startSession(features: [Feature(.chat)])
        pair.fromSupporter(try pair.supporter.sendChat("hello"))
        #expect(pair.deviceReports.contains(.messageReceived(.chat(id: 1, text: "hello"))))
        pair.fromDevice(try pair.device.revoke(.chat))
        #expect(pair.supporterReports.last == .featureRevoked(.chat))
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.sendChat("again") }
        #expect(throws: DeviceSessionMachine.Refusal.self) { try pair.device.revoke(.chat) }
        #expect(pair.violations.isEmpty)
    }

    @Test func withoutAccessControlNothingNewIsSentAndFeatureFramesAreProtocolErrors() throws {
        var pair = SessionPair.v11(extensions: .none)
        try pair.startSession(features: [Feature(.voip)])
        guard case .active = pair.supporter.state else {
            Issue.record("not active")
            return
        }
        #expect(pair.supporter.granted.isEmpty)
        #expect(throws: SupporterSessionMachine.Refusal.self) { try pair.supporter.askFeature(.chat) }
        let actions = pair.device.received(
            .featureRequest(FeatureRequest(askID: 1, feature: .chat)), now: pair.now, call: .idle)
        #expect(actions.contains { if case .protocolViolation = $0 { true } else { false } })
    }

    @Test func aDeviceRefusesAsksThatBreakTheRules() throws {
        var pair = SessionPair.v11()
        try pair.startSession(features: [])
        func violation(_ request: FeatureRequest) -> Bool {
            pair.device.received(.featureRequest(request), now: pair.now, call: .idle).contains {
                if case .protocolViolation = $0 { true } else { false }
            }
        }
        #expect(!violation(FeatureRequest(askID: 5, feature: .chat)))  // shown to the user
        #expect(violation(FeatureRequest(askID: 5, feature: .fileShare)))  // ids increase
        #expect(violation(FeatureRequest(askID: 6, feature: .chat)))  // one ask per feature at a time
    }
}
