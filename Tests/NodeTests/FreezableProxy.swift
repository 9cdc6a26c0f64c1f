import Foundation
import Glibc
import Synchronization
import DeviceNode
import SampleAppModel
import SupporterNode
import SupportSession
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

/// A TCP relay on loopback between a device and the supporter node (or a node and its database) that can go silent
/// on command: while frozen it swallows bytes in both directions and never passes a close on, exactly like a link that
/// died without a word. While held it passes nothing either, but keeps every byte and passes them on when released,
/// exactly like a network partition that heals before TCP gives up.
final class FreezableProxy: Sendable {
    let port: UInt16
    private let listener: Int32
    private let frozen = Atomic<Bool>(false)
    private let held = Atomic<Bool>(false)
    /// Entered while held: a pump that must wait waits on it (no polling) until ``release()`` leaves it.
    private let holding = DispatchGroup()
    private let relayed = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let sockets = Mutex<[Int32]>([])

    init(targetPort: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        listener = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        let listener = self.listener
        Thread { [self] in
            while !self.stopped.load(ordering: .relaxed) {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                let upstream = Self.connectLoopback(port: targetPort)
                guard upstream >= 0 else {
                    close(client)
                    continue
                }
                self.sockets.withLock { $0 += [client, upstream] }
                self.pump(from: client, to: upstream)
                self.pump(from: upstream, to: client)
            }
        }.start()
    }

    private static func connectLoopback(port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if status != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    private func pump(from source: Int32, to destination: Int32) {
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                if count <= 0 {
                    // A close passes on only while the link is alive; a frozen link says nothing.
                    if !self.frozen.load(ordering: .relaxed) { shutdown(destination, Int32(SHUT_WR)) }
                    return
                }
                if self.frozen.load(ordering: .relaxed) { continue }
                // Held: this chunk waits here, and what follows waits in the kernel's buffers (TCP back-pressure).
                if self.held.load(ordering: .acquiring) { self.holding.wait() }
                if self.stopped.load(ordering: .relaxed) { return }
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, count - sent) }
                    if written <= 0 { return }
                    sent += written
                }
                relayed.add(1, ordering: .relaxed)
            }
        }.start()
    }

    /// How many reads it has relayed (either way): keepalive traffic shows up here while nothing else is sent.
    var relayedChunks: Int { relayed.load(ordering: .relaxed) }

    /// From now on nothing crosses.
    func freeze() { frozen.store(true, ordering: .relaxed) }

    /// From now on nothing crosses, and nothing is lost: what was sent waits until ``release()``.
    func hold() {
        guard !held.exchange(true, ordering: .acquiringAndReleasing) else { return }
        holding.enter()
    }

    /// Passes on what waited during ``hold()``, and everything after.
    func release() {
        guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        holding.leave()
    }

    /// Ends every connection relayed so far with a bare TCP FIN both ways (no TLS close_notify, no GOAWAY): a link
    /// that broke. New connections are still accepted and relayed (the link "comes back").
    func cut() {
        for fd in sockets.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Stops accepting: redials fail until the test ends (the link stays down).
    func refuseNewConnections() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        release()  // a pump waiting in a hold ends
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets.withLock({ $0 }) {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }
}
