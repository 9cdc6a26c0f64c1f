import Dispatch
import Foundation
import Glibc
import TestSupport
import Testing

@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// The store writer takes WAL checkpoints over from SQLite: its checkpointer copies the WAL on its own connection once
/// enough frames wait, and the writer checkpoints between batches once the WAL reaches its limit, so the WAL stays
/// under a stated bound even when jobs never stop coming.
@Suite struct StoreWriterCheckpointTests {
    static func intents(_ n: Int) -> [StoreIntent] {
        // About 300 bytes of details: a few rows fill a page.
        let details = ["note": String(repeating: "x", count: 300), "n": "\(n)"]
        let event = AuditEvent(
            time: Date(timeIntervalSince1970: Double(n)), code: "482913067", kind: .deviceOnline, details: details)
        return [.audit(event)]
    }

    static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Waits until `condition` holds (a 60 s deadline); returns whether it did.
    static func eventually(_ condition: () -> Bool) -> Bool {
        waitUntilBlocking(condition)
    }

    @Test func theCheckpointerCopiesTheWALIntoTheDatabase() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("store.sqlite")
        let writer = StoreWriter(
            store: try SessionStore(path: path), logger: .disabled, backgroundCheckpointFrames: 8)
        defer { writer.stop() }
        let sizeBefore = Self.fileSize(path)
        // 200 rows of ~350 bytes: ~70 KB, far below SQLite's own automatic checkpoint (1,000 pages, ~4 MB) and the
        // writer's limit (4,096 frames), so only the checkpointer moves them into the database file.
        let done = DispatchSemaphore(value: 0)
        for n in 0..<200 {
            let queued = writer.submit(Self.intents(n)) { error in
                #expect(error == nil)
                done.signal()
            }
            #expect(queued)
        }
        for _ in 0..<200 { #expect(done.wait(timeout: .now() + 5) == .success) }
        #expect(Self.eventually { writer.statistics.backgroundCheckpoints > 0 })
        #expect(Self.fileSize(path) >= sizeBefore + 60_000)
        #expect(writer.statistics.writerCheckpoints == 0)
    }

    @Test func theWALStaysUnderItsLimitWhileJobsNeverStop() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("store.sqlite")
        let limit = 64
        // Batches of at most 4 jobs (~2 pages each) and 3,000 jobs queued at once: the queue never empties until the
        // end, so no idle checkpoint runs; without the limit the WAL would reach ~6,000 frames (~24 MB).
        let writer = StoreWriter(
            store: try SessionStore(path: path), logger: .disabled, maximumBatch: 4, walFrameLimit: limit)
        defer { writer.stop() }
        let jobs = 3_000
        let done = DispatchSemaphore(value: 0)
        for n in 0..<jobs {
            let queued = writer.submit(Self.intents(n)) { error in
                #expect(error == nil)
                done.signal()
            }
            #expect(queued)
        }
        for _ in 0..<jobs { #expect(done.wait(timeout: .now() + 30) == .success) }
        let statistics = writer.statistics
        #expect(statistics.writerCheckpoints > 0)
        // One batch past the limit at most: 4 jobs of a page or two each, plus the pages they split.
        let slack = 16
        #expect(statistics.largestWAL <= limit + slack)
        #expect(Self.fileSize(path + "-wal") <= (limit + slack) * (4096 + 24) + 32)
    }
}
