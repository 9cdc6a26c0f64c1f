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
        /// A TCP port that completes the TCP handshake (the kernel's backlog) and then says nothing: a TLS handshake
        /// to it hangs until its timeout, as a black-holed address does.
        final class SilentPort {
            let fd: Int32
            let port: UInt16
            init() throws {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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
                let context = try fixture.clientContext()
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
                // The silent address would hold the dial for its 10 s handshake deadline were it waited for.
                #expect(elapsed < .seconds(6), "took \(elapsed): the silent address was waited for")
                #expect(elapsed >= ConnectionRace.attemptDelay)
                #expect(recorder.parameters != nil)  // the winner's linkDidOpen reached the caller's delegate
                link.close()
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
                    // A long stagger: were refusals waited out instead of starting the next attempt, this would take 10 s.
                    _ = try await ConnectionRace.run(refused + refused + refused, attemptDelay: .seconds(5)) {
                        address, claim throws(TransportError) in
                        try await TLSDialer.connectForTests(
                            to: address, serverName: "localhost", context: context, settings: .device(), loop: loop,
                            delegate: ConnectionRaceGate(target: nil, claim: claim))
                    }
                } catch {
                    failure = error
                }
                #expect(failure?.kind == .connectionRefused, "\(String(describing: failure))")
                // Three refusals in a row, each starting the next at once: no 5 s stagger waited.
                #expect(ContinuousClock.now - started < .seconds(4))
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
