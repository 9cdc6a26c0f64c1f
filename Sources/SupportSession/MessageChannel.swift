public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// One side's in-session message channel (SPEC §15.4): numbering, the window of 16 unacknowledged messages, a bounded
/// local queue, files cut into parts as the window opens, and the receiving side's order, grant and file rules.
///
/// A pure value used by both session machines; it knows nothing of sockets or time.
public struct MessageChannel: Sendable, Hashable {
    /// Messages the application may have queued beyond the window before a send is refused.
    public static let queueLimit = 64
    /// Files being received at once; a further offset-0 part is refused.
    public static let incomingFileLimit = 2

    /// What the receiving side does with one SESSION_MESSAGE.
    public struct Receipt: Sendable, Hashable {
        /// The acknowledgement to send (nil for a repeat: it is acknowledged again by `repeatAck`).
        public var ack: MessageAck?
        /// What to tell the application, if anything.
        public var delivery: Delivery?
        /// Set when the peer broke the numbering rule: close with `protocol_error`.
        public var violation: String?
    }

    /// A message handed to the application.
    public enum Delivery: Sendable, Hashable {
        case chat(id: UInt32, text: String)
        case application(id: UInt32, contentType: String, body: [UInt8])
        /// A part of a file arrived: `received` of `total` bytes.
        case fileProgress(transferID: UInt32, name: String, received: UInt64, total: UInt64)
        /// The whole file arrived.
        case file(transferID: UInt32, name: String, contentType: String?, bytes: [UInt8])
    }

    /// What an acknowledgement meant to the sending side.
    public enum AckOutcome: Sendable, Hashable {
        case delivered(id: UInt32)
        case refused(id: UInt32, reason: ReasonCode, text: String?)
        /// An acknowledgement again for a message already settled (after a resume): nothing to report.
        case repeated
        /// An ack for nothing outstanding: the peer broke §15.4.
        case violation(String)
    }

    private struct OutgoingFile: Sendable, Hashable {
        let transferID: UInt32
        let name: String
        let contentType: String?
        let bytes: [UInt8]
        var offset: Int
    }

    private struct IncomingFile: Sendable, Hashable {
        let name: String
        let contentType: String?
        let size: UInt64
        var bytes: [UInt8]
    }

    /// The largest body of one file part, from the peer's announced maximum frame size.
    public var partSize: Int

    private var nextID: UInt32 = 1
    private var nextTransferID: UInt32 = 1
    /// Sent and not yet acknowledged, oldest first; at most ``WireLimits/messageWindow``.
    public private(set) var unacknowledged: [SessionMessage] = []
    /// Accepted from the application, not yet sent (window full); at most ``queueLimit``. Not numbered yet: a message
    /// gets its id when it goes out, so ids on the wire never skip one (SPEC §15.4), whatever is withdrawn.
    private var queued: [SessionMessage] = []
    private var outgoingFiles: [OutgoingFile] = []
    /// The id of the last message received from the peer (0: none).
    public private(set) var lastReceivedID: UInt32 = 0
    /// The id of the last message put on the wire (0: none); queued messages have higher ids.
    private var lastWireID: UInt32 = 0
    private var incomingFiles: [UInt32: IncomingFile] = [:]
    /// Our files' last parts on the wire and not yet acknowledged: message id → transfer id (at most the window).
    private var finalParts: [UInt32: UInt32] = [:]
    /// Taken over from a node that died: the ids already used both ways are unknown here, so the first message
    /// received sets where the peer's sequence is, and the peer's RESUME sets ours (SPEC §15.5).
    private var continuesUnknownSequence = false

    /// A channel whose file parts fit frames of `peerMaxFrameSize` payload bytes.
    public init(peerMaxFrameSize: Int = WireLimits.defaultMaxFrameSize) {
        partSize = Self.partSize(forPeerMaxFrameSize: peerMaxFrameSize)
    }

    /// Body bytes per file part for a peer that receives `maxFrameSize`-byte payloads: the frame minus room for the
    /// other fields, and at most what a `u16` field length holds.
    public static func partSize(forPeerMaxFrameSize maxFrameSize: Int) -> Int {
        min(max(maxFrameSize, WireLimits.defaultMaxFrameSize) - 512, Int(UInt16.max))
    }

    /// The last id the peer received from us is `id`: what the sender must resend after a resume (SPEC §15.5).
    public var lastSentID: UInt32 { nextID - 1 }

    /// Whether a chat line or application message sent now goes out at once: the window has room and nothing waits
    /// before it.
    public var sendsAtOnce: Bool { queued.isEmpty && unacknowledged.count < WireLimits.messageWindow }

    /// Whether anything is waiting to go out or to be acknowledged.
    public var isIdle: Bool { unacknowledged.isEmpty && queued.isEmpty && outgoingFiles.isEmpty }

    /// What an application sends.
    public enum Outgoing: Sendable, Hashable {
        case chat(String)
        case application(contentType: String, body: [UInt8])
        case file(name: String, contentType: String?, bytes: [UInt8])

        /// The feature that must be granted to send it.
        public var requiredFeature: Feature.ID {
            switch self {
            case .chat: .chat
            case .application: .appMessages
            case .file: .fileShare
            }
        }
    }

    /// One thing a session machine does for a SESSION_MESSAGE or MESSAGE_ACK (mapped to its own actions).
    public enum Step: Sendable, Hashable {
        case send(Message)
        case deliver(Delivery)
        case delivered(id: UInt32)
        case refused(id: UInt32, reason: ReasonCode, text: String?)
        /// The peer broke SPEC §15.4: close with `protocol_error`.
        case violation(String)
        /// Every part of our file `transferID` was acknowledged: the peer has the whole file.
        case transferDelivered(transferID: UInt32)
        /// The peer refused a part of our file `transferID` (the rest is not sent).
        case transferRefused(transferID: UInt32, reason: ReasonCode)
    }

    /// Queues `outgoing` if its feature is in `granted`; returns the file's transfer id (for a file) and the frames
    /// that may leave now. The machine checks first that a session is active with session messages in effect.
    public mutating func send(
        _ outgoing: Outgoing, granted: FeatureSet
    ) throws(Refusal) -> (transferID: UInt32?, messages: [SessionMessage]) {
        guard granted.contains(outgoing.requiredFeature) else {
            throw Refusal(.denied, "\(outgoing.requiredFeature) is not granted")
        }
        switch outgoing {
        case .chat(let text): return (nil, try sendChat(text))
        case .application(let type, let body): return (nil, try sendApplication(contentType: type, body: body))
        case .file(let name, let type, let bytes):
            let (id, messages) = try sendFile(name: name, contentType: type, bytes: bytes)
            return (id, messages)
        }
    }

    /// A SESSION_MESSAGE or MESSAGE_ACK arrived in an active session with `granted` in effect.
    public mutating func handle(_ message: Message, granted: FeatureSet) -> [Step] {
        switch message {
        case .sessionMessage(let incoming):
            let receipt = received(incoming, granted: granted)
            if let violation = receipt.violation { return [.violation(violation)] }
            var steps: [Step] = []
            if let delivery = receipt.delivery { steps.append(.deliver(delivery)) }
            if let ack = receipt.ack { steps.append(.send(.messageAck(ack))) }
            return steps
        case .messageAck(let ack):
            let refusedTransfer = unacknowledged.first { $0.messageID == ack.messageID && $0.kind == .filePart }?
                .transferID
            let (outcome, release) = acknowledged(ack)
            var first: [Step]
            switch outcome {
            case .violation(let text): return [.violation(text)]
            case .delivered(let id):
                first = [.delivered(id: id)]
                if let transfer = finalParts.removeValue(forKey: id) { first.append(.transferDelivered(transferID: transfer)) }
            case .refused(let id, let reason, let text):
                first = [.refused(id: id, reason: reason, text: text)]
                if let transfer = refusedTransfer {
                    finalParts = finalParts.filter { $0.value != transfer }
                    first.append(.transferRefused(transferID: transfer, reason: reason))
                }
            case .repeated: first = []
            }
            return first + release.map { .send(.sessionMessage($0)) }
        default:
            return []
        }
    }

    // MARK: sending

    /// Queues chat text; returns the frames that may go out now.
    public mutating func sendChat(_ text: String) throws(Refusal) -> [SessionMessage] {
        let body = Array(text.utf8)
        guard !body.isEmpty, body.count <= WireLimits.chatTextLength else {
            throw Refusal(.invalidArgument, "chat text needs 1–\(WireLimits.chatTextLength) bytes of UTF-8")
        }
        return try enqueue(kind: .chat, contentType: nil, body: body)
    }

    /// Queues an application message; returns the frames that may go out now.
    public mutating func sendApplication(contentType: String, body: [UInt8]) throws(Refusal) -> [SessionMessage] {
        guard (1...WireLimits.contentTypeLength).contains(contentType.utf8.count) else {
            throw Refusal(.invalidArgument, "a content type needs 1–\(WireLimits.contentTypeLength) bytes")
        }
        guard (1...partSize).contains(body.count) else {
            throw Refusal(.invalidArgument, "an application message needs 1–\(partSize) bytes")
        }
        return try enqueue(kind: .application, contentType: contentType, body: body)
    }

    /// Queues a file (at most 16 MiB), sent in parts as the window opens. Returns its transfer id and the frames that
    /// may go out now.
    public mutating func sendFile(
        name: String, contentType: String?, bytes: [UInt8]
    ) throws(Refusal) -> (transferID: UInt32, messages: [SessionMessage]) {
        guard (1...WireLimits.fileNameLength).contains(name.utf8.count) else {
            throw Refusal(.invalidArgument, "a file name needs 1–\(WireLimits.fileNameLength) bytes")
        }
        guard !bytes.isEmpty, UInt64(bytes.count) <= WireLimits.largestFileSize else {
            throw Refusal(.invalidArgument, "a file needs 1 byte to 16 MiB")
        }
        if let contentType, !(1...WireLimits.contentTypeLength).contains(contentType.utf8.count) {
            throw Refusal(.invalidArgument, "a content type needs 1–\(WireLimits.contentTypeLength) bytes")
        }
        guard outgoingFiles.count < 4 else { throw Refusal(.full, "4 files are already being sent") }
        let id = nextTransferID
        nextTransferID &+= 1
        outgoingFiles.append(
            OutgoingFile(transferID: id, name: name, contentType: contentType, bytes: bytes, offset: 0))
        return (id, release())
    }

    private mutating func enqueue(kind: MessageKind, contentType: String?, body: [UInt8]) throws(Refusal)
        -> [SessionMessage]
    {
        guard queued.count < Self.queueLimit else {
            throw Refusal(.full, "\(Self.queueLimit) messages are already waiting to be sent")
        }
        guard nextID < UInt32.max - UInt32(queued.count) else {
            throw Refusal(.limitReached, "message ids exhausted in this session")
        }
        queued.append(SessionMessage(messageID: 0, kind: kind, contentType: contentType, body: body))
        return release()
    }

    /// Moves queued messages, then file parts, into the window while it has room.
    private mutating func release() -> [SessionMessage] {
        var out: [SessionMessage] = []
        while unacknowledged.count < WireLimits.messageWindow {
            if !queued.isEmpty, nextID < UInt32.max {
                var message = queued.removeFirst()
                message.messageID = nextID
                nextID += 1
                unacknowledged.append(message)
                lastWireID = message.messageID
                out.append(message)
            } else if !outgoingFiles.isEmpty, nextID < UInt32.max {
                var file = outgoingFiles[0]
                let end = min(file.offset + partSize, file.bytes.count)
                let first = file.offset == 0
                let part = SessionMessage(
                    messageID: nextID, kind: .filePart, contentType: first ? file.contentType : nil,
                    body: Array(file.bytes[file.offset..<end]), transferID: file.transferID,
                    fileName: first ? file.name : nil, fileSize: first ? UInt64(file.bytes.count) : nil,
                    offset: UInt64(file.offset))
                lastWireID = nextID
                nextID += 1
                file.offset = end
                if end == file.bytes.count {
                    outgoingFiles.removeFirst()
                    finalParts[part.messageID] = file.transferID
                } else {
                    outgoingFiles[0] = file
                }
                unacknowledged.append(part)
                out.append(part)
            } else {
                break
            }
        }
        return out
    }

    /// An acknowledgement arrived. Returns what it meant and the frames the opened window lets out.
    public mutating func acknowledged(_ ack: MessageAck) -> (AckOutcome, [SessionMessage]) {
        guard let index = unacknowledged.firstIndex(where: { $0.messageID == ack.messageID }) else {
            // Settled already (a repeat after a resume) when it went out; never sent (or only queued): the peer's error.
            if ack.messageID > 0, ack.messageID <= lastWireID { return (.repeated, []) }
            return (.violation("MESSAGE_ACK for message \(ack.messageID), which was never sent (SPEC §15.4)"), [])
        }
        let message = unacknowledged.remove(at: index)
        if message.kind == .filePart, ack.reason != .success {
            outgoingFiles.removeAll { $0.transferID == message.transferID }  // the receiver ended that transfer
        }
        let outcome: AckOutcome =
            ack.reason == .success
            ? .delivered(id: ack.messageID) : .refused(id: ack.messageID, reason: ack.reason, text: ack.text)
        return (outcome, release())
    }

    /// A channel for a registration taken over from a node that died (see ``continuesUnknownSequence``).
    public mutating func continueAfterNodeLoss() { continuesUnknownSequence = true }

    /// After a resume (SPEC §15.5): the peer received every message up to `peerLast`, so those still waiting for an
    /// acknowledgement (lost with the link) are delivered; the others go out again, in order, then what the window
    /// lets out of the queue.
    public mutating func resumed(peerLast: UInt32?) -> [Step] {
        let last = peerLast ?? 0
        if continuesUnknownSequence, unacknowledged.isEmpty, queued.isEmpty, nextID <= last {
            // Our ids go on from the last one the peer received (from the node that died).
            nextID = last + 1
            lastWireID = last
        }
        let settled = unacknowledged.filter { $0.messageID <= last }
        unacknowledged.removeAll { $0.messageID <= last }
        var steps: [Step] = []
        for message in settled {
            steps.append(.delivered(id: message.messageID))
            if let transfer = finalParts.removeValue(forKey: message.messageID) {
                steps.append(.transferDelivered(transferID: transfer))
            }
        }
        return steps + unacknowledged.map { .send(.sessionMessage($0)) } + release().map { .send(.sessionMessage($0)) }
    }

    /// A grant ended (revoked): messages of kinds needing `feature` that have not gone out yet never will; returns
    /// their ids (undelivered). Messages already sent are acknowledged by the peer as it sees fit (SPEC §15.4).
    public mutating func withdraw(needing feature: Feature.ID) -> Undelivered {
        let before = queued.count + outgoingFiles.count
        queued.removeAll { $0.kind.requiredFeature == feature }
        if feature == .fileShare { outgoingFiles = [] }
        return Undelivered(sent: [], unsent: before - queued.count - outgoingFiles.count)
    }

    /// What a closed or withdrawn channel did not deliver: the ids of messages sent and not acknowledged, and how
    /// many never went out (they have no id yet; a file not yet fully sent counts as one).
    public struct Undelivered: Sendable, Hashable {
        public var sent: [UInt32]
        public var unsent: Int
        public var isEmpty: Bool { sent.isEmpty && unsent == 0 }
    }

    /// The session ended: every message not acknowledged is undelivered. Empties the channel.
    public mutating func close() -> Undelivered {
        let result = Undelivered(sent: unacknowledged.map(\.messageID), unsent: queued.count + outgoingFiles.count)
        unacknowledged = []
        queued = []
        outgoingFiles = []
        incomingFiles = [:]
        finalParts = [:]
        return result
    }

    // MARK: receiving

    /// A SESSION_MESSAGE arrived while the session is active with `granted` in effect.
    public mutating func received(_ message: SessionMessage, granted: FeatureSet) -> Receipt {
        if continuesUnknownSequence {
            continuesUnknownSequence = false
            if message.messageID > lastReceivedID { lastReceivedID = message.messageID - 1 }
        }
        if message.messageID <= lastReceivedID {
            // A repeat after a resume: already handed over; acknowledge it again.
            return Receipt(ack: MessageAck(messageID: message.messageID), delivery: nil, violation: nil)
        }
        guard message.messageID == lastReceivedID + 1 else {
            return Receipt(
                ack: nil, delivery: nil,
                violation: "SESSION_MESSAGE \(message.messageID) after \(lastReceivedID): ids increase by 1 (SPEC §15.4)")
        }
        lastReceivedID = message.messageID
        let id = message.messageID
        guard granted.contains(message.kind.requiredFeature) else {
            if let transfer = message.transferID { incomingFiles[transfer] = nil }
            return refuse(id, .featureDenied, "\(message.kind.requiredFeature) is not granted")
        }
        switch message.kind {
        case .chat:
            guard message.body.count <= WireLimits.chatTextLength,
                let text = String(validating: message.body, as: UTF8.self)
            else { return refuse(id, .messageRefused, "chat text must be UTF-8 of at most 4096 bytes") }
            return deliver(id, .chat(id: id, text: text))
        case .application:
            guard let type = message.contentType else {
                return refuse(id, .messageRefused, "an application message needs a content_type")
            }
            return deliver(id, .application(id: id, contentType: type, body: message.body))
        case .filePart:
            return receivedPart(message)
        }
    }

    private mutating func receivedPart(_ message: SessionMessage) -> Receipt {
        let id = message.messageID
        guard let transfer = message.transferID, let offset = message.offset else {
            return refuse(id, .messageRefused, "a file part needs transfer_id and offset")
        }
        var file: IncomingFile
        if offset == 0 {
            guard let name = message.fileName, let size = message.fileSize else {
                return refuse(id, .messageRefused, "the first part of a file needs file_name and file_size")
            }
            guard size <= WireLimits.largestFileSize else {
                return refuse(id, .messageRefused, "a file may hold at most 16 MiB")
            }
            guard incomingFiles[transfer] == nil, incomingFiles.count < Self.incomingFileLimit else {
                return refuse(id, .messageRefused, "too many files at once, or this transfer already started")
            }
            // No reservation of `size`: memory follows the bytes that arrive, not what a peer announces.
            file = IncomingFile(name: name, contentType: message.contentType, size: size, bytes: [])
        } else {
            // Taken out of the table, not copied: the bytes so far have one owner, so the append below grows them in
            // place (amortized O(part)), where appending to a copy would copy the whole file for every part — O(n²).
            guard let taken = incomingFiles.removeValue(forKey: transfer) else {
                return refuse(id, .messageRefused, "a file part out of order or of an unknown transfer")
            }
            file = consume taken  // no second reference may keep the bytes shared
            guard offset == UInt64(file.bytes.count) else {
                return refuse(id, .messageRefused, "a file part out of order or of an unknown transfer")
            }
        }
        guard UInt64(file.bytes.count) + UInt64(message.body.count) <= file.size else {
            return refuse(id, .messageRefused, "a file part past the announced file_size")
        }
        file.bytes.append(contentsOf: message.body)
        if UInt64(file.bytes.count) == file.size {
            incomingFiles[transfer] = nil
            return deliver(
                id, .file(transferID: transfer, name: file.name, contentType: file.contentType, bytes: file.bytes))
        }
        incomingFiles[transfer] = file
        return deliver(
            id,
            .fileProgress(transferID: transfer, name: file.name, received: UInt64(file.bytes.count), total: file.size))
    }

    /// Where the bytes received so far of incoming `transfer` are stored: for tests that check parts are appended in
    /// place.
    package func incomingStorage(of transfer: UInt32) -> UnsafeRawPointer? {
        incomingFiles[transfer]?.bytes.withUnsafeBytes { $0.baseAddress }
    }

    private func deliver(_ id: UInt32, _ delivery: Delivery) -> Receipt {
        Receipt(ack: MessageAck(messageID: id), delivery: delivery, violation: nil)
    }

    private func refuse(_ id: UInt32, _ reason: ReasonCode, _ text: String) -> Receipt {
        Receipt(ack: MessageAck(messageID: id, reason: reason, text: text), delivery: nil, violation: nil)
    }
}

extension MessageChannel.Delivery {
    /// One line for logs: kind, id and size, never the content.
    public var logDescription: String {
        switch self {
        case .chat(let id, let text): "chat message \(id) (\(text.utf8.count) bytes)"
        case .application(let id, _, let body): "application message \(id) (\(body.count) bytes)"
        case .fileProgress(let transfer, _, let received, let total): "file \(transfer): \(received) of \(total) bytes"
        case .file(let transfer, _, _, let bytes): "file \(transfer) received (\(bytes.count) bytes)"
        }
    }
}
