import Glibc
import Synchronization
import SupportUtilities

/// The programs' standard output and error, written so that a reader that went away (a closed pipe: `| head`, a log
/// shipper restarting) or a full disk is something the program reports, never a crash: SIGPIPE is ignored, and every
/// write is checked. The first failure on standard output is remembered; ``exitStatus(_:)`` turns it into an error.
public enum StandardStreams {
    private struct State {
        var outputFailure: String?
        var onOutputFailure: (@Sendable (String) -> Void)?
    }
    private static let state = Mutex(State())

    /// Call first: from then on a closed pipe fails a write with EPIPE instead of killing the process.
    public static func setUp() { signal(SIGPIPE, SIG_IGN) }

    /// Called once, with the reason, at the first write to standard output that fails (a long-running program says
    /// so in its log and goes on).
    public static func whenOutputFails(_ handler: @escaping @Sendable (String) -> Void) {
        state.withLock { $0.onOutputFailure = handler }
    }

    /// Writes all of `text` to standard output; false when it cannot (remembered, see ``outputFailure``).
    @discardableResult
    public static func writeOutput(_ text: String) -> Bool {
        if let reason = writeAll(STDOUT_FILENO, text) {
            let handler = state.withLock { state -> (@Sendable (String) -> Void)? in
                guard state.outputFailure == nil else { return nil }
                state.outputFailure = reason
                return state.onOutputFailure
            }
            handler?(reason)
            return false
        }
        return true
    }

    /// Writes all of `text` to standard error; a failure there has nowhere left to be told, and is ignored.
    public static func writeError(_ text: String) { _ = writeAll(STDERR_FILENO, text) }

    /// Why standard output could not be written, if it could not.
    public static var outputFailure: String? { state.withLock { $0.outputFailure } }

    /// `status`, unless the program meant to succeed but its output was lost: then one error line, and 1.
    public static func exitStatus(_ status: Int32) -> Int32 {
        guard status == 0, let reason = outputFailure else { return status }
        writeError("error: cannot write to standard output (\(reason)): what it should have shown is lost\n")
        return 1
    }

    /// Nil when all of `text` was written to `fd`, else the reason.
    private static func writeAll(_ fd: Int32, _ text: String) -> String? {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            bytes = bytes.dropFirst(written)
        }
        return nil
    }
}
