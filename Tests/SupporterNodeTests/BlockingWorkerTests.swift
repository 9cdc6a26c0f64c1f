import Dispatch
import Testing
import TestSupport

@testable import SupporterNode
import SupportSession
import SupportWire
import SupportUtilities
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

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

/// Admission before the queue and the reserved lane (issue 20, finding 2).
@Suite struct BlockingWorkerAdmissionTests {
    /// A job that holds the worker's thread until `release()`: what a slow scrypt looks like, without the clock.
    final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        func wait() { semaphore.wait() }
        func release() { semaphore.signal() }
    }

    /// Holds the thread with `gate`, waiting until the held job is running (not merely queued).
    static func hold(_ worker: BlockingWorker, _ gate: Gate) async throws -> Task<Int?, Never> {
        let started = Locked(false)
        let task = Task { await worker.run(key: "holder") { started.withLock { $0 = true }; gate.wait(); return 0 } }
        try await eventually("the held job to start", timeout: .seconds(60)) { started.withLock { $0 } ? true : nil }
        return task
    }

    @Test func aKeyGetsAtMostPerKeyJobsWaitingOrRunning() async throws {
        let worker = BlockingWorker(limits: .init(capacity: 32, reservedCapacity: 8, perKey: 2))
        let gate = Gate()
        let held = try await Self.hold(worker, gate)
        let first = Task { await worker.run(key: "10.0.0.1") { 1 } }
        try await eventually("the first job to wait") { worker.waiting.normal == 1 ? true : nil }
        let second = Task { await worker.run(key: "10.0.0.1") { 2 } }
        try await eventually("the second job to wait") { worker.waiting.normal == 2 ? true : nil }
        // The third of that key is refused at once; another key still gets in.
        #expect(await worker.run(key: "10.0.0.1") { 3 } == nil)
        let other = Task { await worker.run(key: "10.0.0.2") { 4 } }
        try await eventually("the other key's job to wait") { worker.waiting.normal == 3 ? true : nil }
        gate.release()
        #expect(await [held.value, first.value, second.value, other.value] == [0, 1, 2, 4])
        // Done jobs give their key's room back.
        #expect(await worker.run(key: "10.0.0.1") { 5 } == 5)
        #expect(worker.counts.refused == 1)
        worker.stop()
    }

    @Test func aFullLaneRefusesAtOnceAndTheReservedLaneStillAdmits() async throws {
        let worker = BlockingWorker(limits: .init(capacity: 3, reservedCapacity: 1, perKey: 10))
        let gate = Gate()
        let held = try await Self.hold(worker, gate)
        var waiting: [Task<Int?, Never>] = []
        for value in 0..<3 {
            waiting.append(Task { await worker.run { value } })
            try await eventually("job \(value) to wait") { worker.waiting.normal == value + 1 ? true : nil }
        }
        #expect(await worker.run { 99 } == nil, "a full normal lane refuses")
        // The reserved lane has a thread of its own: hold it too, and fill its one place.
        let reservedGate = Gate()
        let reservedRunning = Locked(false)
        let reservedHeld = Task {
            await worker.run(lane: .reserved) { reservedRunning.withLock { $0 = true }; reservedGate.wait(); return 100 }
        }
        try await eventually("the reserved thread to be held") { reservedRunning.withLock { $0 } ? true : nil }
        let reserved = Task { await worker.run(lane: .reserved) { 101 } }
        try await eventually("the reserved job to wait") { worker.waiting.reserved == 1 ? true : nil }
        #expect(await worker.run(lane: .reserved) { 102 } == nil, "a full reserved lane refuses")
        reservedGate.release()
        #expect(await reservedHeld.value == 100)
        #expect(await reserved.value == 101)
        gate.release()
        for task in waiting { #expect(await task.value != nil) }
        _ = await held.value
        worker.stop()
    }

    @Test func aReservedJobWaitsNeitherForTheRunningJobNorForTheWaitingOnes() async throws {
        let worker = BlockingWorker()
        let gate = Gate()
        let held = try await Self.hold(worker, gate)
        let order = Locked([String]())
        var tasks: [Task<Void, Never>] = []
        for index in 0..<5 {
            tasks.append(Task { _ = await worker.run { order.withLock { $0.append("normal \(index)") } } })
            try await eventually("normal \(index) to wait") { worker.waiting.normal == index + 1 ? true : nil }
        }
        // The worker's thread is still held (a stranger's scrypt): the reserved job runs now, on its own thread.
        _ = await worker.run(lane: .reserved) { order.withLock { $0.append("reserved") } }
        #expect(order.withLock { $0 } == ["reserved"])
        gate.release()
        for task in tasks { await task.value }
        _ = await held.value
        #expect(order.withLock { $0 } == ["reserved"] + (0..<5).map { "normal \($0)" })
        worker.stop()
    }
}
