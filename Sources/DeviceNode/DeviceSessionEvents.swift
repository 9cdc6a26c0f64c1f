import Synchronization
public import SupportSession
import SupportWire
import SupportUtilities

/// A session's events as an `AsyncSequence`, in order, bounded.
///
/// - One consumer: iterate it from one task. A second iterator shares the same events (each event goes to one of
///   them), so fan out yourself, or observe ``DeviceSessionModel`` (any number of views) instead.
/// - Bounded: it keeps at most ``DeviceConfiguration/eventBufferCapacity`` events (default 256) that nobody has taken
///   yet; past that the *oldest* waiting events are dropped (and counted in ``DeviceSession/droppedEventCount``, with a
///   warning in the log), so a session nobody iterates does not grow without end. ``DeviceSession/state`` is never
///   dropped: read it to catch up.
/// - It finishes when the session is over and its connection closed (the goodbye has left), so a program may exit
///   as soon as the loop ends.
public struct DeviceSessionEvents: AsyncSequence, Sendable {
    /// The session's events.
    public typealias Element = DeviceSessionEvent
    /// The sequence never throws: failures are events.
    public typealias Failure = Never

    let stream: AsyncStream<DeviceSessionEvent>
    let iterated: SharedFlag

    /// The iterator; take it from one task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<DeviceSessionEvent>.Iterator
        /// The next event, or nil once the session is over and its connection closed.
        public mutating func next() async -> DeviceSessionEvent? { await base.next() }
        /// The next event, on the caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceSessionEvent? {
            await base.next(isolation: actor)
        }
    }

    /// Starts iterating; marks the session as having a consumer that can answer requests.
    public func makeAsyncIterator() -> AsyncIterator {
        iterated.set()
        return AsyncIterator(base: stream.makeAsyncIterator())
    }
}

/// An atomic flag shared by reference (an `Atomic` cannot be copied).
final class SharedFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
