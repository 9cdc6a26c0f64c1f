import SupportUtilities

/// Readiness of a file descriptor, as an event loop's handlers see it: the same on every platform (a ``Poller``
/// translates its own bits).
package struct PollEvents: OptionSet, Hashable, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Data (or a new connection) can be read without blocking.
    package static let readable = PollEvents(rawValue: 1 << 0)
    /// Data can be written without blocking (or a non-blocking connect finished).
    package static let writable = PollEvents(rawValue: 1 << 1)
    /// The peer hung up (both directions, or its write side).
    package static let hangUp = PollEvents(rawValue: 1 << 2)
    /// The descriptor has an error pending.
    package static let error = PollEvents(rawValue: 1 << 3)
}
