import Foundation
import Testing
import TestSupport

@testable import SupporterNode
import SupportRuntime
import SupportUtilities
import SupporterCore
import SupporterStores

/// A supporter node on an embedded event loop with the loop's virtual clock: its once-a-second sweep is a timer on
/// that loop and its wall time is the loop's, so a code's lifetime or a login session's idle timeout passes in one
/// `advance(by:)` — no wall-clock wait for the time to pass.
@Suite(.serialized, .timeLimit(.minutes(2))) struct VirtualTimeNodeTests {
    /// A started node (listening on a free port) on one embedded loop, with an in-memory store.
    final class Fixture: Sendable {
        let certificates: TestCertificates
        let loop: EventLoop
        let node: SupporterNode

        init() throws {
            certificates = try TestCertificates.make()
            loop = try EventLoop.embedded()
            var configuration = SupporterNodeConfiguration(
                tls: .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            configuration.port = 0
            node = try SupporterNode(
                configuration: configuration, store: try StoreConfiguration().open().engine,
                loops: EventLoopGroup(loops: [loop]), clock: loop.clock)
            try node.start()
            loop.advance()  // the listener and the sweep's first timer are armed on the loop
        }

        func stop() {
            node.shutdown()
            loop.shutdown()  // the node does not stop loops it was given
            certificates.remove()
        }
    }

    @Test func codeExpiresWhenVirtualTimePassesItsLifetime() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        let info = try await node.createCode(lifetime: .seconds(5))
        let code = info.record.code
        // The node's wall time is the loop's: the start date, and nothing has been advanced yet.
        #expect(info.record.createdAt == EventLoop.embeddedStartDate)
        #expect(info.record.validUntil == EventLoop.embeddedStartDate.addingTimeInterval(5))

        fixture.loop.advance(by: .seconds(4))
        #expect(node.code(code)?.state == .open)
        #expect(try node.auditEvents(code: code).map(\.kind) == [.codeCreated])

        // Past its lifetime: the next sweep (a timer on the loop) expires it and records `code_expired`.
        fixture.loop.advance(by: .seconds(2))
        #expect(node.code(code)?.state == .expired)
        // The expiry's commit is the store writer's (a thread of its own): wait for the row, not for time to pass.
        let expired = try await eventually("the code_expired row") {
            try node.auditEvents(code: code).first { $0.kind == .codeExpired }
        }
        #expect(expired.time == EventLoop.embeddedStartDate.addingTimeInterval(5))
        #expect(try node.auditEvents(code: code).map(\.kind) == [.codeCreated, .codeExpired])
    }

    @Test func loginSessionEndsWhenVirtualTimePassesItsIdleTimeout() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        _ = try await node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        let (secret, session, _) = try await node.signIn(
            login: "ann", password: "the right password", address: "127.0.0.1")
        #expect(session.createdAt == EventLoop.embeddedStartDate)
        #expect(node.loginSession(secret: secret) != nil)

        // Unused for just under the idle timeout: still signed in (and this use starts the timeout again).
        fixture.loop.advance(by: .seconds(Int64(LoginSessionTable.idleTimeout) - 60))
        #expect(node.loginSession(secret: secret) != nil)

        // Unused for the whole idle timeout: the sweep has forgotten it, and the secret no longer signs in.
        fixture.loop.advance(by: .seconds(Int64(LoginSessionTable.idleTimeout) + 1))
        #expect(node.loginSession(secret: secret) == nil)
        #expect(node.people.withLock { $0.loginSessions.session(digest: LoginSessionTable.digest(of: secret)) } == nil)
    }
}
