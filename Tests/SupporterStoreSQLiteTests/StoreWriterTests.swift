import Dispatch
import Foundation
import Synchronization
import Testing

@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// The writer's queue: order kept across many batches, a bounded queue, and a stop that writes everything queued.
@Suite struct StoreWriterTests {
    static func intents(_ n: Int) -> [StoreIntent] {
        [.audit(AuditEvent(time: Date(timeIntervalSince1970: Double(n)), code: "482913067", kind: .deviceOnline))]
    }

    /// Many more jobs than one batch holds, from several threads at once: each thread's jobs complete in the order it
    /// queued them, and the store holds every one.
    @Test func jobsFromSeveralThreadsCompleteInOrderAcrossManyBatches() throws {
        let store = try SessionStore(path: ":memory:")
        let writer = StoreWriter(store: store, logger: .disabled, maximumBatch: 16)
        let completed = Mutex<[Int: [Int]]>([:])
        let perThread = 1_000
        let threads = 4
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let n = thread * perThread + index
                let queued = writer.submit(Self.intents(n)) { error in
                    #expect(error == nil)
                    completed.withLock { $0[thread, default: []].append(index) }
                    done.signal()
                }
                #expect(queued)
            }
        }
        for _ in 0..<(threads * perThread) { #expect(done.wait(timeout: .now() + 30) == .success) }
        writer.stop()
        for thread in 0..<threads {
            #expect(completed.withLock { $0[thread] } == Array(0..<perThread), "thread \(thread)")
        }
        #expect(try store.auditEvents(code: "482913067", limit: 10_000).count == threads * perThread)
        #expect(writer.statistics.largestBatch <= 16)
    }

    /// `stop()` returns after every queued job was written and told so; a job after it is refused.
    @Test func stopWritesEverythingQueuedThenRefuses() throws {
        let store = try SessionStore(path: ":memory:")
        let writer = StoreWriter(store: store, logger: .disabled)
        let written = Atomic<Int>(0)
        for n in 0..<500 {
            #expect(writer.submit(Self.intents(n)) { error in if error == nil { written.add(1, ordering: .relaxed) } })
        }
        writer.stop()
        #expect(written.load(ordering: .relaxed) == 500)
        #expect(!writer.submit(Self.intents(501)) { _ in })
        #expect(writer.queued == 0)
    }
}
