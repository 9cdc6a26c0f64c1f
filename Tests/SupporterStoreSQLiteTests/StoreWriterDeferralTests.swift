import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// A deferrable job (the record of a connection that closed) waits a little for the next job that wakes the writer and
/// shares its transaction; it is never left behind, and order is kept.
@Suite struct StoreWriterDeferralTests {
    /// The jobs written, in the order their completions ran.
    final class Written: Sendable {
        let numbers = Mutex<[Int]>([])
    }

    static func intents(_ n: Int) -> [StoreIntent] {
        [.audit(AuditEvent(time: Date(timeIntervalSince1970: Double(n)), code: "482913067", kind: .deviceOffline))]
    }

    /// Submits and returns a semaphore signalled on completion, and where the outcome goes.
    static func submit(_ writer: StoreWriter, _ n: Int, deferrable: Bool, order: Written) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let queued = writer.submit(intents(n), deferrable: deferrable) { error in
            if error == nil { order.numbers.withLock { $0.append(n) } }
            done.signal()
        }
        #expect(queued)
        return done
    }

    @Test func aDeferrableJobAloneIsWrittenSoon() throws {
        let writer = StoreWriter(store: try SessionStore(path: ":memory:"), logger: .disabled)
        defer { writer.stop() }
        let order = Written()
        // An idle writer: woken at once.
        #expect(Self.submit(writer, 1, deferrable: true, order: order).wait(timeout: .now() + 5) == .success)
        // A writer that just worked: written when the deferral time is up, with nothing else to wake it.
        #expect(Self.submit(writer, 2, deferrable: true, order: order).wait(timeout: .now() + 5) == .success)
        #expect(order.numbers.withLock { $0 } == [1, 2])
    }

    /// The writer's statistics once it has counted `applied` jobs (completions run before it counts a batch).
    static func statistics(_ writer: StoreWriter, once applied: Int) -> StoreWriter.Statistics {
        _ = waitUntilBlocking { writer.statistics.jobsApplied >= applied }
        return writer.statistics
    }

    @Test func aDeferrableJobRidesAlongWithTheNextJob() throws {
        let writer = StoreWriter(store: try SessionStore(path: ":memory:"), logger: .disabled)
        defer { writer.stop() }
        let order = Written()
        var shared = false
        // Timing-dependent (the two submits must come within the deferral time): a few tries.
        for attempt in 0..<5 where !shared {
            let base = attempt * 3
            #expect(Self.submit(writer, base, deferrable: false, order: order).wait(timeout: .now() + 5) == .success)
            let before = Self.statistics(writer, once: base + 1)
            let first = Self.submit(writer, base + 1, deferrable: true, order: order)
            let second = Self.submit(writer, base + 2, deferrable: false, order: order)
            #expect(first.wait(timeout: .now() + 5) == .success)
            #expect(second.wait(timeout: .now() + 5) == .success)
            let after = Self.statistics(writer, once: base + 3)
            #expect(after.jobsApplied - before.jobsApplied == 2)
            shared = after.transactions - before.transactions == 1
        }
        #expect(shared)
        let written = order.numbers.withLock { $0 }
        #expect(written == written.sorted())
    }

    @Test func stopWritesDeferredJobs() throws {
        let writer = StoreWriter(store: try SessionStore(path: ":memory:"), logger: .disabled)
        let order = Written()
        #expect(Self.submit(writer, 1, deferrable: false, order: order).wait(timeout: .now() + 5) == .success)
        let deferred = Self.submit(writer, 2, deferrable: true, order: order)
        writer.stop()
        #expect(deferred.wait(timeout: .now() + 5) == .success)
        #expect(order.numbers.withLock { $0 } == [1, 2])
    }
}
