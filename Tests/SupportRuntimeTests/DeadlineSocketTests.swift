import Foundation
import Glibc
import Testing
import TestSupport
@testable import SupportRuntime
import SupportUtilities

/// Runs the blocking `body` on a thread of its own (as DeadlineSocket's users do), never on the cooperative pool.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// A listening loopback socket whose connections the test accepts and drives by hand.
private final class PlainListener: Sendable {
    let fd: Int32
    let address: SocketAddress

    init() throws {
        let any = try SocketAddress.resolve(host: "127.0.0.1", port: 0)[0]
        fd = try Socket.listen(on: any, backlog: 8)
        address = SocketAddress.of(fd, peer: false) ?? any
    }

    /// The next connection, waiting for it until `waitDeadline`; -1 if none came.
    func accept() -> Int32 {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(waitDeadline.nanosecondsClamped / 1_000_000)) == 1,
            case .accepted(let connection) = Socket.accept(fd)
        else { return -1 }
        return connection
    }

    /// Whether a connection waits to be accepted now.
    var hasPendingConnection: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1
    }

    deinit { close(fd) }
}

/// Echoes what it reads and closes (with close_notify) after a read holding "close".
private final class EchoDelegate: TLSStreamDelegate {
    func streamDidBecomeActive(_ stream: TLSStream) {}
    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer) {
        let data = Array(bytes)
        try? stream.write(data)
        if String(decoding: data, as: UTF8.self).contains("close") { stream.close() }
    }
    func streamDidClose(_ stream: TLSStream, error: TransportError?) {}
}

extension RuntimeIntegration {
    @Suite struct DeadlineSocketTests {
        typealias Outcome<T: Sendable> = Result<T, TransportError>

        private static func readAll(_ socket: DeadlineSocket, deadline: Deadline) throws(TransportError) -> [UInt8] {
            var all: [UInt8] = []
            while true {
                let bytes = try socket.read(maxBytes: 3, deadline: deadline)
                if bytes.isEmpty { return all }
                #expect(bytes.count <= 3)
                all += bytes
            }
        }

        @Test func aDeadlineThatHasPassedTimesOutAtOnceWithoutConnecting() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<Bool> in
                Outcome { () throws(TransportError) in
                    _ = try DeadlineSocket.connect(
                        to: address, tls: nil, serverName: nil, deadline: Deadline.now() - .seconds(1))
                    return true
                }
            }
            #expect(throws: TransportError.self) { try outcome.get() }
            if case .failure(let error) = outcome {
                #expect(error.kind == .connectTimeout)
                #expect(error.message.contains("\(address)"))
            }
            #expect(!listener.hasPendingConnection)
        }

        @Test func readsTheBytesThenEmptyAtTheEndOfTheStream() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<[UInt8]> in
                Outcome { () throws(TransportError) in
                    let deadline = Deadline.now() + waitDeadline
                    let socket = try DeadlineSocket.connect(to: address, tls: nil, serverName: nil, deadline: deadline)
                    let peer = listener.accept()
                    #expect(peer >= 0)
                    _ = send(peer, "hello, world", 12, Int32(MSG_NOSIGNAL))
                    close(peer)
                    let all = try Self.readAll(socket, deadline: deadline)
                    #expect(try socket.read(maxBytes: 10, deadline: deadline) == [])  // and stays at the end
                    return all
                }
            }
            #expect(try outcome.get() == Array("hello, world".utf8))
        }

        /// A strict deadline: bytes waiting do not make a passed deadline good.
        @Test func aReadWhoseDeadlineHasPassedThrowsEvenWithBytesWaiting() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<[UInt8]> in
                Outcome { () throws(TransportError) in
                    let deadline = Deadline.now() + waitDeadline
                    let socket = try DeadlineSocket.connect(to: address, tls: nil, serverName: nil, deadline: deadline)
                    let peer = listener.accept()
                    defer { close(peer) }
                    _ = send(peer, "x", 1, Int32(MSG_NOSIGNAL))
                    do throws(TransportError) {
                        _ = try socket.read(maxBytes: 10, deadline: Deadline.now() - Duration.milliseconds(1))
                        Issue.record("a passed deadline must throw")
                    } catch {
                        #expect(error.kind == .deadlineExceeded)
                    }
                    return try socket.read(maxBytes: 10, deadline: deadline)
                }
            }
            #expect(try outcome.get() == Array("x".utf8))
        }

        @Test func aSilentPeerTimesOutAReadAtItsDeadline() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<Duration> in
                Outcome { () throws(TransportError) in
                    let socket = try DeadlineSocket.connect(
                        to: address, tls: nil, serverName: nil, deadline: Deadline.now() + waitDeadline)
                    let peer = listener.accept()
                    defer { close(peer) }
                    let started = Deadline.now()
                    do throws(TransportError) {
                        _ = try socket.read(maxBytes: 10, deadline: started + Duration.milliseconds(300))
                        Issue.record("a silent peer must time the read out")
                    } catch {
                        #expect(error.kind == .deadlineExceeded)
                        #expect(error.message.contains("\(address)"))
                    }
                    return Deadline.now().since(started)
                }
            }
            let elapsed = try outcome.get()
            #expect(elapsed >= .milliseconds(300))
            #expect(elapsed < .seconds(10))
        }

        @Test func aPeerThatReadsNothingTimesOutAWriteAtItsDeadline() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<Duration> in
                Outcome { () throws(TransportError) in
                    let socket = try DeadlineSocket.connect(
                        to: address, tls: nil, serverName: nil, deadline: Deadline.now() + waitDeadline)
                    let peer = listener.accept()
                    defer { close(peer) }
                    let started = Deadline.now()
                    do throws(TransportError) {
                        // Far more than loopback's socket buffers hold.
                        try socket.write([UInt8](repeating: 1, count: 64 << 20), deadline: started + Duration.milliseconds(500))
                        Issue.record("a peer that reads nothing must time the write out")
                    } catch {
                        #expect(error.kind == .deadlineExceeded)
                        #expect(error.message.contains("of 67108864 bytes"), "\(error)")
                    }
                    return Deadline.now().since(started)
                }
            }
            let elapsed = try outcome.get()
            #expect(elapsed >= .milliseconds(500))
            #expect(elapsed < .seconds(10))
        }

        @Test func closeIsIdempotentAndLaterCallsSayClosed() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let outcome = await onOwnThread { () -> Outcome<Bool> in
                Outcome { () throws(TransportError) in
                    let deadline = Deadline.now() + waitDeadline
                    let socket = try DeadlineSocket.connect(to: address, tls: nil, serverName: nil, deadline: deadline)
                    let peer = listener.accept()
                    defer { close(peer) }
                    socket.close()
                    socket.close()
                    // The peer sees the end of the stream: the descriptor was really closed.
                    var byte: UInt8 = 0
                    #expect(recv(peer, &byte, 1, 0) == 0)
                    do throws(TransportError) {
                        _ = try socket.read(maxBytes: 1, deadline: deadline)
                        Issue.record("reading a closed socket must throw")
                    } catch {
                        #expect(error.kind == .closed)
                    }
                    return true
                }
            }
            #expect(try outcome.get())
        }

        @Test func connectingOnAnEventLoopThreadIsRefused() async throws {
            let listener = try PlainListener()
            let address = listener.address
            let loop = try EventLoop.start(name: "deadline-test")
            defer {
                loop.shutdown()
                try? loop.waitUntilFinished()
            }
            let kind = try await loop.submit { () -> TransportError.Kind? in
                do throws(TransportError) {
                    _ = try DeadlineSocket.connect(
                        to: address, tls: nil, serverName: nil, deadline: Deadline.now() + .seconds(5))
                    return nil
                } catch {
                    return error.kind
                }
            }
            #expect(kind == .blockingOnEventLoop)
            #expect(!listener.hasPendingConnection)
        }

        /// A TLS server on an event loop (the project's own listener) that echoes and then closes with close_notify.
        private func withTLSEcho(
            _ body: (TestCertificates, SocketAddress) async throws -> Void
        ) async throws {
            let certificates = try TestCertificates.make()
            defer { certificates.remove() }
            let group = try EventLoopGroup(loopCount: 1)
            defer { group.shutdown() }
            let echo = EchoDelegate()
            let server = try TLSContext(
                .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            let listener = try TLSListener(host: "127.0.0.1", port: 0, context: server, group: group) { stream in
                stream.delegate = echo
                return true
            }
            defer {
                listener.close()
                withExtendedLifetime(echo) {}
            }
            try await body(certificates, listener.localAddress)
        }

        @Test func talksTLSAndReadsEmptyAtTheServersCloseNotify() async throws {
            try await withTLSEcho { certificates, address in
                let client = try TLSContext(.makeClientConfiguration(trustRoots: .file(certificates.caPath)))
                let outcome = await onOwnThread { () -> Outcome<[UInt8]> in
                    Outcome { () throws(TransportError) in
                        let deadline = Deadline.now() + waitDeadline
                        let socket = try DeadlineSocket.connect(
                            to: address, tls: client, serverName: "localhost", deadline: deadline)
                        try socket.write(Array("ping".utf8), deadline: deadline)
                        var echoed: [UInt8] = []
                        while echoed.count < 4 { echoed += try socket.read(maxBytes: 4 - echoed.count, deadline: deadline) }
                        #expect(echoed == Array("ping".utf8))
                        try socket.write(Array("close".utf8), deadline: deadline)
                        return try Self.readAll(socket, deadline: deadline)
                    }
                }
                #expect(try outcome.get() == Array("close".utf8))
            }
        }

        @Test func aCertificateForAnotherNameFailsVerificationNamingWhy() async throws {
            try await withTLSEcho { certificates, address in
                let client = try TLSContext(.makeClientConfiguration(trustRoots: .file(certificates.caPath)))
                let outcome = await onOwnThread { () -> Outcome<Bool> in
                    Outcome { () throws(TransportError) in
                        _ = try DeadlineSocket.connect(
                            to: address, tls: client, serverName: "example.org", deadline: Deadline.now() + waitDeadline)
                        return true
                    }
                }
                guard case .failure(let error) = outcome else {
                    Issue.record("a certificate for another name must be refused")
                    return
                }
                #expect(error.kind == .certificateVerification)
                #expect(error.message.contains("hostname mismatch"), "\(error)")
                #expect(error.message.contains("\(address)"), "\(error)")
            }
        }
    }
}
