public import Foundation
import SupportWire
import SupportUtilities
public import SupporterModel

/// A device that another node holds, as this node shows it (several nodes on one database, docs/cluster.md).
public struct RemotePresence: Sendable, Hashable {
    /// The id of the node holding the device.
    public var node: String
    /// Its session's state there: online, request pending or active.
    public var state: SessionCodeState
    /// The name the device gave in HELLO.
    public var deviceName: String?

    public init(node: String, state: SessionCodeState, deviceName: String?) {
        self.node = node
        self.state = state
        self.deviceName = deviceName
    }
}

extension CodeRegistry {
    /// Another node committed a change to `code`: `record` is the code as stored now (nil: deleted). Nothing is
    /// recorded here (the other node did). Returns whether a device on this node holds a code that is now closed or
    /// past its validity, so the node ends that session as a local close or expiry would.
    public mutating func codeChangedElsewhere(_ code: String, record: SessionCodeRecord?, now: Date) -> Bool {
        guard let record else {
            // Deleted there (refused while a device is on it anywhere): a local holder keeps its entry until it leaves.
            if codes[code]?.holder == nil { codes[code] = nil }
            return false
        }
        guard var entry = codes[code] else {
            load(record, now: now)
            return false
        }
        let finished = record.isClosed || now >= record.validUntil
        entry.record = record
        // The other node recorded the close or expiry; this one must not record it again.
        entry.expiryRecorded = finished
        codes[code] = entry
        return finished && entry.holder != nil
    }

    /// What another node holds on `code` now (nil: nothing). Ignored for a code this node does not know.
    public mutating func setPresenceElsewhere(_ presence: RemotePresence?, on code: String) {
        codes[code]?.elsewhere = presence
    }

    /// Replaces everything known of other nodes' devices (after a reconnection or a lease check).
    public mutating func replacePresenceElsewhere(_ all: [String: RemotePresence]) {
        for code in codes.keys where codes[code]?.elsewhere != all[code] { codes[code]?.elsewhere = all[code] }
    }

    /// Whether a device on this node holds `code` (connected or reconnecting, committed or not).
    public func holdsDevice(on code: String) -> Bool { codes[code]?.holder != nil }

    /// The node holding the device on `code` when it is another one.
    public func presenceElsewhere(of code: String) -> RemotePresence? {
        guard let entry = codes[code], entry.holder == nil else { return nil }
        return entry.elsewhere
    }
}

extension CodeRegistry {
    /// A device resumes here the session a node that died held on `code` (its presence lease ran out): this
    /// connection holds the code from now on, once the returned intents commit (``registrationCommitted(_:code:)``;
    /// ``registrationFailed(_:code:)`` when they do not). The intents take the presence over and record that the
    /// device was reconnecting; its `device_resumed` row follows with the session event. Nil when this node cannot
    /// take it (unknown code or connection, something here holds the code already, or the code was closed or
    /// expired meanwhile: a session never outlives its code). `why` is the `device_reconnecting` row's: `node_lost`
    /// (another node's session) or `node_restarted` (this node's previous process's, ``UnresumedSession``).
    public mutating func adoptSession(
        _ connection: ConnectionID, code: String, deviceName: String?, state: SessionCodeState, previousNode: String,
        why: String = "node_lost", now: Date
    ) -> [StoreIntent]? {
        guard var entry = connections[connection], entry.code == nil, var codeEntry = codes[code],
            codeEntry.holder == nil, !codeEntry.record.isClosed, now < codeEntry.record.validUntil
        else { return nil }
        codeEntry.holder = connection
        codeEntry.committed = false
        codeEntry.live = state
        codeEntry.deviceName = deviceName
        codeEntry.deviceAddress = entry.address
        codeEntry.activeSince = state == .active ? now : nil
        codeEntry.reconnecting = true
        codeEntry.elsewhere = nil
        codes[code] = codeEntry
        forgetUnresumed(code)
        entry.code = code
        entry.refusals = 0
        connections[connection] = entry
        countUnauthenticatedChange(entry.key, -1)
        return [
            .claimPresence(code: code, deviceName: deviceName),
            .presenceState(code: code, state: state),
            audit(
                .deviceReconnecting, code, now,
                ["source_address": entry.address, "previous_node": previousNode, "why": why]),
        ]
    }
}

extension CodeRegistry {
    /// Another node blocked a key (an address, a code, a token) or lifted its block: `row` is the key's stored row
    /// now (nil: deleted, after a success). A block made on one node holds on every node.
    public mutating func backoffChangedElsewhere(key: String, row: BackoffRow?) {
        if let row {
            load(row)
            return
        }
        switch BackoffKey(key) {
        case .address(let address): _ = addressBackoff.reset(address)
        case .code(let code): _ = codeBackoff.reset(code)
        case .token(let token): _ = tokenBackoff.reset(token)
        case nil: break
        }
    }
}

extension CodeRegistry {
    /// The codes this node holds a device on (connected or reconnecting): `all`, claims still being committed
    /// included, and `committed`, those whose claim is in the store. Presence renewal renews `all` and nothing else;
    /// a code of `committed` whose row another node took is lost (``sessionMovedElsewhere(code:from:)``).
    public func heldCodes() -> (all: Set<String>, committed: Set<String>) {
        var all = Set<String>()
        var committed = Set<String>()
        // O(codes) under the session lock, once per third of a lease: about 10 ms for 100,000 codes.
        for entry in codes.values where entry.holder != nil {
            all.insert(entry.record.code)
            if entry.committed { committed.insert(entry.record.code) }
        }
        return (all, committed)
    }

    /// Another node claimed `code`, which `connection` held here (this node's lease lapsed: it was frozen or cut off
    /// from the database, and the device resumed there, or another device registered there). Fencing: the session
    /// is dropped here without a record — it goes on there, and whatever this node would write about it is refused
    /// by the store anyway. The connection keeps no code (its close ends nothing). False when it did not hold it.
    @discardableResult
    public mutating func sessionMovedElsewhere(code: String, from connection: ConnectionID) -> Bool {
        guard codes[code]?.holder == connection else { return false }
        if var entry = connections[connection] {
            entry.code = nil
            connections[connection] = entry
            countUnauthenticatedChange(entry.key, +1)
        }
        releaseCode(code, from: connection)
        return true
    }
}
