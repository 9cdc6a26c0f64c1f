import SupporterCore
import Testing
import SupportSession
import SupportWire
import TestSupport

@Suite("login guard")
struct LoginGuardTests {
    let start = Duration.seconds(1_000_000)

    @Test("five wrong passwords from an address are free; the sixth blocks that address, not another")
    func perAddress() {
        var guardian = LoginGuard()
        for _ in 0..<5 { guardian.recordFailure(login: "alice", address: "10.0.0.9", now: start) }
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.9", now: start) == nil)
        guardian.recordFailure(login: "alice", address: "10.0.0.9", now: start)
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.9", now: start) == .seconds(1))
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.1", now: start) == nil)
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.9", now: start + .seconds(1)) == nil)
    }

    @Test("guesses spread over many addresses slow the account down, except where its owner signed in before")
    func perAccountSparesKnownAddresses() {
        var guardian = LoginGuard()
        guardian.recordSuccess(login: "alice", address: "10.0.0.1", now: start)
        for index in 0..<11 { guardian.recordFailure(login: "alice", address: "10.9.0.\(index)", now: start) }
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.77", now: start) != nil, "a new address waits")
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.1", now: start) == nil, "the owner's does not")
        #expect(guardian.retryAfter(login: "bob", address: "10.0.0.77", now: start) == nil, "other accounts do not")
    }

    @Test("a right password clears the address's and the account's failures")
    func successResets() {
        var guardian = LoginGuard()
        for _ in 0..<12 { guardian.recordFailure(login: "alice", address: "10.0.0.1", now: start) }
        guardian.recordSuccess(login: "alice", address: "10.0.0.1", now: start)
        #expect(guardian.failures(address: "10.0.0.1", now: start) == 0)
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.2", now: start) == nil)
    }

    @Test("a known address is forgotten after 30 days")
    func knownAddressesExpire() {
        var guardian = LoginGuard()
        guardian.recordSuccess(login: "alice", address: "10.0.0.1", now: start)
        let later = start + .seconds(31 * 24 * 3600)
        for index in 0..<11 { guardian.recordFailure(login: "alice", address: "10.9.0.\(index)", now: later) }
        guardian.tick(now: later)
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.1", now: later) != nil)
    }

    @Test("attempts in flight count: of 20 begun at once from one address, 6 are checked, as in a row")
    func simultaneousAttemptsFromOneAddress() {
        var guardian = LoginGuard()
        let begun = (0..<20).map { _ in guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: start) }
        #expect(begun.filter { $0 == nil }.count == 6)
        #expect(begun.compactMap { $0 }.allSatisfy { $0 == .seconds(1) })
        for _ in 0..<6 { guardian.finishAttempt(login: "alice", address: "10.0.0.9", .wrong, now: start) }
        #expect(guardian.retryAfter(login: "alice", address: "10.0.0.9", now: start) == .seconds(1), "the 6th blocks")
        // Once that block is over, one attempt is checked again (its failure would double the block), one at a time.
        let later = start + .seconds(1)
        #expect(guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: later) == nil)
        #expect(guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: later) == .seconds(2))
    }

    @Test("an attempt that was not decided by its password gives its place back; a right one resets")
    func uncheckedAndRightAttempts() {
        var guardian = LoginGuard()
        for _ in 0..<6 { #expect(guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: start) == nil) }
        #expect(guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: start) != nil, "6 in flight: full")
        guardian.finishAttempt(login: "alice", address: "10.0.0.9", .unchecked, now: start)
        #expect(guardian.failures(address: "10.0.0.9", now: start) == 0, "not counted")
        #expect(guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: start) == nil, "its place is free")
        for _ in 0..<5 { guardian.finishAttempt(login: "alice", address: "10.0.0.9", .wrong, now: start) }
        guardian.finishAttempt(login: "alice", address: "10.0.0.9", .right, now: start)
        #expect(guardian.failures(address: "10.0.0.9", now: start) == 0)
        let again = (0..<6).map { _ in guardian.beginAttempt(login: "alice", address: "10.0.0.9", now: start) }
        #expect(again.allSatisfy { $0 == nil }, "nothing left in flight or counted")
    }

    @Test("attempts in flight on one account from many addresses: 11 checked, the rest wait")
    func simultaneousAttemptsOnOneAccount() {
        var guardian = LoginGuard()
        let begun = (0..<30).map { guardian.beginAttempt(login: "alice", address: "10.2.0.\($0)", now: start) }
        #expect(begun.filter { $0 == nil }.count == 11)
    }
}
