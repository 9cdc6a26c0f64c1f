import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn`, for tests that run openssl, curl, python3 or our own binaries.
///
/// Not Foundation's `Process`: on Linux its `run()` over-reads `/proc/self/fd` directory entries
/// (`findMaximumOpenFromProcSelfFD` copies 256 bytes of every `d_name`; swift-corelibs-foundation issue 5472) and
/// crashed a clean CI run with SIGSEGV, and AddressSanitizer reports the heap-buffer-overflow on every few runs.
/// Pipes are made close-on-exec, so a child inherits only its own stdin, stdout and stderr.
public final class ChildProcess: Sendable {
    public enum Input: Sendable {
        case null
        /// A pipe the test writes with ``write(_:)`` and closes with ``closeStdin()``.
        case pipe
    }

    public enum Output: Sendable {
        case null
        /// A pipe the test reads from ``stdoutFD`` / ``stderrFD``.
        case pipe
        /// Appended to this file.
        case file(String)
        /// stderr only: into the same place as stdout.
        case sameAsStdout
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The child's process id.
    public let pid: Int32
    /// The write end of the child's stdin pipe, or -1.
    public let stdinFD: Int32
    /// The read ends of the child's output pipes, or -1; the caller reads them and closes them when done.
    public let stdoutFD: Int32
    public let stderrFD: Int32
    private let state = Mutex<(status: Int32?, handlers: [@Sendable (Int32) -> Void], stdinOpen: Bool)>((nil, [], true))
    private let exited = DispatchSemaphore(value: 0)

    /// Pipes are made and the child spawned under one lock, so no child inherits another's pipe ends.
    private static let spawnLock = Mutex<Void>(())
    private static let ignoreSIGPIPE: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// Starts `executable` (a path, or a name looked up in PATH) with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: the whole environment; nil inherits this process's.
    ///   - directory: the working directory (through `env -C`, as glibc's spawn has no portable chdir action).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Input = .null, stdout: Output = .null, stderr: Output = .null
    ) throws {
        _ = Self.ignoreSIGPIPE
        let spawned = try Self.spawnLock.withLock { _ throws -> (pid_t, Int32, Int32, Int32) in
            try Self.spawn(
                executable, arguments, environment: environment, directory: directory, stdin: stdin, stdout: stdout,
                stderr: stderr)
        }
        (pid, stdinFD, stdoutFD, stderrFD) = spawned
        let stdinWrite = stdinFD
        let childPID = pid
        if stdinWrite < 0 { state.withLock { $0.stdinOpen = false } }
        let pid = childPID
        Thread { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
            let code = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
            let handlers = state.withLock { state -> [@Sendable (Int32) -> Void] in
                state.status = code
                let taken = state.handlers
                state.handlers = []
                return taken
            }
            for handler in handlers { handler(code) }
            exited.signal()
        }.start()
    }

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]?, directory: String?,
        stdin: Input, stdout: Output, stderr: Output
    ) throws -> (pid_t, Int32, Int32, Int32) {
        var argv = [executable] + arguments
        if let directory { argv = ["/usr/bin/env", "-C", directory] + argv }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        func pipePair() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
            // Close-on-exec at once; `spawnLock` keeps another spawn from inheriting them in between.
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            return (fds[0], fds[1])
        }
        var stdinWrite: Int32 = -1
        switch stdin {
        case .null:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .pipe:
            let (read, write) = try pipePair()
            posix_spawn_file_actions_adddup2(&actions, read, 0)
            stdinWrite = write
            parentEnds.append(write)
            childEnds.append(read)
        }
        func output(_ output: Output, to fd: Int32) throws -> Int32 {
            switch output {
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
                return -1
            case .pipe:
                let (read, write) = try pipePair()
                posix_spawn_file_actions_adddup2(&actions, write, fd)
                parentEnds.append(read)
                childEnds.append(write)
                return read
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                return -1
            case .sameAsStdout:
                posix_spawn_file_actions_adddup2(&actions, 1, fd)
                return -1
            }
        }
        let stdoutRead = try output(stdout, to: 1)
        let stderrRead = try output(stderr, to: 2)
        // The child keeps only 0–2: a test's socket opened without close-on-exec (a raw peer, a proxy) must not live
        // on in a program another suite starts meanwhile, or its close never reaches the server under test.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let environmentStrings = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var childPID: pid_t = 0
        let status = Self.withCStrings(argv) { argvPointer in
            Self.withCStrings(environmentStrings) { envPointer in
                posix_spawnp(&childPID, argv[0], &actions, nil, argvPointer, envPointer)
            }
        }
        for fd in childEnds { close(fd) }
        guard status == 0 else {
            for fd in parentEnds { close(fd) }
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        return (childPID, stdinWrite, stdoutRead, stderrRead)
    }

    deinit {
        // A test that failed half way must not leave programs behind.
        if exitStatus == nil { kill(pid, SIGKILL) }
        closeStdin()
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// expose (it is declared only under `_GNU_SOURCE`); nil on an older C library.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }  // safe: never empty (nil terminator)
    }

    /// The exit code (128 + signal number when a signal ended it), or nil while it runs.
    public var exitStatus: Int32? { state.withLock { $0.status } }

    /// Runs `handler` with the exit status once the child exits (at once if it already has).
    public func onExit(_ handler: @escaping @Sendable (Int32) -> Void) {
        let status = state.withLock { state -> Int32? in
            if state.status == nil { state.handlers.append(handler) }
            return state.status
        }
        if let status { handler(status) }
    }

    /// Blocks until the child exits.
    @discardableResult
    public func waitForExit() -> Int32 {
        if let status = exitStatus { return status }
        exited.wait()
        exited.signal()  // let other waiters through too
        return exitStatus ?? -1
    }

    /// Waits up to `timeout`; nil if it is still running then.
    public func waitForExit(timeout: Duration) async -> Int32? {
        if let status = exitStatus { return status }
        return await waitForCallback(timeout: timeout) { onExit($0) }
    }

    public func signal(_ number: Int32) {
        if exitStatus == nil { kill(pid, number) }
    }

    /// Writes all of `bytes` to the child's stdin; a child that stopped reading just loses them.
    public func write(_ bytes: [UInt8]) {
        guard state.withLock({ $0.stdinOpen }) else { return }
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(stdinFD, $0.baseAddress! + sent, bytes.count - sent) }  // safe: count > sent
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return }
            sent += count
        }
    }

    /// Closes the child's stdin (it sees EOF). Idempotent.
    public func closeStdin() {
        let wasOpen = state.withLock { state -> Bool in
            let open = state.stdinOpen
            state.stdinOpen = false
            return open
        }
        if wasOpen { close(stdinFD) }
    }

    /// Reads `fd` to its end and closes it.
    public static func readAll(_ fd: Int32) -> [UInt8] {
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return bytes }
            bytes += buffer[0..<count]
        }
    }
}
