import Foundation
import Synchronization
import Testing

@testable import SupporterStore
import SupporterCore
import SupporterModel

/// The one writer queue of every engine, driven by a worker that records what it was given and can be held inside a
/// batch (so that work piles up behind it). The queue is the unit here; the engines' own tests run it on SQLite and
/// PostgreSQL.
@Suite struct StoreWriteQueueTests {
    /// Records batches and calls; `hold` makes the next batch wait until `release()`.
    final class RecordingWorker: StoreQueueWorker, @unchecked Sendable {
        // @unchecked: every mutable field is inside `log`, a Mutex; the semaphores are thread-safe.
        struct Log {
            var batches: [[String]] = []
            var calls: [String] = []
            var order: [String] = []
            var housekeeping = 0
            var finished = 0
            var holdNext = false
        }
        let log = Mutex(Log())
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let housekept = DispatchSemaphore(value: 0)
        let interval: Duration?
        /// Answers fewer jobs than given (a broken engine).
        let answersShort: Bool

        init(interval: Duration? = nil, answersShort: Bool = false) {
            self.interval = interval
            self.answersShort = answersShort
        }

        var housekeepingInterval: Duration? { interval }

        func apply(_ batch: [[StoreIntent]]) -> [StoreError?] {
            let names = batch.map { intents in intents.map(Self.name).joined() }
            let hold = log.withLock { log -> Bool in
                log.batches.append(names)
                log.order += names
                defer { log.holdNext = false }
                return log.holdNext
            }
            if hold {
                entered.signal()
                gate.wait()
            }
            let answers = names.map { name -> StoreError? in
                name.hasPrefix("bad")
                    ? StoreError(kind: .constraint, operation: "apply", message: "refused \(name)", path: "test")
                    : nil
            }
            return answersShort ? Array(answers.dropLast()) : answers
        }

        func afterBatch() {}
        func housekeep() {
            log.withLock { $0.housekeeping += 1 }
            housekept.signal()
        }
        func finish() { log.withLock { $0.finished += 1 } }

        func holdNextBatch() { log.withLock { $0.holdNext = true } }
        func release() { gate.signal() }

        static func name(_ intent: StoreIntent) -> String {
            if case .deleteCode(let code) = intent { return code }
            return "?"
        }
    }

    static func job(_ name: String) -> [StoreIntent] { [.deleteCode(name)] }

    /// Collects completions in the order they ran; `done` is signalled once per completion.
    final class Completions: Sendable {
        let results = Mutex<[(String, StoreError?)]>([])
        let done = DispatchSemaphore(value: 0)
        func handler(_ name: String) -> @Sendable (StoreError?) -> Void {
            { error in
                self.results.withLock { $0.append((name, error)) }
                self.done.signal()
            }
        }
        func wait(for count: Int) { for _ in 0..<count { done.wait() } }
    }

    static func makeQueue(_ worker: RecordingWorker, capacity: Int = 100, maximumBatch: Int = 512) -> StoreWriteQueue {
        StoreWriteQueue(
            threadName: "test-writer", location: "test", worker: worker, logger: .disabled, capacity: capacity,
            maximumBatch: maximumBatch)
    }

    @Test func aBurstSubmittedWhileTheThreadWorksCostsNoWakeUpAndOneBatch() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker)
        let completions = Completions()
        worker.holdNextBatch()
        #expect(queue.submit(Self.job("first"), completion: completions.handler("first")))
        worker.entered.wait()  // the thread is inside the first batch
        let wakeUpsBefore = queue.statistics.wakeUps  // 1, or 0 when the thread had not gone to sleep yet
        for index in 0..<100 { queue.submit(Self.job("j\(index)"), completion: completions.handler("j\(index)")) }
        worker.release()
        completions.wait(for: 101)
        let statistics = queue.statistics
        #expect(statistics.wakeUps == wakeUpsBefore)  // the burst woke nobody
        #expect(wakeUpsBefore <= 1)
        #expect(statistics.transactions == 2)
        #expect(statistics.largestBatch == 100)
        #expect(completions.results.withLock { $0.map(\.0) } == ["first"] + (0..<100).map { "j\($0)" })
        queue.stop()
    }

    @Test func batchesAreCutAtTheMaximumAndKeepSubmissionOrder() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker, maximumBatch: 4)
        let completions = Completions()
        worker.holdNextBatch()
        queue.submit(Self.job("a"), completion: completions.handler("a"))
        worker.entered.wait()
        for index in 0..<10 { queue.submit(Self.job("b\(index)"), completion: completions.handler("b\(index)")) }
        worker.release()
        completions.wait(for: 11)
        let batches = worker.log.withLock { $0.batches }
        #expect(batches.map(\.count) == [1, 4, 4, 2])
        #expect(batches.flatMap { $0 } == ["a"] + (0..<10).map { "b\($0)" })
        queue.stop()
    }

    @Test func aFullQueueRefusesAtOnceAndCountsIt() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker, capacity: 3)
        let completions = Completions()
        worker.holdNextBatch()
        queue.submit(Self.job("held"), completion: completions.handler("held"))
        worker.entered.wait()  // in a batch: no longer waiting
        #expect(queue.submit(Self.job("w1"), completion: completions.handler("w1")))
        #expect(queue.submit(Self.job("w2"), completion: completions.handler("w2")))
        #expect(queue.submit(Self.job("w3"), completion: completions.handler("w3")))
        #expect(queue.queued == 3)
        #expect(!queue.submit(Self.job("refused"), completion: completions.handler("refused")))
        #expect(queue.statistics.refusedWhenFull == 1)
        worker.release()
        completions.wait(for: 4)
        #expect(!completions.results.withLock { $0.map(\.0) }.contains("refused"))
        queue.stop()
    }

    @Test func callsRunInOrderWithTheJobs() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker)
        let completions = Completions()
        worker.holdNextBatch()
        queue.submit(Self.job("a"), completion: completions.handler("a"))
        worker.entered.wait()
        queue.submit(Self.job("b"), completion: completions.handler("b"))
        queue.call {
            worker.log.withLock { $0.order.append("call") }
            completions.handler("call")(nil)
        }
        queue.submit(Self.job("c"), completion: completions.handler("c"))
        worker.release()
        completions.wait(for: 4)
        // The call splits the batch: b is applied before it, c after.
        #expect(worker.log.withLock { $0.order } == ["a", "b", "call", "c"])
        queue.stop()
    }

    @Test func aFailedJobFailsAloneAndAShortAnswerFailsTheRest() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker)
        let completions = Completions()
        worker.holdNextBatch()
        queue.submit(Self.job("a"), completion: completions.handler("a"))
        worker.entered.wait()
        queue.submit(Self.job("bad1"), completion: completions.handler("bad1"))
        queue.submit(Self.job("ok"), completion: completions.handler("ok"))
        worker.release()
        completions.wait(for: 3)
        let results = completions.results.withLock { $0 }
        #expect(results.map { $0.1 == nil } == [true, false, true])
        #expect(results[1].1?.kind == .constraint)
        #expect(queue.statistics.jobsFailed == 1)
        queue.stop()

        let short = RecordingWorker(answersShort: true)
        let broken = Self.makeQueue(short)
        let more = Completions()
        broken.submit(Self.job("x"), completion: more.handler("x"))
        more.wait(for: 1)
        #expect(more.results.withLock { $0.first?.1 } != nil)  // no answer is no acknowledgement
        broken.stop()
    }

    @Test func stopDrainsWhatIsQueuedFinishesOnceAndRefusesLaterWork() {
        let worker = RecordingWorker()
        let queue = Self.makeQueue(worker)
        let completions = Completions()
        worker.holdNextBatch()
        queue.submit(Self.job("a"), completion: completions.handler("a"))
        worker.entered.wait()
        queue.submit(Self.job("b"), completion: completions.handler("b"))
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            queue.stop()
            stopped.signal()
        }
        worker.release()
        stopped.wait()
        #expect(completions.results.withLock { $0.map(\.0) } == ["a", "b"])
        #expect(worker.log.withLock { $0.finished } == 1)
        #expect(!queue.submit(Self.job("late"), completion: completions.handler("late")))
        #expect(!queue.call {})
        queue.stop()  // a second stop returns at once
        #expect(worker.log.withLock { $0.finished } == 1)
    }

    @Test func housekeepingRunsWhileIdle() {
        let worker = RecordingWorker(interval: .milliseconds(5))
        let queue = Self.makeQueue(worker)
        // No work at all: the thread still wakes for its housekeeping, again and again.
        for _ in 0..<3 { worker.housekept.wait() }
        #expect(worker.log.withLock { $0.housekeeping } >= 3)
        #expect(queue.statistics.wakeUps == 0)  // timeouts, not submissions
        queue.stop()
    }
}
