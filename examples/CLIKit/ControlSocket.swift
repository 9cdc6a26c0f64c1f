import Foundation
import Glibc
import SupportUtilities

/// A local control channel: JSON requests and replies, one line each, over a Unix socket in the node's data folder.
/// Only the folder's owner can reach it (the folder is made 0700).
public enum ControlSocket {
    /// How long a client waits for the node, connect and reply together, unless told otherwise.
    public static let defaultTimeout: Duration = .seconds(10)
    /// How long the server waits for a client's request line, and for the client to take the reply.
    static let serverTimeout: Duration = .seconds(10)
    /// Requests handled at once; more wait in the listen backlog (16), then clients wait in `connect` up to their
    /// timeout.
    static let maxConcurrentRequests = 8
    /// How long accepting pauses when the process is out of descriptors or memory.
    static let exhaustionPause: Duration = .milliseconds(100)

    /// Sends one request and returns the reply.
    ///
    /// Waits at most `timeout` in all (connect, send, reply); a node that does not answer in time is reported as such
    /// (a stuck or overloaded node), never waited for without end.
    public static func request(
        path: String, _ request: [String: Any], timeout: Duration = defaultTimeout
    ) throws(CLIError) -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failure("cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let noAnswer = CLIError.failure(
            "the supporter node did not answer within \(describe(timeout)) on \(path): it may be stuck or overloaded; "
                + "check its log, or wait and try again")
        // A Unix-socket connect waits while the node's backlog is full; SO_SNDTIMEO bounds that wait and the send.
        setTimeout(fd, SO_SNDTIMEO, timeout)
        var address = try unixAddress(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINPROGRESS || code == ETIMEDOUT { throw noAnswer }
            throw .failure(
                "no supporter node is serving with this data folder (\(path): \(String(cString: strerror(code)))) — start it with 'rsup-supporter serve'")
        }
        switch sendLine(fd, Console.encode(request)) {
        case 0: break
        case EAGAIN, EWOULDBLOCK: throw noAnswer
        default: throw .failure("the control socket \(path) closed before the request was sent")
        }
        let line: String
        switch readLine(fd, until: deadline) {
        case .line(let text): line = text
        case .timedOut: throw noAnswer
        case .closed: throw .failure("the supporter node gave no answer on \(path)")
        }
        guard let reply = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw .failure("the supporter node gave no answer on \(path)")
        }
        return reply
    }

    /// Throws the usage error ``serve(path:_:)`` would throw for a path a socket cannot have, before anything starts.
    public static func checkPath(_ path: String) throws(CLIError) { _ = try unixAddress(path) }

    static func unixAddress(_ path: String) throws(CLIError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw .usage("the control socket path \(path) is too long; use a shorter --data folder")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return address
    }

    static func writeLine(_ fd: Int32, _ text: String) throws(CLIError) {
        guard sendLine(fd, text) == 0 else { throw .failure("the control socket closed") }
    }

    /// Sends `text` and a newline; 0, or the errno that stopped it (EAGAIN: the send timeout passed).
    private static func sendLine(_ fd: Int32, _ text: String) -> Int32 {
        let bytes = Array((text + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count < 0 ? errno : EPIPE }
            sent += count
        }
        return 0
    }

    enum LineResult {
        case line(String)
        case closed
        case timedOut
    }

    /// Reads up to a newline (at most 1 MiB), giving up at `deadline`.
    static func readLine(_ fd: Int32, until deadline: ContinuousClock.Instant) -> LineResult {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .timedOut }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: milliseconds(remaining) + 1))
            if ready < 0 {
                if errno == EINTR { continue }
                return .closed
            }
            if ready == 0 { continue }  // the deadline check above ends it
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 { return bytes.isEmpty ? .closed : .line(String(decoding: bytes, as: UTF8.self)) }
            if let newline = chunk[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                bytes.append(contentsOf: chunk[0..<newline])
                return .line(String(decoding: bytes, as: UTF8.self))
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return .closed
    }

    /// Serves requests on `path` until the process ends; `handle` answers each on a thread of its own, at most
    /// ``maxConcurrentRequests`` at a time.
    ///
    /// Accepting survives running out of resources: on EMFILE, ENFILE, ENOBUFS or ENOMEM it pauses 100 ms and tries
    /// again (logging the first pause of a run and the recovery), on ECONNABORTED it goes on at once. Any other accept
    /// error is logged and ends serving. A client that sends no request, or takes no reply, within 10 s is dropped.
    ///
    /// - Parameter log: where those lines go; standard error by default.
    public static func serve(
        path: String, handle: @escaping @Sendable ([String: Any]) -> [String: Any],
        log: @escaping @Sendable (String) -> Void = ControlSocket.logToStandardError
    ) throws(CLIError) {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failure("cannot create the control socket: \(String(cString: strerror(errno)))") }
        var address = try unixAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw .failure("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, 0o600)
        Thread {
            let slots = DispatchSemaphore(value: maxConcurrentRequests)
            var pauses = 0
            while true {
                slots.wait()
                let client = accept(fd, nil, nil)
                if client < 0 {
                    let code = errno
                    slots.signal()
                    switch code {
                    case EINTR:
                        continue
                    case ECONNABORTED:
                        // That client gave up before we accepted it; the next one is unaffected.
                        continue
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                        if pauses == 0 {
                            log(
                                "control socket \(path): cannot accept (\(String(cString: strerror(code)))); pausing "
                                    + "\(describe(exhaustionPause)) at a time until it recovers")
                        }
                        pauses += 1
                        var pause = timespec(tv_sec: 0, tv_nsec: Int(milliseconds(exhaustionPause)) * 1_000_000)
                        nanosleep(&pause, nil)
                        continue
                    default:
                        log("control socket \(path): accept failed (\(String(cString: strerror(code)))); it stops serving")
                        return
                    }
                }
                if pauses > 0 {
                    log("control socket \(path): accepting again after \(pauses) pause(s)")
                    pauses = 0
                }
                // SOCK_CLOEXEC cannot be asked of accept(2) here; set it before any child could be spawned.
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                setTimeout(client, SO_SNDTIMEO, serverTimeout)
                Thread {
                    defer {
                        close(client)
                        slots.signal()
                    }
                    guard case .line(let line) = readLine(client, until: .now + serverTimeout) else { return }
                    let reply: [String: Any]
                    if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                        reply = handle(object)
                    } else {
                        reply = ["ok": false, "error": "the request is not a JSON object"]
                    }
                    try? writeLine(client, Console.encode(reply))
                }.start()
            }
        }.start()
    }

    /// One line on standard error, as the CLIs' logger writes them.
    @Sendable public static func logToStandardError(_ message: String) {
        StandardStreams.writeError("\(Console.timestamp()) warning supporter: \(message)\n")
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ timeout: Duration) {
        let total = max(milliseconds(timeout), 1)
        var interval = timeval(tv_sec: Int(total / 1000), tv_usec: Int(total % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, option, &interval, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    private static func describe(_ duration: Duration) -> String {
        let total = milliseconds(duration)
        return total % 1000 == 0 ? "\(total / 1000) s" : "\(total) ms"
    }
}
