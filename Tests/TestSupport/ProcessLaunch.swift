import Foundation
import Synchronization

/// Starts child processes one at a time.
///
/// swift-corelibs-foundation's `Process.run()` is not safe to call from several threads at once: concurrent launches
/// (tests run in parallel, and many start openssl, curl or our binaries) crashed in `memcpy` inside `Process.run()`.
/// Every test target launches through this lock; the children themselves still run concurrently.
public enum ProcessLaunch {
    private static let lock = Mutex<Void>(())

    public static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}
