import SupportUtilities

/// The platform's readiness API behind ``EventLoop``: epoll on Linux (``EpollPoller``). A port to kqueue (Apple) or
/// to another libc is a new type conforming to this and the `PlatformPoller` alias pointing at it; the loop, its
/// timers, and the connections above it do not change (docs/porting.md).
///
/// Used by one loop thread, except ``wake()``, which any thread may call.
package protocol Poller: AnyObject, Sendable {
    /// Watches `fd` for `events`; ``wait(timeoutMilliseconds:_:)`` reports readiness with `token`.
    func add(_ fd: Int32, events: PollEvents, token: UInt64) throws(TransportError)
    /// Changes what `fd` is watched for (and its token).
    func modify(_ fd: Int32, events: PollEvents, token: UInt64) throws(TransportError)
    /// Stops watching `fd`; call before closing it.
    func remove(_ fd: Int32) throws(TransportError)
    /// Waits until a watched descriptor is ready, ``wake()`` is called, or `timeoutMilliseconds` pass (-1: no limit),
    /// and calls `ready` with the token and readiness of each ready descriptor. EINTR returns with nothing ready.
    func wait(timeoutMilliseconds: Int32, _ ready: (UInt64, PollEvents) -> Void) throws(TransportError)
    /// Makes a ``wait(timeoutMilliseconds:_:)`` in progress (or the next one) return. Any thread.
    func wake()
}
