import Foundation
import Testing
import TestSupport

@testable import SupporterNode
import SupportRuntime
import SupporterModel

/// The node's state is split by job (``SupporterNode/sessions``, ``SupporterNode/people``): what people do never
/// takes the lock devices take, and the two locks are never nested.
@Suite(.serialized, .timeLimit(.minutes(2))) struct NodeLockTests {
    /// A sign-in flood (wrong passwords from several addresses, refused ones included), then a sign-in, a session
    /// check, a sign-out and account changes: the people lock only. On an embedded loop nothing else runs meanwhile
    /// (the sweep and the listener wait for `advance`), so the session lock's count stands still unless this path took
    /// it.
    @Test func signingInNeverTakesTheSessionLock() async throws {
        let fixture = try VirtualTimeNodeTests.Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        _ = try await node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        let before = node.lockTakes

        await withTaskGroup(of: Void.self) { group in
            for attempt in 0..<24 {
                group.addTask {
                    _ = try? await node.signIn(
                        login: attempt % 2 == 0 ? "ann" : "nobody-\(attempt)", password: "wrong \(attempt)",
                        address: "192.0.2.\(attempt % 3 + 1)")
                }
            }
        }
        let (secret, _, _) = try await node.signIn(
            login: "ann", password: "the right password", address: "198.51.100.7")
        #expect(node.loginSession(secret: secret)?.account.login == "ann")
        #expect(node.knownSignInProof(login: "ann") != nil)
        _ = try await node.changeAccount("ann", SupporterAccountChange(displayName: "Ann Martin"))
        #expect(node.accounts().map(\.displayName) == ["Ann Martin"])
        try await node.signOut(secret: secret)
        #expect(node.loginSession(secret: secret) == nil)

        let after = node.lockTakes
        #expect(after.sessions == before.sessions, "the people path took the session lock")
        #expect(after.people > before.people + 24, "the people path's takes were counted")
    }

    /// A sign-in while another thread holds the session lock (as a long device step would): it finishes without
    /// waiting for it.
    @Test func signingInDoesNotWaitForTheSessionLock() async throws {
        let fixture = try VirtualTimeNodeTests.Fixture()
        defer { fixture.stop() }
        let node = fixture.node
        _ = try await node.addAccount(login: "ann", displayName: "Ann", password: "the right password")
        let held = DispatchSemaphore(value: 0)
        let signedIn = DispatchSemaphore(value: 0)
        let heldTooLong = Locked(false)
        Thread {
            node.sessions.withLock { _ in
                held.signal()
                // Released when the sign-in is through, or at a deadline if the sign-in waits for this lock.
                if signedIn.wait(timeout: .now() + .seconds(60)) == .timedOut { heldTooLong.withLock { $0 = true } }
            }
        }.start()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                held.wait()
                continuation.resume()
            }
        }
        let result = try await node.signIn(login: "ann", password: "the right password", address: "127.0.0.1")
        #expect(node.loginSession(secret: result.secret) != nil)
        signedIn.signal()
        #expect(!heldTooLong.withLock { $0 }, "the sign-in waited for the session lock")
    }

    @Test func takingOneNodeLockInsideAnotherStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let sessions = NodeLock("session", 0)
            let people = NodeLock("people", 0)
            sessions.withLock { _ in people.withLock { $0 += 1 } }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("the node's people lock taken while this thread holds one of its locks"), "\(stderr)")
    }
}
