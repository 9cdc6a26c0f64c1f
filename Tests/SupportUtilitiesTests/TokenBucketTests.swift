import SupportUtilities
import Testing

@Suite struct TokenBucketTests {
    @Test func takeAdmitsTheBurstThenTheRate() {
        var bucket = TokenBucket(rate: 5, burst: 5)
        let admitted = (0..<10).filter { _ in bucket.take(now: .seconds(100)) }.count
        #expect(admitted == 5)
        let halfToken = bucket.take(now: .milliseconds(100_100))  // 0.1 s: half a token
        let oneToken = bucket.take(now: .milliseconds(100_200))  // 0.2 s: one
        #expect(!halfToken && oneToken)
    }

    @Test func spendGoesIntoDebtAndSaysHowLongItTakesToRepay() {
        var bucket = TokenBucket(rate: 100, burst: 10)
        let burst = bucket.spend(10, now: .seconds(1))
        let debt = bucket.spend(50, now: .seconds(1))
        let later = bucket.spend(1, now: .seconds(2))  // repaid: 100 tokens back (capped at 10), one spent
        #expect(burst == nil && debt == .milliseconds(500) && later == nil)
    }
}
