#if canImport(Glibc)
import Glibc
#endif

/// Counts heap allocations (calls to `malloc`, `calloc`, `realloc`, `memalign`, `aligned_alloc`, `posix_memalign`)
/// with glibc's own malloc tracer, from pure Swift.
///
/// Pure Swift cannot interpose `malloc` in its own executable (the compiler reserves the name, and the linker does
/// not export the definition to the shared libraries), and the Swift runtime's allocation hook is unusable on Linux
/// (enabling it reroutes retains through an adapter that crashes). glibc, though, ships `libc_malloc_debug.so`, whose
/// `mtrace()` logs every allocation and free to the file named by `MALLOC_TRACE`. That library slows every allocation
/// even when not tracing, so timings never run under it: the benchmark re-runs itself (`/proc/self/exe <group>
/// --allocation-probe`) with `LD_PRELOAD=libc_malloc_debug.so.0`; the child warms each workload up, traces a batch of
/// iterations, counts the allocation records and prints one line per workload, which the parent
/// reads (lines `alloc<TAB>key<TAB>frames<TAB>allocations<TAB>bytes`). Counts cover everything: Swift objects, `swift_slowAlloc`, C code.
enum AllocationCounter {
    struct Count {
        /// Frames processed in the traced batch.
        var frames = 0
        /// Allocation calls (a `realloc` counts as one).
        let allocations: Int
        /// Bytes those calls requested (not heap growth: memory freed in the batch is included).
        let bytes: Int

        var allocationsPerFrame: Double { Double(allocations) / Double(max(frames, 1)) }
        var bytesPerFrame: Double { Double(bytes) / Double(max(frames, 1)) }
    }

    static let probeFlag = "--allocation-probe"
    static let preload = "libc_malloc_debug.so.0"

    // MARK: child side

    private typealias TraceFunction = @convention(c) () -> Void
    private typealias VersionedSymbolLookup =
        @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>, UnsafePointer<CChar>) -> UnsafeMutableRawPointer?

    /// `mtrace`/`muntrace` of the preloaded tracer. Since glibc 2.34 libc's own are no-op stubs (the default symbol
    /// version, which plain `dlsym` finds); the working ones are the compat-version symbols of libc_malloc_debug.
    private static func tracerFunctions() -> (start: TraceFunction, stop: TraceFunction)? {
        guard
            getenv("LD_PRELOAD").map({ String(cString: $0).contains(preload) }) == true,
            let library = dlopen(preload, RTLD_NOW | RTLD_NOLOAD),
            let dlvsymSymbol = dlsym(nil, "dlvsym")
        else { return nil }
        let dlvsym = unsafeBitCast(dlvsymSymbol, to: VersionedSymbolLookup.self)
        guard let start = dlvsym(library, "mtrace", "GLIBC_2.2.5"), let stop = dlvsym(library, "muntrace", "GLIBC_2.2.5")
        else { return nil }
        return (unsafeBitCast(start, to: TraceFunction.self), unsafeBitCast(stop, to: TraceFunction.self))
    }

    /// In the probe child: runs `iterations` iterations of `body` under `mtrace()` and counts the records.
    static func traced(iterations: Int, _ body: () -> UInt64) -> (count: Count, checksum: UInt64)? {
        guard let (mtrace, muntrace) = tracerFunctions() else { return nil }
        let path = "/tmp/rsup-bench-alloc-\(getpid()).trace"
        setenv("MALLOC_TRACE", path, 1)
        defer { unlink(path) }
        var checksum: UInt64 = 0
        mtrace()
        for _ in 0..<iterations { checksum &+= body() }
        muntrace()
        guard let count = parseTrace(path) else { return nil }
        return (count, checksum)
    }

    /// Counts `+` (malloc, calloc, memalign) and `>` (realloc result) records of an mtrace log.
    private static func parseTrace(_ path: String) -> Count? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var allocations = 0
        var bytes = 0
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix("@ "), text.contains(" + ") || text.contains(" > ") else { continue }
            allocations += 1
            if let size = text.split(separator: " ").last.flatMap({ Int($0.dropFirst(2).filter(\.isHexDigit), radix: 16) }) {
                bytes += size
            }
        }
        return Count(allocations: allocations, bytes: bytes)
    }

    // MARK: parent side

    /// Runs this executable again as `<group> --allocation-probe` under the malloc tracer and returns its counts by
    /// workload key, or nil (with the reason) when that fails.
    static func probe(group: String) -> Result<[String: Count], ProbeFailure> {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return .failure(ProbeFailure("pipe failed")) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])

        let executable = "/proc/self/exe"
        let arguments = ["Benchmarks", group, probeFlag]
        let environment = ["LD_PRELOAD=\(preload)"] + (getenv("PATH").map { ["PATH=" + String(cString: $0)] } ?? [])
        var cArguments = arguments.map { strdup($0) } + [nil]
        var cEnvironment = environment.map { strdup($0) } + [nil]
        defer { for pointer in cArguments + cEnvironment { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, &cArguments, &cEnvironment)
        close(pipeEnds[1])
        guard spawned == 0 else {
            close(pipeEnds[0])
            return .failure(ProbeFailure("posix_spawn failed: \(spawned)"))
        }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
            if count > 0 { output += chunk[0..<count] } else if count < 0 && errno == EINTR { continue } else { break }
        }
        close(pipeEnds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { return .failure(ProbeFailure("probe process exited with status \(status)")) }
        var counts: [String: Count] = [:]
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 5, fields[0] == "alloc", let frames = Int(fields[2]), let allocations = Int(fields[3]),
                let bytes = Int(fields[4])
            else { continue }
            counts[String(fields[1])] = Count(frames: frames, allocations: allocations, bytes: bytes)
        }
        guard !counts.isEmpty else { return .failure(ProbeFailure("probe process reported no counts")) }
        return .success(counts)
    }

    struct ProbeFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
