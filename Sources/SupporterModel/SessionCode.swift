public import Foundation
import SupportUtilities
public import SupportVocabulary

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
    /// The device's link is lost and its session is kept while it reconnects (SPEC §15.5).
    public var reconnecting = false
    /// The id of the node the device is on, when that is another node sharing this node's database; nil when the
    /// device is on this node or none is on the code.
    public var node: String?

    /// Whether a device is on the code now.
    public var online: Bool { [.online, .requestPending, .active].contains(state) }

    public init(record: SessionCodeRecord, state: SessionCodeState, deviceName: String?) {
        self.record = record
        self.state = state
        self.deviceName = deviceName
    }

    /// A code as stored, with no live state: closed, expired (at `now`) or open.
    public init(stored record: SessionCodeRecord, now: Date) {
        let state: SessionCodeState = record.isClosed ? .closed : now >= record.validUntil ? .expired : .open
        self.init(record: record, state: state, deviceName: nil)
    }

    public subscript<Value>(dynamicMember keyPath: KeyPath<SessionCodeRecord, Value>) -> Value { record[keyPath: keyPath] }
}


extension SessionCodeState {
    /// A device is on the code.
    public var isLive: Bool { self == .online || self == .requestPending || self == .active }
}

extension SessionCodeType {
    /// The name used in the REST API and the audit trail.
    public var name: String {
        switch self {
        case .remoteSupport: "remote_support"
        case .assistAR: "assist_ar"
        }
    }
}
