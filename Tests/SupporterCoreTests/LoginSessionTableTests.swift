import Foundation
import Testing

@testable import SupporterCore

@Suite("login session table")
struct LoginSessionTableTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a session is found by its secret only, with its own CSRF token, and ends at sign-out")
    func openUseClose() throws {
        var table = LoginSessionTable()
        let (secret, session, _) = table.open(login: "alice", now: start)
        #expect(secret.count >= 43 && session.csrfToken.count >= 43 && secret != session.csrfToken)
        #expect(!secret.contains(session.id), "the public id gives the secret away")
        #expect(table.use(secret: secret, now: start)?.login == "alice")
        #expect(table.use(secret: secret + "x", now: start) == nil)
        #expect(table.use(secret: session.id, now: start) == nil)
        #expect(table.close(secret: secret)?.id == session.id)
        #expect(table.use(secret: secret, now: start) == nil)
    }

    @Test("unused for 8 hours, or 24 hours after sign-in, a session is over")
    func expiry() {
        var table = LoginSessionTable()
        let (idle, _, _) = table.open(login: "alice", now: start)
        #expect(table.use(secret: idle, now: start + 8 * 3600 - 1) != nil)
        #expect(table.use(secret: idle, now: start + 16 * 3600) == nil, "idle 8 h")
        let (busy, _, _) = table.open(login: "bob", now: start)
        var now = start
        for _ in 0..<6 {
            now += 4 * 3600
            _ = table.use(secret: busy, now: now)
        }
        #expect(table.use(secret: busy, now: start + 24 * 3600 + 1) == nil, "24 h in all")
    }

    @Test("disabling an account ends all its sessions and no other's")
    func closeAll() {
        var table = LoginSessionTable()
        let (first, _, _) = table.open(login: "alice", now: start)
        let (second, _, _) = table.open(login: "alice", now: start)
        let (other, _, _) = table.open(login: "bob", now: start)
        table.closeAll(of: "alice")
        #expect(table.use(secret: first, now: start) == nil && table.use(secret: second, now: start) == nil)
        #expect(table.use(secret: other, now: start) != nil)
    }
}
