import Testing

@testable import SupporterNode

@Suite struct BlockingWorkerTests {
    /// A node whose init fails after making its worker must leave no thread behind: the thread comes with the first job.
    @Test func noThreadUntilTheFirstJob() async {
        let worker = BlockingWorker()
        #expect(!worker.hasThread)
        let answer = await worker.run { 6 * 7 }
        #expect(answer == 42)
        #expect(worker.hasThread)
        worker.stop()
    }

    @Test func jobsRunInOrderAndAStoppedWorkerRefuses() async {
        let worker = BlockingWorker()
        var results: [Int] = []
        for value in 0..<5 { results.append(await worker.run { value } ?? -1) }
        #expect(results == [0, 1, 2, 3, 4])
        worker.stop()
        #expect(await worker.run { 1 } == nil)
    }

    @Test func aStoppedWorkerThatNeverRanRefusesAndStartsNoThread() async {
        let worker = BlockingWorker()
        worker.stop()
        #expect(await worker.run { 1 } == nil)
        #expect(!worker.hasThread)
    }
}
