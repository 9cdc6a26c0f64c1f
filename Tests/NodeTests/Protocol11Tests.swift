import DeviceNode
import SupporterNode
import Testing
import SupportSession
import SupportWire
import SampleAppModel
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary
import SupporterModel

extension NodeIntegration {
    /// Protocol 1.1 over real TLS between the two nodes: negotiation both ways, access control, chat, files, and
    /// every 1.0 flow between a 1.0 peer and a 1.1 peer.
    @Suite(.serialized) struct Protocol11Tests {
        private static let capabilities: FeatureSet = [
            Feature(.screenShare), Feature(.voip), Feature(.chat), Feature(.fileShare), Feature(.remoteControl),
        ]

        /// Joins, sends a request for `features`, allows it (granting what needs confirmation), returns the device.
        private static func activeSession(
            _ harness: NodeHarness, code: String, rules: FeatureRules, features: FeatureSet,
            extensions: ProtocolExtensions = .all, media: [UInt8]? = nil
        ) async throws -> JoinedDevice {
            let device = try JoinedDevice(
                node: try harness.device(
                    harness.deviceConfiguration(capabilities: capabilities, extensions: extensions, rules: rules)),
                code: code)
            #expect(await device.online())
            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Alice", type: .screenShare, features: features, mediaDescriptor: media)
            let request = try #require(await device.request())
            device.session.answer(requestID: request.requestID, allow: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            return device
        }

        /// Issue 24: a code's default media descriptor reaches the app when the request names none; a request's own
        /// wins over it.
        @Test func aCodesMediaDescriptorIsTheDefaultAndARequestsOwnWins() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode(
                type: .remoteSupport, details: SessionCodeDetails(mediaDescriptor: Array("room=default".utf8))
            ).code
            for (own, expected) in [(nil, "room=default"), (Array("room=own".utf8), "room=own")] {
                let device = try await Self.activeSession(
                    harness, code: code, rules: .deviceDefault, features: [Feature(.chat)], media: own)
                let connected = await device.event { if case .supporterConnected = $0 { true } else { false } }
                guard case .supporterConnected(_, _, let details)? = connected else {
                    Issue.record("not connected")
                    return
                }
                #expect(details.mediaDescriptor == Array(expected.utf8))
                try await harness.supporter.endSession(code: code)
                #expect(await device.event { if case .supporterDisconnected = $0 { true } else { false } } != nil)
                device.session.leave()
                #expect(await waitUntil { harness.supporter.code(code)?.state == .open })
            }
        }

        /// Revision 1.2 (ask_withdraw): the supporter withdraws an ask its user has not answered; the app's prompt
        /// goes (the SDK reports the ask refused `aborted_by_supporter`), and the node audits both steps. A device
        /// without the extension keeps its ask: the withdrawal is refused, saying why.
        @Test func aSupporterWithdrawsAnAskTheUserHasNotAnswered() async throws {
            let harness = try NodeHarness(extensions: [.accessControl, .sessionMessages, .askWithdraw])
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try await Self.activeSession(harness, code: code, rules: .deviceDefault, features: [])
            try await harness.supporter.askFeature(code: code, feature: .fileShare, text: "to send your logs")
            #expect(await device.event { if case .featureRequested = $0 { true } else { false } } != nil)
            try await harness.supporter.withdrawFeatureAsk(code: code, feature: .fileShare)
            #expect(await device.event { $0 == .featureRefused(.fileShare, reason: .abortedBySupporter) } != nil)
            #expect(
                await harness.supporterEvent(on: code) { $0 == .featureRefused(.fileShare, reason: .abortedBySupporter) }
                    != nil)
            await #expect(throws: SupporterNodeError.self, "nothing is pending any more") {
                try await harness.supporter.withdrawFeatureAsk(code: code, feature: .fileShare)
            }
            let rows = try harness.supporter.auditEvents(code: code)
            let withdrawn = try #require(rows.first { $0.kind == .featureAskWithdrawn })
            #expect(withdrawn.details["feature"] == "file_share" && withdrawn.details["ask_id"] == "1", "\(withdrawn)")
            let refused = try #require(rows.last { $0.kind == .featureRefused })
            #expect(refused.details["reason"] == "aborted_by_supporter" && refused.id > withdrawn.id, "\(refused)")
            device.session.leave()

            // A device of revision 1.1 (no ask_withdraw): its ask stays; the node says why it cannot withdraw it.
            let other = try await harness.supporter.createCode().code
            let old = try await Self.activeSession(
                harness, code: other, rules: .deviceDefault, features: [],
                extensions: [.accessControl, .sessionMessages])
            try await harness.supporter.askFeature(code: other, feature: .fileShare)
            #expect(await old.event { if case .featureRequested = $0 { true } else { false } } != nil)
            do {
                try await harness.supporter.withdrawFeatureAsk(code: other, feature: .fileShare)
                Issue.record("withdrew on a 1.1 device")
            } catch {
                #expect(error.kind == .conflict && error.message.contains("ask_withdraw"), "\(error)")
            }
            old.session.leave()
        }

        @Test func codeRulesAndDeviceRulesDecideTheGrantAndChatFlowsBothWays() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            var codeRules = FeatureRules.codeDefault
            codeRules.set(.deny, for: .remoteControl)
            try await harness.supporter.setFeatureRules(code, codeRules)
            var rules = FeatureRules.deviceDefault
            rules.set(.allow, for: .chat)
            let device = try await Self.activeSession(
                harness, code: code, rules: rules, features: [Feature(.chat), Feature(.remoteControl)],
                media: Array("room=42;token=abc".utf8))
            // remote_control never reached the device: the code denies it.
            #expect(
                await harness.supporterEvent(on: code) { $0 == .featuresDenied([Feature(.remoteControl)]) } != nil)
            let connected = await device.event { if case .supporterConnected = $0 { true } else { false } }
            guard case .supporterConnected(_, _, let details)? = connected else {
                Issue.record("not connected")
                return
            }
            #expect(details.grantedFeatures?.contains(.chat) == true)
            #expect(details.grantedFeatures?.contains(.remoteControl) == false)
            #expect(details.mediaDescriptor == Array("room=42;token=abc".utf8))

            try await harness.supporter.sendChat(code: code, text: "Hello from support")
            #expect(await device.event { $0 == .messageReceived(.chat(id: 1, text: "Hello from support")) } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .messageDelivered(id: 1) } != nil)
            try await device.session.sendChat("Hi! My printer is stuck")
            #expect(
                await harness.supporterEvent(on: code) {
                    $0 == .messageReceived(.chat(id: 1, text: "Hi! My printer is stuck"))
                } != nil)
            #expect(await device.event { $0 == .messageDelivered(id: 1) } != nil)

            // An ask the code's rules deny is refused on the node, never reaches the device, and is audited.
            await #expect(throws: SupporterNodeError.self) {
                try await harness.supporter.askFeature(code: code, feature: .remoteControl)
            }
            let denials = try harness.supporter.auditEvents(code: code).filter { $0.kind.rawValue == "feature_denied" }
            #expect(denials.count == 2, "\(denials)")
            // file_share needs the user's confirmation during the session; the user grants it, then a file arrives.
            try await harness.supporter.askFeature(code: code, feature: .fileShare, text: "to send your logs")
            let asked = await device.event { if case .featureRequested = $0 { true } else { false } }
            guard case .featureRequested(let ask)? = asked else {
                Issue.record("no feature ask")
                return
            }
            device.session.answerFeature(askID: ask.askID, grant: true)
            #expect(await harness.supporterEvent(on: code) { $0 == .featureGranted(.fileShare) } != nil)
            let log = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
            try await device.session.sendFile(name: "app.log", bytes: log)
            #expect(
                await harness.supporterEvent(on: code) {
                    if case .messageReceived(.file(_, "app.log", _, let bytes)) = $0 { bytes == log } else { false }
                } != nil)
            // Each message is in the trail without its words (issue 24); the words and the file are kept apart.
            let rows = try harness.supporter.auditEvents(code: code)
            let sent = try #require(rows.first { $0.kind == .messageSent })
            #expect(sent.details["message_id"] == "1" && sent.details["size"] == "18", "\(sent)")
            #expect(!sent.details.values.contains { $0.contains("Hello") }, "no content in the audit trail")
            #expect(rows.first { $0.kind == .messageDelivered }?.details["message_id"] == "1")
            let received = try #require(rows.first { $0.kind == .messageReceived })
            #expect(rows.first { $0.kind == .featureAsked }?.details["feature"] == "file_share")
            let file = try #require(rows.first { $0.kind == .fileReceived })
            let contents = try harness.supporter.sessionContents(auditIDs: [sent.id, received.id])
            #expect(contents[sent.id]?.content.body == .chat("Hello from support"))
            #expect(contents[received.id]?.content.body == .chat("Hi! My printer is stuck"))
            #expect(try harness.supporter.sessionFile(auditID: file.id)?.content.body == .file(name: "app.log", contentType: nil, bytes: log))
            #expect(try harness.supporter.sessionFile(auditID: sent.id) == nil, "a chat line is no file")
            // A file the other way: the supporter's reaches the app whole, recorded with its sender and kept.
            let manual = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            let transfer = try await harness.supporter.sendFile(
                code: code, name: "manual.pdf", contentType: "application/pdf", bytes: manual)
            #expect(
                await device.event {
                    if case .messageReceived(.file(transfer, "manual.pdf", "application/pdf", let bytes)) = $0 {
                        bytes == manual
                    } else { false }
                } != nil)
            #expect(await harness.supporterEvent(on: code) { $0 == .fileDelivered(transferID: transfer) } != nil)
            #expect(try harness.supporter.auditEvents(code: code).contains {
                $0.kind == .fileDelivered && $0.details["transfer_id"] == "\(transfer)"
            })
            let outgoing = try #require(
                try harness.supporter.auditEvents(code: code).last { $0.kind == .messageSent && $0.details["kind"] == "file" })
            #expect(outgoing.details["transfer_id"] == "\(transfer)" && outgoing.details["size"] == "70000")
            #expect(
                try harness.supporter.sessionFile(auditID: outgoing.id)?.content.body
                    == .file(name: "manual.pdf", contentType: "application/pdf", bytes: manual))

            // The device revokes chat: the supporter's next chat is refused locally.
            try await device.session.revoke(.chat)
            #expect(await harness.supporterEvent(on: code) { $0 == .featureRevoked(.chat) } != nil)
            await #expect(throws: SupporterNodeError.self) {
                try await harness.supporter.sendChat(code: code, text: "still there?")
            }
            // Every grant, refusal and revocation is in the audit trail.
            let kinds = try harness.supporter.auditEvents(code: code).map(\.kind.rawValue)
            for kind in ["feature_denied", "features_granted", "feature_granted", "feature_revoked"] {
                #expect(kinds.contains(kind), "audit lacks \(kind): \(kinds)")
            }
        }

        @Test(arguments: [
            (UInt8(0), UInt8(3)),  // a 1.0 device, a 1.1 node
            (UInt8(7), UInt8(0)),  // a 1.1 device, a 1.0 node
        ])
        func aOneZeroPeerAndAOneOnePeerCompleteEveryOneZeroFlow(deviceBits: UInt8, nodeBits: UInt8) async throws {
            let harness = try NodeHarness(extensions: ProtocolExtensions(rawValue: nodeBits))
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let device = try await Self.activeSession(
                harness, code: code, rules: .deviceDefault, features: [Feature(.voip)],
                extensions: ProtocolExtensions(rawValue: deviceBits))
            let connected = await device.event { if case .supporterConnected = $0 { true } else { false } }
            guard case .supporterConnected(_, _, let details)? = connected else {
                Issue.record("not connected")
                return
            }
            #expect(details == SessionDetails())  // nothing of 1.1 was in effect
            #expect(await device.event { $0 == .voipStateChanged(.started) } != nil)
            await #expect(throws: DeviceSessionError.self) { try await device.session.sendChat("hello?") }
            await #expect(throws: SupporterNodeError.self) {
                try await harness.supporter.sendChat(code: code, text: "hello?")
            }
            device.session.leave()
            #expect(await harness.supporterEvent(on: code) { $0 == .ended(reason: .endedByDevice, text: nil) } != nil)
        }
    }
}
