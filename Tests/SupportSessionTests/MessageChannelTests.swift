// SPEC §15.4: numbering, acknowledgement, the window of 16, files in parts, refusals.
import Testing

@testable import SupportSession
import SupportWire
import SupportUtilities
import SupportVocabulary

@Suite struct MessageChannelTests {
    private static func chatPair() throws -> SessionPair {
        var rules = FeatureRules.deviceDefault
        rules.set(.allow, for: .chat)
        rules.set(.allow, for: .fileShare)
        var pair = SessionPair.v11(rules: rules)
        try pair.startSession(features: [Feature(.chat), Feature(.fileShare)])
        return pair
    }

    @Test func chatBothWaysIsDeliveredAndAcknowledgedInOrder() throws {
        var pair = try Self.chatPair()
        pair.fromDevice(try pair.device.sendChat("hi"))
        pair.fromSupporter(try pair.supporter.sendChat("hello, how can I help?"))
        #expect(pair.supporterReports.contains(.messageReceived(.chat(id: 1, text: "hi"))))
        #expect(pair.deviceReports.contains(.messageDelivered(id: 1)))
        #expect(pair.deviceReports.contains(.messageReceived(.chat(id: 1, text: "hello, how can I help?"))))
        #expect(pair.supporterReports.contains(.messageDelivered(id: 1)))
        #expect(pair.device.channel.isIdle && pair.supporter.channel.isIdle)
        #expect(pair.violations.isEmpty)
    }

    @Test func theWindowHoldsSixteenAndTheQueueSixtyFour() throws {
        var channel = MessageChannel()
        var sent: [SessionMessage] = []
        for index in 0..<(16 + MessageChannel.queueLimit) { sent += try channel.sendChat("m\(index)") }
        #expect(sent.count == WireLimits.messageWindow)
        #expect(throws: MessageChannel.Refusal.self) { try channel.sendChat("one too many") }
        let (outcome, released) = channel.acknowledged(MessageAck(messageID: 1))
        #expect(outcome == .delivered(id: 1))
        #expect(released.map(\.messageID) == [17])
        // An ack for nothing sent is the peer's error.
        #expect(channel.acknowledged(MessageAck(messageID: 999)).0 == .violation("MESSAGE_ACK for message 999, which was never sent (SPEC §15.4)"))
        #expect(channel.acknowledged(MessageAck(messageID: 0)).0 != .delivered(id: 0))
    }

    @Test func aFileArrivesWholeInPartsWithProgress() throws {
        var pair = try Self.chatPair()
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (sent, actions) = try pair.device.send(.file(name: "log.txt", contentType: "text/plain", bytes: bytes))
        let id = try #require(sent)
        pair.fromDevice(actions)
        let files = pair.supporterReports.compactMap { report -> [UInt8]? in
            if case .messageReceived(.file(let transfer, "log.txt", "text/plain", let received)) = report, transfer == id {
                return received
            }
            return nil
        }
        #expect(files == [bytes])
        let progress = pair.supporterReports.filter {
            if case .messageReceived(.fileProgress) = $0 { true } else { false }
        }
        #expect(progress.count == (bytes.count + pair.device.channel.partSize - 1) / pair.device.channel.partSize - 1)
        #expect(pair.violations.isEmpty)
    }

    @Test func theSupporterLearnsWhenTheDeviceHasItsWholeFile() throws {
        var pair = try Self.chatPair()
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let (sent, actions) = try pair.supporter.send(.file(name: "manual.pdf", contentType: nil, bytes: bytes))
        let transfer = try #require(sent)
        pair.fromSupporter(actions)
        #expect(pair.deviceReports.contains { if case .messageReceived(.file(transfer, "manual.pdf", nil, bytes)) = $0 { true } else { false } })
        // Once, after the last part's acknowledgement (every part is also delivered as a message).
        #expect(pair.supporterReports.filter { $0 == .fileDelivered(transferID: transfer) }.count == 1)
        #expect(pair.supporterReports.last { if case .messageDelivered = $0 { true } else { false } } != nil)
        #expect(pair.violations.isEmpty)
    }

    @Test func aRefusedPartEndsTheTransferAndSaysSo() {
        var channel = MessageChannel()
        let bytes = [UInt8](repeating: 1, count: channel.partSize * 3)
        guard let (transfer, parts) = try? channel.sendFile(name: "big", contentType: nil, bytes: bytes) else {
            Issue.record("not sent")
            return
        }
        #expect(parts.count == 3)
        let steps = channel.handle(.messageAck(MessageAck(messageID: parts[0].messageID, reason: .messageRefused)), granted: [])
        #expect(steps.contains(.transferRefused(transferID: transfer, reason: .messageRefused)))
        // The last part's acknowledgement that crossed the refusal says nothing more of the transfer.
        let late = channel.handle(.messageAck(MessageAck(messageID: parts[2].messageID)), granted: [])
        #expect(!late.contains(.transferDelivered(transferID: transfer)))
    }

    @Test func refusalsAreAcknowledgedWithTheReasonAndTheSessionGoesOn() {
        var channel = MessageChannel()
        let granted: FeatureSet = [Feature(.chat)]
        // Not granted: feature_denied.
        let file = SessionMessage(
            messageID: 1, kind: .filePart, body: [1], transferID: 1, fileName: "f", fileSize: 1, offset: 0)
        #expect(channel.received(file, granted: granted).ack?.reason == .featureDenied)
        // Chat that is not UTF-8: message_refused.
        let bad = SessionMessage(messageID: 2, kind: .chat, body: [0xFF, 0xFE])
        #expect(channel.received(bad, granted: granted).ack?.reason == .messageRefused)
        // A repeat is acknowledged again, not delivered twice.
        let repeatReceipt = channel.received(SessionMessage.chat(id: 2, text: "x"), granted: granted)
        #expect(repeatReceipt.ack == MessageAck(messageID: 2) && repeatReceipt.delivery == nil)
        // A gap breaks the numbering rule.
        #expect(channel.received(SessionMessage.chat(id: 9, text: "x"), granted: granted).violation != nil)
    }

    @Test func fileBytesGrowInPlaceSoAssemblingAFileIsLinear() {
        var channel = MessageChannel()
        let granted: FeatureSet = [Feature(.fileShare)]
        let part = [UInt8](repeating: 0x5A, count: 4096)
        let parts = 4096  // 16 MiB
        var storages: Set<UInt> = []
        for index in 0..<parts {
            let message = SessionMessage(
                messageID: UInt32(index + 1), kind: .filePart, body: part, transferID: 1,
                fileName: index == 0 ? "log.txt" : nil, fileSize: index == 0 ? UInt64(parts * part.count) : nil,
                offset: UInt64(index * part.count))
            let receipt = channel.received(message, granted: granted)
            #expect(receipt.ack?.reason == .success)
            if let storage = channel.incomingStorage(of: 1) { storages.insert(UInt(bitPattern: storage)) }
            if index == parts - 1, case .file(_, _, _, let bytes) = receipt.delivery {
                #expect(bytes.count == parts * part.count)
            }
        }
        // Growth in place moves the bytes only when the capacity doubles (about log2(4096) times); a copy per part
        // would give (nearly) every part storage of its own.
        #expect(storages.count < 64, "the file's bytes moved \(storages.count) times in \(parts) parts")
    }

    @Test func theSupporterMachineAssemblesAFileInPlaceToo() throws {
        var pair = try Self.chatPair()
        let partSize = pair.supporter.channel.partSize
        let parts = Int(WireLimits.largestFileSize) / partSize
        var storages: Set<UInt> = []
        for index in 0..<parts {
            let message = SessionMessage(
                messageID: UInt32(index + 1), kind: .filePart, body: [UInt8](repeating: 7, count: partSize),
                transferID: 9, fileName: index == 0 ? "big.bin" : nil,
                fileSize: index == 0 ? UInt64(parts * partSize) : nil, offset: UInt64(index * partSize))
            _ = pair.supporter.received(.sessionMessage(message), now: .seconds(100)) { _ in
                .refuse(.internalError, text: nil, retryAfterMilliseconds: nil)
            }
            if let storage = pair.supporter.channel.incomingStorage(of: 9) { storages.insert(UInt(bitPattern: storage)) }
        }
        #expect(!storages.isEmpty, "no part was taken")
        #expect(storages.count < 24, "the file's bytes moved \(storages.count) times in \(parts) parts")
    }

    @Test func aFileOverSixteenMebibytesOrOutOfOrderIsRefused() {
        var channel = MessageChannel()
        let granted: FeatureSet = [Feature(.fileShare)]
        let huge = SessionMessage(
            messageID: 1, kind: .filePart, body: [1], transferID: 1, fileName: "f", fileSize: 16_777_217, offset: 0)
        #expect(channel.received(huge, granted: granted).ack?.reason == .messageRefused)
        let orphan = SessionMessage(messageID: 2, kind: .filePart, body: [1], transferID: 7, offset: 10)
        #expect(channel.received(orphan, granted: granted).ack?.reason == .messageRefused)
        var sender = MessageChannel()
        #expect(throws: MessageChannel.Refusal.self) {
            try sender.sendFile(name: "big", contentType: nil, bytes: [UInt8](repeating: 0, count: 16_777_217))
        }
    }

    @Test func undeliveredMessagesAreReportedWhenTheSessionEnds() throws {
        var pair = try Self.chatPair()
        // The supporter's chat is sent, but the session ends before the ack comes back: hold frames in flight.
        let actions = try pair.supporter.sendChat("are you there?")
        #expect(actions.count == 1)
        pair.fromSupporter(try pair.supporter.end())
        #expect(pair.supporterReports.contains(.messagesUndelivered(MessageChannel.Undelivered(sent: [1], unsent: 0))))
    }

    @Test func aRevokedGrantWithdrawsQueuedMessagesAndIdsOnTheWireNeverSkip() throws {
        var channel = MessageChannel()
        var granted: FeatureSet = [Feature(.chat), Feature(.appMessages)]
        var wire: [SessionMessage] = []
        for index in 0..<18 { wire += try channel.send(.chat("c\(index)"), granted: granted).messages }
        #expect(wire.count == 16)  // 2 chats wait in the queue
        granted = [Feature(.appMessages)]
        #expect(channel.withdraw(needing: .chat) == MessageChannel.Undelivered(sent: [], unsent: 2))
        wire += try channel.send(.application(contentType: "x/y", body: [1]), granted: granted).messages
        for step in channel.handle(.messageAck(MessageAck(messageID: 1)), granted: granted) {
            if case .send(.sessionMessage(let message)) = step { wire.append(message) }
        }
        #expect(wire.map(\.messageID) == Array(1...17))
        #expect(wire.last?.kind == .application)
    }

    @Test func aFileAnnouncedHugeReservesNothing() {
        var channel = MessageChannel()
        let part = SessionMessage(
            messageID: 1, kind: .filePart, body: [1], transferID: 1, fileName: "f", fileSize: 16_777_216, offset: 0)
        _ = channel.received(part, granted: [Feature(.fileShare)])
        // Nothing to observe but that this returns at once; the receipt is progress of 1 byte.
        #expect(channel.lastReceivedID == 1)
    }
}
