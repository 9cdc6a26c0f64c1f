import Foundation
import SupportSession

/// A session code's state as the supporter node lists it: the stored state (open, closed) and validity, refined by
/// what is happening live.
public enum SessionCodeState: String, Sendable, Hashable, CaseIterable {
    /// Valid, no device on it.
    case open
    /// A device registered and waits.
    case online
    /// A connection request waits for the device's answer.
    case requestPending = "request_pending"
    /// The session runs.
    case active
    case closed
    case expired
}

/// A session code: what is stored about it, and what is happening on it now.
@dynamicMemberLookup
public struct SessionCodeInfo: Sendable, Hashable {
    /// The durable part.
    public var record: SessionCodeRecord
    /// The live state (closed and expired come from the record).
    public var state: SessionCodeState
    /// The name the device on the code gave in HELLO, while one is on it.
    public var deviceName: String?

    /// Whether a device is on the code now.
    public var online: Bool { [.online, .requestPending, .active].contains(state) }

    public subscript<Value>(dynamicMember keyPath: KeyPath<SessionCodeRecord, Value>) -> Value { record[keyPath: keyPath] }
}

/// The registry's live entry for one code.
struct CodeEntry: Sendable {
    var record: SessionCodeRecord
    /// open, online, request pending or active; closed and expired come from the record.
    var live: SessionCodeState = .open
    var deviceName: String?
    var deviceAddress: String?
    /// When the running session started, for its duration in the audit trail.
    var activeSince: Date?
    /// Whether the code's expiry is already in the audit trail (or happened before this node started).
    var expiryRecorded = false

    func info(now: Date) -> SessionCodeInfo {
        let state: SessionCodeState =
            record.isClosed ? .closed : (live == .open && now >= record.validUntil) ? .expired : live
        return SessionCodeInfo(record: record, state: state, deviceName: state.isLive ? deviceName : nil)
    }
}

extension SessionCodeState {
    /// A device is on the code.
    var isLive: Bool { self == .online || self == .requestPending || self == .active }
}
