internal import CLinuxShims
import Glibc
import SupportUtilities

#if os(Linux)
/// The poller of this platform.
package typealias PlatformPoller = EpollPoller
#endif

/// ``Poller`` on Linux: one epoll instance (level-triggered) and an eventfd to wake it from other threads.
package final class EpollPoller: Poller, @unchecked Sendable {
    // @unchecked: `epollFD` and `wakeFD` never change after init; epoll_ctl/epoll_wait are called from the loop thread
    // only, and `wake()` (any thread) writes to the eventfd, which the kernel makes safe.
    private let epollFD: Int32
    private let wakeFD: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    private let capacity = 512
    /// The token the wake-up eventfd is registered with (never a registration's: theirs have a non-zero generation).
    private static let wakeToken: UInt64 = 0

    package init() throws(TransportError) {
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw TransportError(.socket, "epoll_create1: \(SystemError.describe(errno))") }
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let code = errno
            close(epollFD)
            throw TransportError(.socket, "eventfd: \(SystemError.describe(code))")
        }
        events = .allocate(capacity: capacity)
        var event = epoll_event()
        event.events = rs_EPOLLIN()
        event.data.u64 = Self.wakeToken
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let code = errno
            close(epollFD)
            close(wakeFD)
            events.deallocate()
            throw TransportError(.poller, "epoll_ctl(ADD) of the loop's wake-up eventfd: \(SystemError.describe(code))")
        }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        events.deallocate()
    }

    package func add(_ fd: Int32, events: PollEvents, token: UInt64) throws(TransportError) {
        try control(EPOLL_CTL_ADD, fd, events, token, "ADD")
    }

    package func modify(_ fd: Int32, events: PollEvents, token: UInt64) throws(TransportError) {
        try control(EPOLL_CTL_MOD, fd, events, token, "MOD")
    }

    package func remove(_ fd: Int32) throws(TransportError) {
        var event = epoll_event()
        guard epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event) == 0 else {
            throw TransportError(.poller, "epoll_ctl(DEL) of fd \(fd): \(SystemError.describe(errno))")
        }
    }

    package func wait(timeoutMilliseconds: Int32, _ ready: (UInt64, PollEvents) -> Void) throws(TransportError) {
        let count = epoll_wait(epollFD, events, Int32(capacity), timeoutMilliseconds)
        if count < 0 {
            let code = errno
            if code == EINTR { return }
            throw TransportError(.poller, "epoll_wait failed: \(SystemError.describe(code))")
        }
        for index in 0..<Int(count) {
            let event = events[index]
            if event.data.u64 == Self.wakeToken {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
                continue
            }
            ready(event.data.u64, Self.pollEvents(event.events))
        }
    }

    package func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func control(_ operation: Int32, _ fd: Int32, _ wanted: PollEvents, _ token: UInt64, _ name: String)
        throws(TransportError)
    {
        var event = epoll_event()
        event.events = Self.epollBits(wanted)
        event.data.u64 = token
        guard epoll_ctl(epollFD, operation, fd, &event) == 0 else {
            throw TransportError(.poller, "epoll_ctl(\(name)) of fd \(fd): \(SystemError.describe(errno))")
        }
    }

    private static func epollBits(_ events: PollEvents) -> UInt32 {
        var bits: UInt32 = 0
        if events.contains(.readable) { bits |= rs_EPOLLIN() }
        if events.contains(.writable) { bits |= rs_EPOLLOUT() }
        return bits  // EPOLLHUP and EPOLLERR are always reported
    }

    private static func pollEvents(_ bits: UInt32) -> PollEvents {
        var events: PollEvents = []
        if bits & rs_EPOLLIN() != 0 { events.insert(.readable) }
        if bits & rs_EPOLLOUT() != 0 { events.insert(.writable) }
        if bits & (rs_EPOLLHUP() | rs_EPOLLRDHUP()) != 0 { events.insert(.hangUp) }
        if bits & rs_EPOLLERR() != 0 { events.insert(.error) }
        return events
    }
}
