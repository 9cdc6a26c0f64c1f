import Foundation
import Testing

@testable import SupportRuntime
import SupportUtilities
import SupportWire
import TestSupport

@Suite struct BackgroundThreadTests {
    /// The nice value of the calling thread, from /proc/thread-self/stat (field 19).
    static func currentThreadNice() -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may hold spaces) start at field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 16 ? Int(fields[16]) : nil
    }

    @Test func aBackgroundThreadRunsAtNiceNineteenAndOthersKeepTheirs() async {
        let niceValues: (Int?, Int?, Bool) = await withCheckedContinuation { continuation in
            let thread = Thread {
                let before = Self.currentThreadNice()
                let lowered = BackgroundThread.lowerCurrentThreadPriority()
                continuation.resume(returning: (before, Self.currentThreadNice(), lowered))
            }
            thread.start()
        }
        #expect(niceValues.2)
        #expect(niceValues.1 == 19)
        #expect(niceValues.0 != 19)
        // Per thread, not per process: this thread is unchanged.
        #expect(Self.currentThreadNice() != 19)
    }
}
