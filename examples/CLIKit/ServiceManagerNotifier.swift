import Foundation
import Glibc

/// Tells the service manager (systemd, `Type=notify`) how the node is doing, as `sd_notify(3)` does without
/// libsystemd: one datagram per state on the `AF_UNIX` socket named by `NOTIFY_SOCKET` (a path, or an abstract
/// address when it starts with `@`). Outside a notify service (no `NOTIFY_SOCKET`) every call does nothing.
///
/// - `READY=1` once the listeners are up (the unit's start then completes and `After=` units start);
/// - `RELOADING=1` … `READY=1` around a SIGHUP reload;
/// - `STOPPING=1` when a stop begins (the drain);
/// - `WATCHDOG=1` while the node's loops answer, every half `WATCHDOG_USEC` (``watchdogInterval``).
///
/// A state waits at most 2 s for room in the manager's queue; a `WATCHDOG=1` never waits (it is sent from a node's
/// loop) and is dropped instead. The service manager's own timeouts say what a missing datagram means.
public final class ServiceManagerNotifier: Sendable {
    private let address: sockaddr_un?
    private let addressLength: socklen_t
    /// How often to send `WATCHDOG=1`: half the `WATCHDOG_USEC` systemd set for this process (`WatchdogSec=`), or nil.
    public let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from the process's environment.
    public convenience init() { self.init(environment: ProcessInfo.processInfo.environment) }

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    public init(environment: [String: String]) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        if let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
            path.utf8.count < capacity
        {
            var bytes = Array(path.utf8)
            if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }  // the abstract namespace
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                for (index, byte) in bytes.enumerated() { buffer[index] = byte }
            }
            self.address = address
            addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1))
        } else {
            self.address = nil
            addressLength = 0
        }
        let forThisProcess = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if forThisProcess, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Whether the process runs under a service manager that listens.
    public var isActive: Bool { address != nil }

    /// Sends `state` (`READY=1`, `STOPPING=1`, …; several lines allowed). False when it could not be sent.
    ///
    /// - Parameter waiting: wait (at most 2 s) while the manager's queue is full — for the states, sent from the main
    ///   thread or a signal handler's queue. `false` never waits, dropping the datagram instead: for `WATCHDOG=1`,
    ///   sent from a node's event loop, which must never block.
    @discardableResult
    public func notify(_ state: String, waiting: Bool = true) -> Bool {
        guard var address else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if waiting {
            var limit = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        let flags = MSG_NOSIGNAL | (waiting ? 0 : MSG_DONTWAIT)
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                bytes.withUnsafeBytes {
                    // Linux queues 10 datagrams on a Unix socket by default: a reader that fell behind fills it.
                    sendto(fd, $0.baseAddress, $0.count, Int32(flags), target, addressLength)
                }
            }
        }
        return sent == bytes.count
    }
}
