import SupporterCore
import Testing
import SupportSession
import SupportWire
import TestSupport
import SupporterModel

@Suite struct AuditThrottleTests {
    let policy = AuditThrottle.Policy(window: .seconds(60), globalLimit: 3, keys: 2)

    @Test func oneRowPerKeyPerWindowTheRestCounted() {
        var throttle = AuditThrottle(policy: policy)
        let admitted = [0, 1, 59].map { throttle.admit("a", now: .seconds($0)) }
        #expect(admitted == [true, false, false])
        let early = throttle.flush(now: .seconds(59))
        #expect(early.isEmpty)
        let closed = throttle.flush(now: .seconds(60))
        #expect(closed == [AuditThrottle.Suppressed(key: "a", count: 2, since: .zero)])
        let again = throttle.admit("a", now: .seconds(61))
        #expect(again)
    }

    @Test func aWindowThatHeldNothingBackClosesSilently() {
        var throttle = AuditThrottle(policy: policy)
        _ = throttle.admit("a", now: .seconds(0))
        let closed = throttle.flush(now: .seconds(60))
        #expect(closed.isEmpty)
        #expect(throttle.trackedKeys == 0)
    }

    @Test func beyondTheTrackedKeysEventsCountTowardOneAggregate() {
        var throttle = AuditThrottle(policy: policy)
        let admitted = ["a", "b", "c"].map { throttle.admit($0, now: .seconds(0)) }
        #expect(admitted == [true, true, false], "only 2 keys are tracked")
        let closed = throttle.flush(now: .seconds(60))
        #expect(closed == [AuditThrottle.Suppressed(key: nil, count: 1, since: .zero)])
    }

    @Test func beyondTheGlobalLimitEventsCountTowardOneAggregate() {
        var throttle = AuditThrottle(policy: AuditThrottle.Policy(window: .seconds(60), globalLimit: 2, keys: 100))
        let admitted = ["a", "b", "c", "d"].map { throttle.admit($0, now: .seconds(0)) }
        #expect(admitted == [true, true, false, false])
        let closed = throttle.flush(now: .seconds(60))
        #expect(closed == [AuditThrottle.Suppressed(key: nil, count: 2, since: .zero)])
    }

    @Test func everythingClosesOpenWindowsAtOnce() {
        var throttle = AuditThrottle(policy: policy)
        _ = throttle.admit("a", now: .seconds(0))
        _ = throttle.admit("a", now: .seconds(1))
        let closed = throttle.flush(now: .seconds(2), everything: true)
        #expect(closed == [AuditThrottle.Suppressed(key: "a", count: 1, since: .zero)])
        #expect(throttle.trackedKeys == 0)
    }
}
