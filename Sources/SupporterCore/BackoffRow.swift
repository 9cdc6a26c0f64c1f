public import Foundation
import SupportWire
import SupportUtilities

/// The stored registration back-off of one key (a session code or a source address), so blocks and bans survive a
/// restart. Times are wall-clock dates: convert to and from the node's monotonic clock when loading and saving.
public struct BackoffRow: Sendable, Hashable {
    public var key: String
    /// Failures counted so far.
    public var failures: Int
    /// Until when the key is blocked; nil when it is not (yet) blocked.
    public var blockedUntil: Date?
    public var lastFailure: Date

    public init(key: String, failures: Int, blockedUntil: Date?, lastFailure: Date) {
        self.key = key
        self.failures = failures
        self.blockedUntil = blockedUntil
        self.lastFailure = lastFailure
    }
}
