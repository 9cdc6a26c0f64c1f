import Foundation
import Glibc
import Testing
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import SupportWire

extension TransportIntegration {
    /// Happy Eyeballs for a node's addresses (RFC 8305), over real sockets: an address that never answers costs the
    /// stagger, not the connect timeout, and only the winner's link reaches the caller's delegate.
    @Suite struct ConnectionRaceTests {
        /// The handshake deadline of dials to a silent port: ten times the longest wait of a test.
        static let silentDeadline: Duration = .seconds(600)

        /// A TCP port that completes the TCP handshake (the kernel's backlog) and then says nothing: a TLS handshake
        /// to it hangs until its timeout, as a black-holed address does.
        final class SilentPort: Sendable {
            let fd: Int32
            let port: UInt16
            init() throws {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                self.fd = fd
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                address.sin_port = 0
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
                }
                guard bound == 0, listen(fd, 16) == 0 else { throw WaitTimeout(description: "cannot listen") }
                _ = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                }
                self.port = UInt16(bigEndian: address.sin_port)
            }
            deinit { close(fd) }

            /// Whether a dialler's connection is waiting in the backlog within `limit` (not accepted). Blocks, as
            /// ``peerClosed(within:)`` does.
            func connectionArrives(within limit: Duration) -> Bool {
                var listening = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let milliseconds = Int32(limit.components.seconds * 1000)
                return poll(&listening, 1, milliseconds) == 1
            }

            /// Whether the dialler's connection waiting in the backlog is closed by the dialler (EOF or reset) within
            /// `limit`: accepts it, then reads (the ClientHello) until the end. Blocks the calling thread (use it through
            /// `blockingWork`, never on the cooperative pool).
            func peerClosed(within limit: Duration) -> Bool {
                let deadline = ContinuousClock.now + limit
                func remainingMilliseconds() -> Int32 {
                    let left = deadline - ContinuousClock.now
                    return left <= .zero ? 0 : Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
                }
                var listening = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&listening, 1, remainingMilliseconds()) == 1 else { return false }
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return false }
                defer { close(connection) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    var readable = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                    guard poll(&readable, 1, remainingMilliseconds()) == 1 else { return false }
                    let count = read(connection, &buffer, buffer.count)
                    if count <= 0 { return true }  // EOF, or a reset
                }
            }
        }

        @Test func aSilentFirstAddressCostsTheStaggerNotTheTimeout() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let silent = try SilentPort()
                let resolver = NameResolver(threadCount: 1, queueLimit: 4)
                let addresses =
                    try await resolver.resolve(host: "127.0.0.1", port: silent.port)
                    + resolver.resolve(host: "127.0.0.1", port: server.port)
                let recorder = LinkRecorder()
                // A silent address waited for would hold the dial for this handshake deadline: far beyond any bound below.
                let context = try fixture.clientContext { $0.handshakeTimeout = Self.silentDeadline }
                let loop = fixture.clientLoop
                let started = ContinuousClock.now
                let link = try await ConnectionRace.run(addresses) { address, claim throws(TransportError) in
                    let gate = ConnectionRaceGate(target: recorder, claim: claim)
                    let link = try await TLSDialer.connectForTests(
                        to: address, serverName: "localhost", context: context, settings: .device(), loop: loop, delegate: gate)
                    withExtendedLifetime(gate) {}
                    return link
                }
                let elapsed = ContinuousClock.now - started
                #expect(link.peerAddress?.port == server.port)
                // The silent address would hold the dial for its 600 s handshake deadline were it waited for; 60 s
                // is generous for a stagger of 250 ms and a loopback handshake on a loaded machine.
                #expect(elapsed < waitDeadline, "took \(elapsed): the silent address was waited for")
                #expect(elapsed >= ConnectionRace.attemptDelay)
                #expect(recorder.parameters != nil)  // the winner's linkDidOpen reached the caller's delegate
                // The losing attempt is cancelled, its socket closed now, not at its 600 s handshake deadline.
                let losingClosed = await blockingWork { silent.peerClosed(within: waitDeadline) }
                #expect(losingClosed, "the losing attempt's connection stayed open")
                link.close()
            }
        }

        /// Cancelling the caller's task stops a dial that would otherwise wait for its handshake deadline.
        @Test func cancellingTheCallerStopsEveryAttempt() async throws {
            try await withTransport { fixture in
                let silent = try SilentPort()
                let resolver = NameResolver(threadCount: 1, queueLimit: 4)
                let addresses = try await resolver.resolve(host: "127.0.0.1", port: silent.port)
                let context = try fixture.clientContext { $0.handshakeTimeout = Self.silentDeadline }
                let loop = fixture.clientLoop
                let dial = Task { () async -> Result<FramedLink, TransportError> in
                    do throws(TransportError) {
                        return .success(
                            try await ConnectionRace.run(addresses) { address, claim throws(TransportError) in
                                try await TLSDialer.connectForTests(
                                    to: address, serverName: "localhost", context: context, settings: .device(),
                                    loop: loop, delegate: nil)
                            })
                    } catch { return .failure(error) }
                }
                // The attempt is in its TLS handshake (its connection in the silent port's backlog) when cancelled.
                #expect(await blockingWork { silent.connectionArrives(within: waitDeadline) })
                let cancelledAt = ContinuousClock.now
                dial.cancel()
                let outcome = await dial.value
                // The handshake deadline is 600 s; 60 s is generous for a cancellation on a loaded machine.
                #expect(ContinuousClock.now - cancelledAt < waitDeadline, "the dial waited for its deadline")
                guard case .failure(let error) = outcome else {
                    Issue.record("a silent address opened a link")
                    return
                }
                #expect(error.kind == .cancelled, "\(error)")
                let cancelledClosed = await blockingWork { silent.peerClosed(within: waitDeadline) }
                #expect(cancelledClosed, "the cancelled dial's connection stayed open")
            }
        }

        @Test func refusalsStartTheNextAttemptAtOnceAndTheLastErrorEndsTheRace() async throws {
            try await withTransport { fixture in
                let resolver = NameResolver(threadCount: 1, queueLimit: 4)
                let refused = try await resolver.resolve(host: "127.0.0.1", port: 1)  // nothing listens on port 1
                let context = try fixture.clientContext()
                let loop = fixture.clientLoop
                let started = ContinuousClock.now
                var failure: TransportError?
                do throws(TransportError) {
                    // A long stagger: were refusals waited out instead of starting the next attempt, this would take
                    // two minutes; three refused connects take milliseconds, however loaded the machine.
                    _ = try await ConnectionRace.run(refused + refused + refused, attemptDelay: .seconds(60)) {
                        address, claim throws(TransportError) in
                        try await TLSDialer.connectForTests(
                            to: address, serverName: "localhost", context: context, settings: .device(), loop: loop,
                            delegate: ConnectionRaceGate(target: nil, claim: claim))
                    }
                } catch {
                    failure = error
                }
                #expect(failure?.kind == .connectionRefused, "\(String(describing: failure))")
                // Three refusals in a row, each starting the next at once: no 60 s stagger waited.
                #expect(ContinuousClock.now - started < .seconds(60))
            }
        }

        @Test func theOrderAlternatesFamiliesStartingWithTheResolversFirst() async throws {
            let resolver = NameResolver(threadCount: 1, queueLimit: 4)
            let v4a = try await resolver.resolve(host: "127.0.0.1", port: 1)[0]
            let v4b = try await resolver.resolve(host: "127.0.0.2", port: 1)[0]
            let v6a = try await resolver.resolve(host: "::1", port: 1)[0]
            let v6b = try await resolver.resolve(host: "::2", port: 1)[0]
            let order = ConnectionRace.ordered([v6a, v6b, v4a, v4b]).map(\.description)
            #expect(order == [v6a, v4a, v6b, v4b].map(\.description))
        }
    }
}
