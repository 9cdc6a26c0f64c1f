import Foundation
import SupporterCore
import SupportSession
import Testing
import SupportWire
import TestSupport
import SupporterModel

/// The registry as a value: every finding of the node-core review reproduced against it.
@Suite struct CodeRegistryTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func registry(_ change: (inout CodeRegistry.Policy) -> Void = { _ in }) -> CodeRegistry {
        var policy = CodeRegistry.Policy()
        change(&policy)
        return CodeRegistry(policy: policy)
    }

    func record(_ code: String = "123-456-789", lifetime: TimeInterval = 3600) -> SessionCodeRecord {
        SessionCodeRecord(
            code: code, waitingMessage: "hold on", createdAt: start, validUntil: start.addingTimeInterval(lifetime))
    }

    func attempt(_ connection: UInt64, _ code: String = "123-456-789", token: String? = "tok1") -> RegistrationAttempt {
        RegistrationAttempt(connection: ConnectionID(connection), code: code, deviceTokenID: token, deviceName: "Pixel")
    }

    func open(_ registry: inout CodeRegistry, _ connection: UInt64, from address: String = "198.51.100.7") {
        #expect(registry.connectionOpened(ConnectionID(connection), address: address, now: start) == .admit)
    }

    func refusal(_ outcome: RegistrationOutcome) -> RegistrationRefusal? {
        if case .refused(let refusal) = outcome { return refusal }
        return nil
    }

    func audits(_ intents: [StoreIntent]) -> [AuditEvent] {
        intents.compactMap { if case .audit(let event) = $0 { event } else { nil } }
    }

    func throwsConflict(_ body: () throws(RegistryError) -> Void) -> Bool {
        do throws(RegistryError) {
            try body()
            return false
        } catch {
            return error.kind == .conflict
        }
    }

    // MARK: registration

    @Test func aValidRegistrationIsAuditedAndOnlineOnlyAfterItsCommit() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        open(&registry, 1)
        let outcome = registry.register(attempt(1), now: start)
        guard case .accepted(let type, let message, let intents) = outcome else {
            Issue.record("refused: \(outcome)")
            return
        }
        #expect(type == .remoteSupport && message == "hold on")
        #expect(audits(intents).map(\.kind) == [.deviceOnline])
        // Reserved, but nobody is told before the commit.
        #expect(registry.info("123-456-789", now: start)?.state == .open)
        #expect(registry.holder(of: "123-456-789") == nil)
        let committed = registry.registrationCommitted(ConnectionID(1), code: "123-456-789")
        #expect(committed)
        #expect(registry.info("123-456-789", now: start)?.state == .online)
        #expect(registry.holder(of: "123-456-789") == ConnectionID(1))
    }

    @Test func aSecondDeviceIsRefusedWhileTheFirstRegistrationCommits() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        open(&registry, 1)
        open(&registry, 2)
        _ = registry.register(attempt(1), now: start)
        #expect(refusal(registry.register(attempt(2), now: start))?.reason == .sessionCodeInUse)
    }

    @Test func aFailedCommitFreesTheCode() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        open(&registry, 1)
        open(&registry, 2)
        _ = registry.register(attempt(1), now: start)
        registry.registrationFailed(ConnectionID(1), code: "123-456-789")
        guard case .accepted = registry.register(attempt(2), now: start) else {
            Issue.record("the code stayed taken")
            return
        }
    }

    @Test func invalidTokensCannotLockOutTheDeviceWithTheRightToken() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        // Seven REGISTERs with a bad token for the known code, from several addresses.
        for index in 0..<7 {
            open(&registry, UInt64(10 + index), from: "203.0.113.\(index % 3)")
            _ = registry.register(attempt(UInt64(10 + index), token: nil), now: start)
        }
        open(&registry, 1, from: "203.0.113.0")
        guard case .accepted = registry.register(attempt(1), now: start) else {
            Issue.record("the right device with the right token was refused")
            return
        }
    }

    @Test func invalidTokensAreRateLimitedPerAddress() {
        var registry = registry()
        for index in 0..<5 {
            open(&registry, UInt64(index + 1))
            #expect(refusal(registry.register(attempt(UInt64(index + 1), token: nil), now: start))?.reason == .invalidAPIToken)
        }
        open(&registry, 6)
        #expect(refusal(registry.register(attempt(6, token: nil), now: start))?.reason == .invalidAPIToken)
        open(&registry, 7)
        let limited = refusal(registry.register(attempt(7, token: nil), now: start))
        #expect(limited?.reason == .rateLimited)
        #expect(limited?.retryAfter == .seconds(1))
        // Another address is not affected.
        open(&registry, 8, from: "192.0.2.1")
        #expect(refusal(registry.register(attempt(8, token: nil), now: start))?.reason == .invalidAPIToken)
    }

    @Test func aBlockedAddressGetsOnlyAFewNewConnectionsPerSecond() {
        var registry = registry {
            $0.addressBackoff.base = .seconds(60)
            $0.blockedAddressAdmissionsPerSecond = 2
            $0.blockedAddressBurst = 2
        }
        for index in 0..<6 {
            #expect(registry.connectionOpened(ConnectionID(UInt64(index + 1)), address: "198.51.100.7", now: start) == .admit)
            _ = registry.register(attempt(UInt64(index + 1), token: nil), now: start)
            registry.connectionClosed(ConnectionID(UInt64(index + 1)))
        }
        // Blocked now: a burst of 2, then refused at accept (before any TLS work) until the budget refills.
        var admitted = 0
        for index in 0..<20 {
            if registry.connectionOpened(ConnectionID(UInt64(100 + index)), address: "198.51.100.7", now: start) == .admit {
                admitted += 1
            }
        }
        #expect(admitted == 2)
        let oneSecondLater = start.addingTimeInterval(1)
        #expect(registry.connectionOpened(ConnectionID(200), address: "198.51.100.7", now: oneSecondLater) == .admit)
        #expect(registry.connectionOpened(ConnectionID(201), address: "198.51.100.7", now: oneSecondLater) == .admit)
        #expect(registry.connectionOpened(ConnectionID(202), address: "198.51.100.7", now: oneSecondLater) != .admit)
        // Another address, and the same one once its block ran out, are not throttled.
        #expect(registry.connectionOpened(ConnectionID(300), address: "192.0.2.1", now: start) == .admit)
        #expect(registry.connectionOpened(ConnectionID(301), address: "198.51.100.7", now: start.addingTimeInterval(61)) == .admit)
        #expect(registry.connectionOpened(ConnectionID(302), address: "198.51.100.7", now: start.addingTimeInterval(61)) == .admit)
        #expect(registry.connectionOpened(ConnectionID(303), address: "198.51.100.7", now: start.addingTimeInterval(61)) == .admit)
        #expect(registry.invariantViolation() == nil)
    }

    @Test func anAddressFailureCountDecaysAndASuccessResetsIt() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        for index in 0..<5 {
            open(&registry, UInt64(index + 1))
            _ = registry.register(attempt(UInt64(index + 1), token: nil), now: start)
        }
        // One wrong attempt 17 minutes later is not punished.
        open(&registry, 20)
        let later = start.addingTimeInterval(17 * 60)
        #expect(refusal(registry.register(attempt(20, token: nil), now: later))?.reason == .invalidAPIToken)
        open(&registry, 21)
        #expect(refusal(registry.register(attempt(21, token: nil), now: later))?.retryAfter == nil)

        // A success from the address resets it.
        var other = self.registry()
        _ = try other.createCode(record(), by: .local)
        for index in 0..<5 {
            open(&other, UInt64(index + 1))
            _ = other.register(attempt(UInt64(index + 1), token: nil), now: start)
        }
        open(&other, 30)
        guard case .accepted(_, _, let intents) = other.register(attempt(30), now: start) else {
            Issue.record("refused")
            return
        }
        #expect(intents.contains(.deleteBackoff(key: "addr:198.51.100.7")) == false)  // never blocked: no row
        open(&other, 31)
        #expect(refusal(other.register(attempt(31, token: nil), now: start))?.reason == .invalidAPIToken)
    }

    @Test func aConnectionIsClosedAfterItsFifthRefusal() {
        var registry = registry()
        open(&registry, 1)
        for round in 1...5 {
            let refused = refusal(registry.register(attempt(1, "000-000-000"), now: start))
            #expect(refused?.closeConnection == (round == 5))
        }
    }

    @Test func refusalsWhileRateLimitedAreCountedNotAuditedOneByOne() {
        // Every connection must get through admission to be refused at REGISTER: the accept-time throttle of a blocked
        // address (tested on its own) gets a budget that covers them all.
        var registry = registry { $0.blockedAddressBurst = 1_000_000 }
        var rows: [AuditEvent] = []
        for index in 0..<20_000 {
            let connection = UInt64(index + 1)
            open(&registry, connection)
            rows += audits(registry.register(attempt(connection, token: nil), now: start).intents)
            registry.connectionClosed(ConnectionID(connection))
        }
        #expect(rows.count == 6)  // five free failures and the one that blocked the address
        #expect(rows.allSatisfy { $0.details["reason"] == "invalid_api_token" })
        let flushed = audits(registry.tick(now: start.addingTimeInterval(61)).intents)
        #expect(flushed.count == 1)
        #expect(flushed.first?.details["count"] == "19994")
        #expect(flushed.first?.details["what"] == "registration_refusals_suppressed")
    }

    @Test func refusalRowsPerSourceAreCappedPerWindow() throws {
        var registry = registry()
        _ = try registry.createCode(record("777-777-777"), by: .local)
        open(&registry, 1)
        _ = registry.register(attempt(1, "777-777-777"), now: start)
        // A valid token on a code in use: never rate-limited, so only the per-source cap bounds the rows.
        var rows = 0
        for index in 0..<200 {
            let connection = UInt64(index + 2)
            open(&registry, connection)
            rows += audits(registry.register(attempt(connection, "777-777-777"), now: start).intents).count
            registry.connectionClosed(ConnectionID(connection))
        }
        #expect(rows == 10)
        let flushed = audits(registry.tick(now: start.addingTimeInterval(61)).intents)
        #expect(flushed.first?.details["count"] == "190")
    }

    @Test func refusalAuditRowsHaveAGlobalLimitPerWindow() {
        var registry = registry { $0.refusalAuditGlobalLimit = 10 }
        var rows = 0
        for index in 0..<100 {
            let connection = UInt64(index + 1)
            open(&registry, connection, from: "10.0.\(index / 256).\(index % 256)")
            rows += audits(registry.register(attempt(connection, token: nil), now: start).intents).count
        }
        #expect(rows == 10)
        let flushed = audits(registry.tick(now: start.addingTimeInterval(61)).intents)
        #expect(flushed.compactMap { Int($0.details["count"] ?? "") }.reduce(0, +) == 90)
    }

    @Test func aValidTokenGuessingCodesIsLimitedByItsOwnBackoff() {
        var registry = registry {
            $0.tokenBackoff = BackoffPolicy(freeFailures: 2, base: .seconds(5), maximum: .seconds(60), decayInterval: .seconds(60))
        }
        open(&registry, 1)
        #expect(refusal(registry.register(attempt(1, "000-000-001"), now: start))?.reason == .invalidSessionCode)
        #expect(refusal(registry.register(attempt(1, "000-000-002"), now: start))?.reason == .invalidSessionCode)
        #expect(refusal(registry.register(attempt(1, "000-000-003"), now: start))?.reason == .invalidSessionCode)
        #expect(refusal(registry.register(attempt(1, "000-000-004"), now: start))?.reason == .rateLimited)
    }

    @Test func closedExpiredAndUnknownCodesAreRefusedWithTheirReasons() throws {
        var registry = registry()
        _ = try registry.createCode(record("111-111-111"), by: .local)
        _ = try registry.createCode(record("222-222-222", lifetime: 1), by: .local)
        _ = try registry.finishCode("111-111-111", closing: true, by: .local, now: start)
        open(&registry, 1)
        #expect(refusal(registry.register(attempt(1, "111-111-111"), now: start))?.reason == .sessionCodeClosed)
        #expect(
            refusal(registry.register(attempt(1, "222-222-222"), now: start.addingTimeInterval(2)))?.reason
                == .sessionCodeExpired)
        #expect(refusal(registry.register(attempt(1, "333-333-333"), now: start))?.reason == .invalidSessionCode)
    }

    // MARK: connections

    @Test func unregisteredConnectionsAreCappedPerAddressAndInAll() throws {
        var registry = registry {
            $0.unauthenticatedPerAddress = 3
            $0.unauthenticatedTotal = 5
        }
        for index in 1...3 { open(&registry, UInt64(index), from: "a") }
        #expect(registry.connectionOpened(ConnectionID(4), address: "a", now: start) != .admit)
        open(&registry, 5, from: "b")
        open(&registry, 6, from: "c")
        // Full: a source holding fewer than the biggest holder less one takes the place of that holder's oldest
        // connection; one as big is refused (SPEC §13.1, fair shares).
        #expect(registry.connectionOpened(ConnectionID(7), address: "d", now: start) == .admitEvicting(ConnectionID(1)))
        #expect(registry.connectionOpened(ConnectionID(10), address: "b", now: start) != .admit)
        #expect(registry.unauthenticatedConnections == 5)
        // A registered connection no longer counts.
        _ = try registry.createCode(record(), by: .local)
        guard case .accepted = registry.register(attempt(3), now: start) else {
            Issue.record("refused")
            return
        }
        open(&registry, 8, from: "a")
        // A closed one frees its place.
        registry.connectionClosed(ConnectionID(2))
        open(&registry, 9, from: "a")
        #expect(registry.unauthenticatedConnections == 5)
    }

    @Test("an IPv6 /64 is one source: it shares one cap, refusal rows name the /64, a device's own rows its address")
    func anIPv6Slash64IsOneSource() throws {
        var registry = registry { $0.unauthenticatedPerAddress = 2 }
        open(&registry, 1, from: "2001:db8:5:6::1")
        open(&registry, 2, from: "2001:db8:5:6:ffff::2")
        #expect(registry.connectionOpened(ConnectionID(3), address: "2001:db8:5:6::3", now: start) != .admit)
        open(&registry, 4, from: "2001:db8:5:7::1")
        open(&registry, 5, from: "::ffff:198.51.100.7")
        #expect(registry.connectionOpened(ConnectionID(6), address: "198.51.100.7", now: start) == .admit)
        #expect(registry.connectionOpened(ConnectionID(7), address: "198.51.100.7", now: start) != .admit,
            "an IPv4-mapped address is its IPv4 address")

        _ = try registry.createCode(record(), by: .local)
        guard case .refused(let refused) = registry.register(attempt(2, token: nil), now: start) else {
            Issue.record("an unknown token was accepted")
            return
        }
        #expect(audits(refused.intents).first?.details["source_address"] == "2001:db8:5:6::/64")
        guard case .accepted(_, _, let intents) = registry.register(attempt(1), now: start) else {
            Issue.record("refused")
            return
        }
        let online = audits(intents).first { $0.kind == .deviceOnline }
        #expect(online?.details["source_address"] == "2001:db8:5:6::1")
        #expect(registry.invariantViolation() == nil)
    }

    // MARK: sessions and codes

    @Test func aSessionIsAuditedFromStartToEndAndTheCodeIsFreedAfter() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        open(&registry, 1)
        _ = registry.register(attempt(1), now: start)
        registry.registrationCommitted(ConnectionID(1), code: "123-456-789")
        let sent = registry.requestSent(
            code: "123-456-789", requestID: 1, supporterName: "Alice", type: .screenShare,
            by: AuditActor(kind: "rest", tokenID: "abc", address: "192.0.2.9"), now: start)
        #expect(registry.info("123-456-789", now: start)?.assignedSupporter == nil)  // not before the commit
        registry.requestCommitted(code: "123-456-789", assignee: sent.assignee)
        let request = audits(sent.intents).first
        #expect(request?.kind == .requestSent)
        #expect(request?.details["actor_token"] == "abc")
        #expect(registry.info("123-456-789", now: start)?.assignedSupporter == "Alice")
        let started = registry.sessionEvent(.connected(requestID: 1), on: ConnectionID(1), now: start)
        #expect(audits(started).map(\.kind) == [.requestAllowed, .sessionStarted])
        #expect(registry.info("123-456-789", now: start)?.state == .active)
        let ended = registry.sessionEvent(
            .ended(reason: .endedBySupporter, text: nil), on: ConnectionID(1), now: start.addingTimeInterval(2))
        #expect(audits(ended).map(\.kind) == [.sessionEnded, .deviceOffline])
        #expect(audits(ended).first?.details["duration_ms"] == "2000")
        #expect(registry.info("123-456-789", now: start)?.state == .open)
        #expect(registry.holder(of: "123-456-789") == nil)
    }

    @Test func anIdleCodeExpiresIntoTheTrailOnceAndAHeldOneIsReturned() throws {
        var registry = registry()
        _ = try registry.createCode(record("111-111-111", lifetime: 10), by: .local)
        _ = try registry.createCode(record("222-222-222", lifetime: 10), by: .local)
        open(&registry, 1)
        _ = registry.register(attempt(1, "222-222-222"), now: start)
        let later = start.addingTimeInterval(11)
        let first = registry.tick(now: later)
        #expect(first.expiring == ["222-222-222"])
        #expect(audits(first.intents).map(\.code) == ["111-111-111"])
        #expect(audits(registry.tick(now: later.addingTimeInterval(1)).intents).isEmpty)
    }

    @Test func codesAreUniqueAndADeviceBlocksDeletion() throws {
        var registry = registry()
        _ = try registry.createCode(record(), by: .local)
        let duplicate = throwsConflict { () throws(RegistryError) in _ = try registry.createCode(record(), by: .local) }
        #expect(duplicate)
        open(&registry, 1)
        _ = registry.register(attempt(1), now: start)
        let held = throwsConflict { () throws(RegistryError) in
            _ = try registry.deleteCode("123-456-789", by: .local, now: start)
        }
        #expect(held)
        registry.connectionClosed(ConnectionID(1))
        let intents = try registry.deleteCode("123-456-789", by: .local, now: start)
        #expect(intents.first == .deleteCode("123-456-789"))
    }
}

extension CodeRegistryTests {
    /// Found by FuzzCodeRegistry: opening a connection id twice counted it twice.
    @Test func aConnectionIDOpenedTwiceIsRefusedAndCountedOnce() {
        var registry = registry()
        open(&registry, 1)
        #expect(registry.connectionOpened(ConnectionID(1), address: "198.51.100.7", now: start) != .admit)
        #expect(registry.unauthenticatedConnections == 1)
        #expect(registry.invariantViolation() == nil)
    }
}
