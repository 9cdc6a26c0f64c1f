public import Foundation

/// One file of a session, as its audit rows tell it: one the device sent (`file_progress`, `file_received`), or one a
/// supporter sent to the device (`message_sent` of kind `file`). A pure value, read from the code's rows oldest first
/// by ``transfers(in:)``.
public struct SessionFileTransfer: Sendable, Hashable {
    /// `receiving` while its parts arrive; `received` once whole (its bytes kept for the retention time);
    /// `interrupted` when the session ended first.
    public enum State: String, Sendable, Hashable {
        case receiving, received, interrupted
        /// A supporter's file, handed to the device's connection (its parts go out as the window opens).
        case sent
        /// A supporter's file the device acknowledged whole, or refused a part of.
        case delivered, refused
    }

    /// Who sent it.
    public enum Direction: String, Sendable, Hashable {
        case fromDevice = "from_device", toDevice = "to_device"
    }

    /// The device's transfer id (it numbers transfers per session from 1).
    public var transferID: UInt32
    public var name: String
    /// The size the device announced, and the bytes received so far (recorded at each quarter).
    public var size: UInt64
    public var received: UInt64
    public var state: State
    public var startedAt: Date
    public var finishedAt: Date?
    /// The `file_received` row's id: the file's id for its download.
    public var fileID: Int64?
    public var contentType: String?
    public var direction: Direction = .fromDevice

    /// The transfers in `events` (one code's audit rows, oldest first), oldest first.
    public static func transfers(in events: [AuditEvent]) -> [SessionFileTransfer] {
        var transfers: [SessionFileTransfer] = []
        /// Indices into `transfers` of this session's transfers by id; a new session numbers from 1 again.
        var current: [UInt32: Int] = [:]
        /// The supporter's files of this session not yet settled, by transfer id.
        var outgoing: [UInt32: Int] = [:]
        func interruptAll(at time: Date) {
            for index in current.values where transfers[index].state == .receiving {
                transfers[index].state = .interrupted
                transfers[index].finishedAt = time
            }
            current = [:]
            outgoing = [:]
        }
        for event in events {
            let details = event.details
            switch event.kind {
            case .sessionStarted, .sessionEnded, .deviceOffline:
                interruptAll(at: event.time)
            case .messageSent where details["kind"] == "file":
                let size = details["size"].flatMap { UInt64($0) } ?? 0
                var sent = SessionFileTransfer(
                    transferID: details["transfer_id"].flatMap { UInt32($0) } ?? 0, name: details["name"] ?? "",
                    size: size, received: size, state: .sent, startedAt: event.time)
                sent.finishedAt = event.time
                sent.fileID = event.id
                sent.contentType = details["content_type"]
                sent.direction = .toDevice
                transfers.append(sent)
                outgoing[sent.transferID] = transfers.count - 1
            case .fileDelivered, .fileRefused:
                guard let id = details["transfer_id"].flatMap({ UInt32($0) }), let index = outgoing.removeValue(forKey: id)
                else { continue }
                transfers[index].state = event.kind == .fileDelivered ? .delivered : .refused
                transfers[index].finishedAt = event.time
            case .fileProgress, .fileReceived:
                guard let id = details["transfer_id"].flatMap({ UInt32($0) }) else { continue }
                let size = details["size"].flatMap { UInt64($0) } ?? 0
                let index: Int
                if let known = current[id] {
                    index = known
                } else {
                    transfers.append(
                        SessionFileTransfer(
                            transferID: id, name: details["name"] ?? "", size: size, received: 0, state: .receiving,
                            startedAt: event.time))
                    index = transfers.count - 1
                    current[id] = index
                }
                if event.kind == .fileReceived {
                    transfers[index].received = size
                    transfers[index].size = size
                    transfers[index].state = .received
                    transfers[index].finishedAt = event.time
                    transfers[index].fileID = event.id
                    transfers[index].contentType = details["content_type"]
                    current[id] = nil
                } else {
                    transfers[index].received = details["received"].flatMap { UInt64($0) } ?? transfers[index].received
                }
            default:
                continue
            }
        }
        return transfers
    }
}
