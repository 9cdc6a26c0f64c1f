import Foundation
import SupporterModel
import SupporterWebhooks
import Testing

@Suite struct WebhookRetryScheduleTests {
    let schedule = WebhookRetrySchedule()
    let start = Date(timeIntervalSince1970: 1_765_000_000)

    func delivery(attempts: Int) -> WebhookDelivery {
        WebhookDelivery(
            id: 1, endpointID: "wh_1", eventID: 9, eventKind: "session_started", code: nil, state: .pending,
            attempts: attempts, createdAt: start, nextAttemptAt: start)
    }

    @Test func theWaitDoublesFromTheBaseUpToTheCap() {
        #expect(schedule.delay(afterAttempts: 1) == .seconds(5))
        #expect(schedule.delay(afterAttempts: 2) == .seconds(10))
        #expect(schedule.delay(afterAttempts: 5) == .seconds(80))
        #expect(schedule.delay(afterAttempts: 10) == .seconds(2560))
        #expect(schedule.delay(afterAttempts: 11) == .seconds(3600))
        #expect(schedule.delay(afterAttempts: 1_000) == .seconds(3600))
    }

    @Test func aFailureInsideTheWindowIsRetried() {
        #expect(schedule.outcome(of: delivery(attempts: 0), failedAt: start) == .retry(at: start.addingTimeInterval(5)))
        let later = start.addingTimeInterval(3600)
        #expect(schedule.outcome(of: delivery(attempts: 3), failedAt: later) == .retry(at: later.addingTimeInterval(40)))
    }

    @Test func aFailureWhoseNextTryFallsPast24HoursGivesUpWithTheOlderBacklog() {
        let late = start.addingTimeInterval(86_400 - 60)
        #expect(schedule.outcome(of: delivery(attempts: 30), failedAt: late) == .failed(staleBefore: late.addingTimeInterval(-86_400)))
    }

    @Test func theAttemptsOfADayAreAbout35() {
        var now = start
        var attempts = 0
        while case .retry(let next) = schedule.outcome(of: delivery(attempts: attempts), failedAt: now) {
            attempts += 1
            now = next
        }
        #expect((30...40).contains(attempts + 1), "\(attempts + 1) attempts in 24 h")
    }
}
