package import SupporterStore
import SupporterCore
import Dispatch
import Foundation
import Synchronization
import SupportRuntime
package import SupportUtilities
import SupportWire

/// A thread with its own connection to the store's file that copies the WAL into the database (passive checkpoints)
/// when the store writer asks, so that the checkpoint's disk flushes do not stop the writer: in WAL mode a passive
/// checkpoint and a writer run at the same time (SQLite's checkpoint lock is not its write lock).
///
/// It never writes rows; a request while it works is remembered once. The writer still owns the bound on the WAL
/// (a checkpoint run by the writer itself lets the WAL start over; this one only keeps that checkpoint small).
package final class StoreCheckpointer: Sendable {
    private struct State {
        var requested = false
        var stopping = false
        /// WAL frames in the database file after the last checkpoint (here, or the writer's: ``note(backfilled:)``).
        var backfilled = 0
        var checkpoints = 0
    }

    private let database: SQLiteDatabase
    private let logger: NodeLogger
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    package init(path: String, durability: SQLiteDatabase.Durability, logger: NodeLogger) throws(StoreError) {
        database = try SQLiteDatabase(path: path, durability: durability)
        self.logger = logger
        let thread = Thread { [self] in self.run() }
        thread.name = "rsup-store-checkpoint"
        thread.start()
    }

    /// Asks for one checkpoint soon; returns at once.
    package func request() {
        let signal = state.withLock { state -> Bool in
            guard !state.requested, !state.stopping else { return false }
            state.requested = true
            return true
        }
        if signal { wake.signal() }
    }

    /// WAL frames a checkpoint (here or the writer's) has copied, as of the last one.
    package var backfilled: Int { state.withLock { $0.backfilled } }

    /// Records a checkpoint the writer ran on its own connection.
    package func note(backfilled: Int) { state.withLock { $0.backfilled = backfilled } }

    /// Waits for a checkpoint running here to end (its connection's lock is held for the whole checkpoint).
    package func waitForRunningCheckpoint() {
        try? database.withConnection { (_: borrowing SQLiteDatabase.Connection) throws(StoreError) in }
    }
    package var checkpoints: Int { state.withLock { $0.checkpoints } }

    package func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        // A checkpoint can wait; a loop or the writer that wakes while it copies pages should not.
        BackgroundThread.lowerCurrentThreadPriority()
        while true {
            wake.wait()
            let go = state.withLock { state -> Bool in
                state.requested = false
                return !state.stopping
            }
            guard go else {
                finished.signal()
                return
            }
            do throws(StoreError) {
                let (frames, backfilled) = try database.withConnection {
                    (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> (Int, Int) in
                    try connection.checkpoint(.passive)
                }
                // frames < 0: the writer was checkpointing (SQLITE_BUSY); nothing to record.
                if frames >= 0 {
                    state.withLock { state in
                        state.backfilled = backfilled
                        state.checkpoints += 1
                    }
                }
            } catch {
                logger.log(
                    .warning, "store: background checkpoint failed: \(error); the store writer checkpoints instead")
            }
        }
    }
}
