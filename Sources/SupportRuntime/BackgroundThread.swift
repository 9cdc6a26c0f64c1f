internal import CLinuxShims
import SupportUtilities

/// Marks the calling thread as background work: its nice value becomes 19, so that on a busy machine the scheduler
/// runs the event loops and the store writer first whenever they wake, and this thread gets what is left. For work
/// whose delay costs nothing but whose CPU bursts would otherwise land between a frame's arrival and its answer (the
/// store's WAL checkpoints).
public enum BackgroundThread {
    /// Lowers the calling thread's priority; false when the system refused (the thread then keeps its priority).
    @discardableResult
    public static func lowerCurrentThreadPriority() -> Bool {
        rs_set_thread_nice(19) == 0
    }
}
