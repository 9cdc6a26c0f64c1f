/// What the registry remembers of one session's messages in order to record them (SPEC §15.4), a pure value.
///
/// The messages a supporter sends through the node are recorded with their ids (`message_sent`); their
/// acknowledgements are recorded too, those of anything else (file parts, a CLI's queued lines) are not. An incoming
/// file is recorded at its first part and at each quarter of its size, not at each of its up to 256 parts.
struct SessionMessageLedger: Sendable, Hashable {
    /// Recorded messages still waiting for the device's acknowledgement. A message is recorded only when it goes out
    /// at once, so at most the window (16) wait; ``limit`` bounds the set whatever a peer does.
    private(set) var awaitingAck: Set<UInt32> = []
    /// Incoming transfers: the quarter of the file last recorded (0: the first part).
    private var incomingQuarter: [UInt32: Int] = [:]

    /// Recorded ids kept at most; beyond, a further message's acknowledgement is not recorded.
    static let limit = 64
    /// Incoming transfers followed at most (the channel takes 2 at once).
    static let transferLimit = 8

    /// A recorded message `id` went to the device.
    mutating func sent(_ id: UInt32) {
        guard awaitingAck.count < Self.limit else { return }
        awaitingAck.insert(id)
    }

    /// The device acknowledged (or refused) `id`: whether that is one to record.
    mutating func settled(_ id: UInt32) -> Bool { awaitingAck.remove(id) != nil }

    /// The recorded ones of `ids`, which were not delivered; they are forgotten.
    mutating func undelivered(_ ids: [UInt32]) -> [UInt32] { ids.filter { awaitingAck.remove($0) != nil } }

    /// `received` of `total` bytes of incoming `transfer` arrived: whether to record it (the first part, then each
    /// quarter passed).
    mutating func progress(transfer: UInt32, received: UInt64, total: UInt64) -> Bool {
        let quarter = total == 0 ? 4 : Int(min(4, received * 4 / total))
        if let last = incomingQuarter[transfer] {
            guard quarter > last else { return false }
        } else if incomingQuarter.count >= Self.transferLimit, let oldest = incomingQuarter.keys.min() {
            // Transfers the channel gave up on (a part out of order, past its size) never finish here: the oldest
            // makes room, so a new file's progress is still recorded.
            incomingQuarter[oldest] = nil
        }
        incomingQuarter[transfer] = quarter
        return true
    }

    /// Incoming `transfer` finished.
    mutating func finished(transfer: UInt32) { incomingQuarter[transfer] = nil }
}
