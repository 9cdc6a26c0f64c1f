import Foundation
import Testing
import SupporterNode
import SupporterREST
import SupporterCore
import SupportSession
import SupportWire
import SupportHTTP
import SupportRuntime
import TestSupport
import SupporterModel

/// Token checks, back-off per client address, and the bound on their audit rows (SPEC §13).
@Suite struct AuthenticationGuardTests {
    static let start = Date(unixMilliseconds: 1_796_033_700_000)
    static let admin = AuthenticationGuard.Credential.admin(tokenID: "0123456789ab")

    static func status(_ decision: AuthenticationGuard.Decision) -> Int {
        switch decision {
        case .accept: 200
        case .refuse(let error, _): error.kind.status.code
        }
    }

    @Test func theDefaultsAreTheDocumentedNumbers() {
        let policy = AuthenticationGuard.Policy()
        #expect(policy.backoff.freeFailures == 5)
        #expect(policy.backoff.base == .seconds(1))
        #expect(policy.backoff.maximum == .seconds(300))
        #expect(policy.backoff.decayInterval == .seconds(60))
        #expect(policy.addresses == 10_000)
        #expect(policy.audit == AuditThrottle.Policy(window: .seconds(60), globalLimit: 600, keys: 10_000))
    }

    @Test func fiveUnknownTokensAreFreeThenTheAddressWaitsWithRetryAfter() {
        var guardian = AuthenticationGuard()
        let statuses = (0..<7).map { _ in Self.status(guardian.check(.unknown, address: "127.0.0.1", now: Self.start)) }
        #expect(statuses == [401, 401, 401, 401, 401, 401, 429])
        guard case .refuse(let error, let row) = guardian.check(.missing, address: "127.0.0.1", now: Self.start) else {
            Issue.record("a blocked address was served")
            return
        }
        #expect(error.kind == .tooManyRequests)
        #expect(error.retryAfter == .seconds(1))
        #expect(row == nil)
        // Another address is not affected; the block ends after its time.
        let other = guardian.check(.unknown, address: "127.0.0.2", now: Self.start)
        #expect(Self.status(other) == 401)
        let later = guardian.check(.missing, address: "127.0.0.1", now: Self.start + 1)
        #expect(Self.status(later) == 401)
    }

    @Test func aValidAdminTokenIsNeverRefusedForItsAddressesFailures() {
        var guardian = AuthenticationGuard()
        for _ in 0..<20 { _ = guardian.check(.unknown, address: "127.0.0.1", now: Self.start) }
        let guess = guardian.check(.unknown, address: "127.0.0.1", now: Self.start)
        #expect(Self.status(guess) == 429)
        let admin = guardian.check(Self.admin, address: "127.0.0.1", now: Self.start)
        #expect(admin == .accept(tokenID: "0123456789ab"))
    }

    @Test func missingAndDeviceTokensAreRefusedButNotCounted() {
        var guardian = AuthenticationGuard()
        for _ in 0..<20 {
            let missing = guardian.check(.missing, address: "127.0.0.1", now: Self.start)
            let device = guardian.check(.device, address: "127.0.0.1", now: Self.start)
            #expect(Self.status(missing) == 401)
            #expect(Self.status(device) == 403)
        }
        #expect(guardian.failures("127.0.0.1", now: Self.start) == 0)
    }

    @Test func guessesWhileBlockedAreAuditedButDoNotGrowTheBlock() {
        var guardian = AuthenticationGuard()
        var rows = 0
        for _ in 0..<20 {
            if case .refuse(_, _?) = guardian.check(.unknown, address: "127.0.0.1", now: Self.start) { rows += 1 }
        }
        #expect(rows == 1)
        #expect(guardian.failures("127.0.0.1", now: Self.start) == 6)
        let aggregates = guardian.tick(now: Self.start + 60)
        #expect(aggregates.map { $0.details["count"] } == ["19"])
    }

    @Test func failuresAreAuditedOncePerAddressPerMinuteThenAsOneAggregate() {
        var policy = AuthenticationGuard.Policy()
        policy.backoff.freeFailures = 1000  // keep counting failures instead of answering 429
        var guardian = AuthenticationGuard(policy: policy)
        var rows: [AuditEvent] = []
        for second in 0..<50 {
            for address in ["198.51.100.1", "198.51.100.2"] {
                if case .refuse(_, let row?) = guardian.check(.unknown, address: address, now: Self.start + Double(second)) {
                    rows.append(row)
                }
            }
        }
        #expect(rows.count == 2)
        #expect(rows.map { $0.details["source_address"] } == ["198.51.100.1", "198.51.100.2"])
        #expect(rows.allSatisfy { $0.kind == .error && $0.details["what"] == "rest_authentication_failed" })
        let early = guardian.tick(now: Self.start + 59)
        #expect(early.isEmpty, "the windows are still open")
        let aggregates = guardian.tick(now: Self.start + 60)
        #expect(aggregates.count == 2)
        #expect(aggregates.allSatisfy { $0.details["what"] == "rest_authentication_failures_suppressed" })
        #expect(aggregates.map { $0.details["count"] } == ["49", "49"])
        #expect(aggregates.first?.details["since"] == "\(Self.start.unixMilliseconds)")
        // A new window: one row again.
        if case .refuse(_, let row) = guardian.check(.unknown, address: "198.51.100.1", now: Self.start + 61) {
            #expect(row != nil)
        }
    }

    @Test func auditRowsHaveAGlobalLimitPerMinute() {
        var policy = AuthenticationGuard.Policy()
        policy.audit.globalLimit = 10
        var guardian = AuthenticationGuard(policy: policy)
        var rows = 0
        for index in 0..<100 {
            if case .refuse(_, _?) = guardian.check(.unknown, address: "198.51.100.\(index)", now: Self.start) { rows += 1 }
        }
        #expect(rows == 10)
        let aggregates = guardian.tick(now: Self.start + 60)
        #expect(aggregates.map { $0.details["source_address"] } == ["*"])
        #expect(aggregates.first?.details["count"] == "90")
    }

    @Test func atShutdownEveryHeldBackCountIsWritten() {
        var policy = AuthenticationGuard.Policy()
        policy.backoff.freeFailures = 1000
        var guardian = AuthenticationGuard(policy: policy)
        for _ in 0..<3 { _ = guardian.check(.unknown, address: "198.51.100.1", now: Self.start) }
        let early = guardian.tick(now: Self.start + 1)
        #expect(early.isEmpty)
        let last = guardian.tick(now: Self.start + 2, everything: true)
        #expect(last.map { $0.details["count"] } == ["2"])
    }

    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER  abc ", "abc"), ("Basic YTpi", nil), ("Bearer", nil),
        ("Bearer ", nil), ("", nil),
    ] as [(String, String?)])
    func onlyTheBearerSchemeCarriesAToken(_ field: String, _ token: String?) {
        #expect(AuthenticationGuard.bearerToken(field) == token)
    }
}
