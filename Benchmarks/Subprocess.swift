// Process, memory and async helpers for the `tls` group: child processes (openssl, the idle-client child), this
// process's RSS, file-descriptor limits, and running async transport calls from the synchronous harness.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import CLinuxShims  // for <malloc.h> (malloc_trim, mallinfo2), which Glibc does not import
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

/// A child process started with `posix_spawn`, its stdout (and optionally stdin) on pipes.
final class ChildProcess {
    let pid: pid_t
    /// Read end of the child's stdout, or -1 when discarded.
    private(set) var stdoutFD: Int32
    /// Write end of the child's stdin, or -1 when it reads /dev/null.
    private(set) var stdinFD: Int32
    let started = ContinuousClock.now
    private var pending: [UInt8] = []
    private(set) var exitStatus: Int32?
    private(set) var usage = rusage()

    /// Starts `executable` with `arguments` (argv[0] included). `captureOutput`: stdout on a pipe, else /dev/null;
    /// stderr is inherited when `inheritStandardError`, else /dev/null. `pipeInput`: stdin on a pipe we hold.
    init?(
        _ executable: String, _ arguments: [String], captureOutput: Bool, pipeInput: Bool = false,
        inheritStandardError: Bool = false
    ) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var outPipe: [Int32] = [-1, -1]
        var inPipe: [Int32] = [-1, -1]
        if captureOutput {
            guard ChildProcess.makePipe(&outPipe) else { return nil }
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if pipeInput {
            guard ChildProcess.makePipe(&inPipe) else { return nil }
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if !inheritStandardError { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, executable, &actions, nil, &cArguments, environ)
        if captureOutput { close(outPipe[1]) }
        if pipeInput { close(inPipe[0]) }
        guard result == 0 else {
            if captureOutput { close(outPipe[0]) }
            if pipeInput { close(inPipe[1]) }
            return nil
        }
        self.pid = pid
        self.stdoutFD = captureOutput ? outPipe[0] : -1
        self.stdinFD = pipeInput ? inPipe[1] : -1
    }

    /// A pipe whose ends close on exec: no other child inherits them (an inherited write end would hide EOF).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    deinit {
        if stdoutFD >= 0 { close(stdoutFD) }
        if stdinFD >= 0 { close(stdinFD) }
    }

    /// All of stdout until EOF.
    func readAll() -> String {
        var output = pending
        pending = []
        guard stdoutFD >= 0 else { return "" }
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress, $0.count) }
            if count > 0 { output += chunk[0..<count] } else if count < 0 && errno == EINTR { continue } else { break }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The next line of stdout, or nil at EOF or when `timeout` passes first.
    func readLine(timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero, stdoutFD >= 0 else { return nil }
            var descriptor = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: Int64(left.seconds * 1000) + 1))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { if ready == 0 { continue } else { return nil } }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress, $0.count) }
            if count > 0 { pending += chunk[0..<count] } else if count < 0 && errno == EINTR { continue } else { return nil }
        }
    }

    /// Closes our end of the child's stdin: the child sees EOF.
    func closeInput() {
        if stdinFD >= 0 { close(stdinFD) }
        stdinFD = -1
    }

    func signal(_ number: Int32) { if exitStatus == nil { kill(pid, number) } }

    /// Waits for the child to exit; returns its wait status and keeps its resource usage in ``usage``.
    @discardableResult
    func wait() -> Int32 {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        var childUsage = rusage()
        while wait4(pid, &status, 0, &childUsage) < 0 && errno == EINTR {}
        usage = childUsage
        exitStatus = status
        return status
    }

    /// Whether the child has exited (then reaped, as ``wait()`` would), without waiting.
    var hasExited: Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        var childUsage = rusage()
        guard wait4(pid, &status, WNOHANG, &childUsage) == pid else { return false }
        usage = childUsage
        exitStatus = status
        return true
    }

    /// CPU seconds (user + system) the child used; valid after ``wait()``.
    var cpuSeconds: Double { usage.cpuSeconds }
}

extension rusage {
    var cpuSeconds: Double {
        Double(ru_utime.tv_sec) + Double(ru_utime.tv_usec) / 1e6 + Double(ru_stime.tv_sec) + Double(ru_stime.tv_usec) / 1e6
    }
}

enum ProcessInfoLite {
    /// CPU seconds (user + system) of this process so far, every thread.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return usage.cpuSeconds
    }

    /// A field of /proc/self/status in KiB (`VmRSS`, `RssAnon`, `VmHWM`, …), or nil.
    static func statusKiB(_ field: String) -> Int? {
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix(field + ":") else { continue }
            return Int(text.dropFirst(field.count + 1).filter(\.isNumber))
        }
        return nil
    }

    /// Raises the soft limit on open files to the hard limit; returns the new soft limit.
    @discardableResult
    static func raiseFileLimit() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }

    /// Returns free heap pages to the kernel (glibc `malloc_trim(0)`, every arena).
    static func trimHeap() { _ = malloc_trim(0) }

    /// Bytes of heap in use by malloc (every arena, mmapped chunks included).
    static func heapInUse() -> Int {
        let info = mallinfo2()
        return Int(info.uordblks) + Int(info.hblkhd)
    }

    static func sleep(_ duration: Duration) {
        var request = timespec(tv_sec: Int(duration.components.seconds), tv_nsec: Int(duration.components.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) < 0 && errno == EINTR { request = remaining }
    }

    /// A TCP port on 127.0.0.1 that nothing listens on right now.
    static func freePort() -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : nil
    }

    /// Waits until a TCP connect to 127.0.0.1:`port` succeeds (then closes it), up to `timeout`.
    static func waitForListener(port: UInt16, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return true }
            sleep(.milliseconds(50))
        }
        return false
    }
}

/// Runs async work from the synchronous harness and blocks the calling thread (never a cooperative-pool thread)
/// until it finishes.
func blockingAwait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let box = AwaitBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await work()
        done.signal()
    }
    done.wait()
    return box.value!
}

private final class AwaitBox<T>: @unchecked Sendable {
    // @unchecked: written once by the task before the semaphore is signalled, read after the wait.
    var value: T?
}

/// Writes `line` and a newline to stdout at once, unbuffered (the parent of a child reads it while we run on).
func writeStandardOutput(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}
