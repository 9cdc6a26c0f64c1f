import Foundation
import Synchronization
import Testing
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import SupportWire

/// Name lookups run on the resolver's own bounded threads; literals skip it; a full queue is refused at once.
@Suite(.timeLimit(.minutes(2))) struct NameResolverTests {
    @Test(arguments: ["127.0.0.1", "::1", "10.1.2.3"])
    func ipLiteralsAreAnsweredWithoutALookup(host: String) async throws {
        let lookups = Atomic<Int>(0)
        let resolver = NameResolver(threadCount: 1, queueLimit: 1) { _, _ throws(TransportError) in
            lookups.wrappingAdd(1, ordering: .relaxed)
            return []
        }
        let addresses = try await resolver.resolve(host: host, port: 443)
        #expect(addresses.map(\.host) == [host])
        #expect(addresses.first?.port == 443)
        #expect(lookups.load(ordering: .relaxed) == 0)
    }

    @Test func namesAreLookedUpOnTheResolversThreadsNotTheCallers() async throws {
        let seen = Locked<[(name: String?, onLoop: Bool)]>([])
        let resolver = NameResolver(threadCount: 2, queueLimit: 4) { host, port throws(TransportError) in
            // The kernel's name of the thread (what `ps -L` shows), not Foundation's cached Thread.name.
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            seen.withLock { $0.append((name, EventLoop.isOnLoopThread)) }
            return [SocketAddress.literal(host: "127.0.0.1", port: port)!]
        }
        let addresses = try await resolver.resolve(host: "example.invalid", port: 7443)
        #expect(addresses.map(\.description) == ["127.0.0.1:7443"])
        let calls = seen.withLock { $0 }
        #expect(calls.count == 1)
        #expect(calls.first?.name == "rsup-resolver")
        #expect(calls.first?.onLoop == false)
    }

    @Test func lookupFailuresReachTheCaller() async throws {
        let resolver = NameResolver(threadCount: 1, queueLimit: 1) { host, _ throws(TransportError) in
            throw TransportError(.nameResolution, "cannot resolve '\(host)'")
        }
        await #expect { _ = try await resolver.resolve(host: "nowhere.invalid", port: 1) } throws: {
            ($0 as? TransportError)?.kind == .nameResolution
        }
    }

    @Test func aFullQueueIsRefusedAtOnceAndTheQueuedLookupsStillComplete() async throws {
        let release = DispatchSemaphore(value: 0)
        let started = Atomic<Int>(0)
        let resolver = NameResolver(threadCount: 1, queueLimit: 2) { _, port throws(TransportError) in
            started.wrappingAdd(1, ordering: .relaxed)
            release.wait()
            return [SocketAddress.literal(host: "127.0.0.1", port: port)!]
        }
        // One lookup runs (and blocks), two wait: the queue is full.
        let first = Task { try await resolver.resolve(host: "a.invalid", port: 1) }
        _ = try await eventually("the first lookup to start") { started.load(ordering: .relaxed) == 1 ? true : nil }
        let second = Task { try await resolver.resolve(host: "b.invalid", port: 2) }
        let third = Task { try await resolver.resolve(host: "c.invalid", port: 3) }
        _ = try await eventually("two lookups waiting") { resolver.waitingCount == 2 ? true : nil }
        let clock = ContinuousClock()
        let before = clock.now
        await #expect { _ = try await resolver.resolve(host: "d.invalid", port: 4) } throws: { error in
            guard let error = error as? TransportError else { return false }
            return error.kind == .resolverBusy && error.message.contains("2 name lookups already wait")
        }
        #expect(clock.now - before < .seconds(1), "refused at once, not after waiting")
        for _ in 0..<3 { release.signal() }
        #expect(try await first.value.first?.port == 1)
        #expect(try await second.value.first?.port == 2)
        #expect(try await third.value.first?.port == 3)
        #expect(resolver.waitingCount == 0)
    }
}

extension TransportIntegration {
    /// The dialer's use of the resolver, over real sockets.
    @Suite struct DialerResolutionTests {
        @Test func dialerLooksNamesUpThroughTheResolverAndLiteralsDirectly() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let lookups = Locked<[String]>([])
                let resolver = NameResolver(threadCount: 1, queueLimit: 1) { host, port throws(TransportError) in
                    lookups.withLock { $0.append(host) }
                    return [SocketAddress.literal(host: "127.0.0.1", port: port)!]
                }
                for host in ["localhost", "127.0.0.1"] {
                    let link = try await TLSDialer.connect(
                        host: host, port: server.port, context: try fixture.clientContext(), settings: .device(),
                        loop: fixture.clientLoop, connectTimeout: .seconds(10), delegate: nil, resolver: resolver)
                    link.close()
                }
                #expect(lookups.withLock { $0 } == ["localhost"])
            }
        }
    }
}
