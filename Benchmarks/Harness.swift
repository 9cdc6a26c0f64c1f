import SupportWire
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupporterNode
import SupporterREST
import SupportPostgres

/// Settings shared by every benchmark group.
struct BenchmarkOptions: Sendable {
    /// Minimum wall time of one timed run.
    var minTime: Duration = .milliseconds(500)
    /// Timed runs per measurement; the median is reported.
    var repeats = 3
    /// Internal: this process is the allocation-counting child (see ``AllocationCounter``); count, print, time nothing.
    var allocationProbe = false
}

/// One subcommand of the executable: a named set of benchmarks that prints its own tables.
struct BenchmarkGroup: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (BenchmarkOptions) -> Void
}

/// Everything the benchmarks compute goes into this checksum, which `main` prints, so the optimizer cannot drop the
/// work.
enum Sink {
    nonisolated(unsafe) static var checksum: UInt64 = 0

    @inline(never) static func consume(_ value: UInt64) {
        checksum = checksum &* 31 &+ value
    }
}

/// A measured operation: `iteration` does a fixed amount of work (`frames` frames, `bytes` wire bytes) and returns a
/// value that depends on it.
struct Workload {
    let frames: Int
    let bytes: Int
    let iteration: () -> UInt64
}

/// The median of several timed runs of one workload, plus allocation counts.
struct Measurement {
    /// Seconds per iteration, one entry per timed run, sorted.
    let secondsPerIteration: [Double]
    let frames: Int
    let bytes: Int
    /// Heap allocations and requested bytes per frame, nil when not counted.
    let allocationsPerFrame: Double?
    let allocatedBytesPerFrame: Double?

    var median: Double { secondsPerIteration[secondsPerIteration.count / 2] }
    var framesPerSecond: Double { Double(frames) / median }
    /// Decimal megabytes (10^6 bytes) of wire bytes per second, headers included.
    var megabytesPerSecond: Double { Double(bytes) / median / 1e6 }
    var nanosecondsPerFrame: Double { median * 1e9 / Double(frames) }
    /// (slowest − fastest) / median of the timed runs, in percent.
    var spreadPercent: Double {
        (secondsPerIteration.last! - secondsPerIteration.first!) / median * 100
    }
}


enum Harness {
    /// Warms up, then times `options.repeats` runs of at least `options.minTime` each.
    static func measure(
        _ workload: Workload, options: BenchmarkOptions, allocations: AllocationCounter.Count? = nil
    ) -> Measurement {
        let clock = ContinuousClock()
        var checksum: UInt64 = 0

        // Warm-up: caches, branch predictors, buffers reaching their steady-state capacity.
        let warmUpEnd = clock.now.advanced(by: options.minTime / 5)
        repeat { checksum &+= workload.iteration() } while clock.now < warmUpEnd

        var perIteration: [Double] = []
        for _ in 0..<max(1, options.repeats) {
            var iterations = 0
            let start = clock.now
            var elapsed: Duration
            repeat {
                checksum &+= workload.iteration()
                iterations += 1
                elapsed = start.duration(to: clock.now)
            } while elapsed < options.minTime
            perIteration.append(elapsed.seconds / Double(iterations))
        }
        perIteration.sort()
        Sink.consume(checksum)
        return Measurement(
            secondsPerIteration: perIteration, frames: workload.frames, bytes: workload.bytes,
            allocationsPerFrame: allocations?.allocationsPerFrame, allocatedBytesPerFrame: allocations?.bytesPerFrame)
    }

    /// In the allocation-probe child: warms `workload` up, traces a batch of iterations and prints the counts as
    /// `alloc<TAB>key<TAB>frames<TAB>allocations<TAB>bytes`.
    static func printAllocationCount(key: String, _ workload: Workload) {
        var checksum: UInt64 = 0
        for _ in 0..<3 { checksum &+= workload.iteration() }
        let iterations = max(3, 3_000 / max(workload.frames, 1))
        guard let (count, traceChecksum) = AllocationCounter.traced(iterations: iterations, workload.iteration) else {
            return
        }
        Sink.consume(checksum &+ traceChecksum)
        print("alloc\t\(key)\t\(iterations * workload.frames)\t\(count.allocations)\t\(count.bytes)")
    }
}
