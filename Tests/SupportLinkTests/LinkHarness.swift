// LinkHarness.swift — shared helpers for the transport tests over real loopback sockets.
//
// Every test that opens sockets lives in a suite nested in `TransportIntegration`, which is serialized so that the
// timing tests (keepalive, timeouts) do not compete with each other for the 2 cores. The fd-leak checks look only at
// the sockets on the test's own listener port, so other test targets running in parallel do not disturb them.

import COpenSSL  // the socket constants: once RawTLSPeer loads OpenSSL, they are seen through it
import Foundation
import Synchronization
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities
import SupportVocabulary

/// Parent of every suite that uses real sockets; serialized (recursively) so timing-sensitive tests do not compete.
@Suite(.serialized, .timeLimit(.minutes(2))) enum TransportIntegration {}

/// Runs `work` on `loop` and waits for it: also a barrier behind everything queued on the loop before.
func onLoop<T: Sendable>(_ loop: EventLoop, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: work()) }
    }
}

/// Waits for a timer on `loop` due `delay` from now (the loop's own clock): it fires after every timer on the loop due
/// before it, so once it has, anything those timers would do has been done. For "nothing more happens" checks.
func loopTimerFires(on loop: EventLoop, after delay: Duration) async -> Bool {
    let fired = OneShot<Bool>()
    loop.execute { _ = loop.schedule(at: loop.now + delay) { fired.resume(true) } }
    let timeout = afterDeadline { fired.resume(false) }
    defer { timeout.cancel() }
    return await fired.value() == true
}

// MARK: - Recording delegate

/// What a link told its delegate.
enum LinkEvent: Sendable {
    case opened(LinkParameters)
    case received(Message)
    case closed(LinkCloseReason)
}

/// A delegate that records every call, and whether it came on the link's loop thread.
final class LinkRecorder: FramedLinkDelegate {
    private struct State {
        var events: [LinkEvent] = []
        var callsOffLoop = 0
        var callsAfterClose = 0
    }
    private let state = Mutex(State())

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) { record(link, .opened(parameters)) }
    func link(_ link: FramedLink, didReceive message: Message) { record(link, .received(message)) }
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) { record(link, .closed(reason)) }

    private func record(_ link: FramedLink, _ event: LinkEvent) {
        let onLoop = link.loop.inLoop
        state.withLock { state in
            if !onLoop { state.callsOffLoop += 1 }
            if state.events.contains(where: { if case .closed = $0 { true } else { false } }) {
                state.callsAfterClose += 1
            }
            state.events.append(event)
        }
    }

    var events: [LinkEvent] { state.withLock { $0.events } }
    /// Delegate calls that did not come on the link's loop thread (must stay 0).
    var callsOffLoop: Int { state.withLock { $0.callsOffLoop } }
    /// Delegate calls after linkDidClose (must stay 0).
    var callsAfterClose: Int { state.withLock { $0.callsAfterClose } }

    var parameters: LinkParameters? {
        events.lazy.compactMap { if case .opened(let parameters) = $0 { parameters } else { nil } }.first
    }
    var messages: [Message] { events.compactMap { if case .received(let message) = $0 { message } else { nil } } }
    var closeReason: LinkCloseReason? {
        events.lazy.compactMap { if case .closed(let reason) = $0 { reason } else { nil } }.first
    }

    func waitForOpen(timeout: Duration = waitDeadline) async throws -> LinkParameters {
        try await eventually("linkDidOpen", timeout: timeout) { parameters }
    }

    func waitForClose(timeout: Duration = waitDeadline) async throws -> LinkCloseReason {
        try await eventually("linkDidClose", timeout: timeout) { closeReason }
    }

    func waitForMessages(_ count: Int, timeout: Duration = waitDeadline) async throws -> [Message] {
        try await eventually("\(count) messages", timeout: timeout) { () -> [Message]? in
            let messages = self.messages
            return messages.count >= count ? messages : nil
        }
    }
}

extension LinkCloseReason {
    /// The transport error inside `.transport`, if that is the reason.
    var transportError: TransportError? {
        if case .transport(let error) = self { error } else { nil }
    }
}

// MARK: - Settings

extension LinkSettings {
    static func device(_ name: String = "test-device", keepalive: Duration = .seconds(15)) -> LinkSettings {
        var settings = LinkSettings(role: .device, nodeName: name)
        settings.keepaliveInterval = keepalive
        return settings
    }

    static func supporter(_ name: String = "test-supporter", keepalive: Duration = .seconds(15)) -> LinkSettings {
        var settings = LinkSettings(role: .supporter, nodeName: name)
        settings.keepaliveInterval = keepalive
        return settings
    }
}

// MARK: - Server

/// A listener on 127.0.0.1 with an ephemeral port; records every accepted link.
final class TestServer: Sendable {
    let listener: TLSListener
    let port: UInt16
    private let accepted = Locked<[(link: FramedLink, recorder: LinkRecorder)]>([])

    /// Handshake failures and accept errors the listener reported.
    let handshakeFailures = Locked<[(address: SocketAddress?, reason: String)]>([])
    let acceptErrors = Locked<[TransportError]>([])

    init(context: TLSContext, settings: LinkSettings, group: EventLoopGroup, idleTimeout: Duration? = nil) throws {
        let accepted = self.accepted
        let handshakeFailures = self.handshakeFailures
        let acceptErrors = self.acceptErrors
        listener = try TLSListener(
            host: "127.0.0.1", port: 0, context: context, settings: settings, group: group, idleTimeout: idleTimeout,
            onHandshakeFailure: { address, reason in handshakeFailures.withLock { $0.append((address, reason)) } },
            onAcceptError: { error in acceptErrors.withLock { $0.append(error) } }
        ) { link in
            let recorder = LinkRecorder()
            link.delegate = recorder
            accepted.withLock { $0.append((link, recorder)) }
            return true
        }
        port = listener.localAddress.port
    }

    var links: [(link: FramedLink, recorder: LinkRecorder)] { accepted.withLock { $0 } }

    /// The `index`-th accepted link, once it was accepted.
    func link(_ index: Int = 0, timeout: Duration = waitDeadline) async throws -> (
        link: FramedLink, recorder: LinkRecorder
    ) {
        try await eventually("accepted link #\(index)", timeout: timeout) {
            let links = self.links
            return links.count > index ? links[index] : nil
        }
    }
}

// MARK: - Fixture

/// Certificates, a server group and a client group, torn down in order by ``withTransport(_:)``.
final class TransportFixture: Sendable {
    let certificates: TestCertificates
    let serverGroup: EventLoopGroup
    let clientGroup: EventLoopGroup
    private let servers = Mutex<[TestServer]>([])
    private let clients = Mutex<[(link: FramedLink, recorder: LinkRecorder)]>([])

    init() throws {
        certificates = try TestCertificates.make()
        serverGroup = try EventLoopGroup(loopCount: 1)
        clientGroup = try EventLoopGroup(loopCount: 1)
    }

    var clientLoop: EventLoop { clientGroup.loops[0] }

    /// A server context for `identity` (default: the CA-signed `server` certificate).
    func serverContext(
        _ identity: CertificateFile? = nil, _ adjust: (inout TLSConfiguration) -> Void = { _ in }
    ) throws -> TLSContext {
        let identity = identity ?? certificates.server
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: .file(identity.certificatePath), privateKey: .file(identity.keyPath))
        adjust(&configuration)
        return try TLSContext(configuration)
    }

    /// A client context trusting the test CA (unless `adjust` says otherwise).
    func clientContext(_ adjust: (inout TLSConfiguration) -> Void = { _ in }) throws -> TLSContext {
        var configuration = TLSConfiguration.makeClientConfiguration(trustRoots: .file(certificates.caPath))
        adjust(&configuration)
        return try TLSContext(configuration)
    }

    func startServer(
        context: TLSContext? = nil, settings: LinkSettings = .supporter(), idleTimeout: Duration? = nil
    ) throws -> TestServer {
        let server = try TestServer(
            context: context ?? serverContext(), settings: settings, group: serverGroup, idleTimeout: idleTimeout)
        servers.withLock { $0.append(server) }
        return server
    }

    /// Dials `server` as a device with a recorder as delegate; the link is closed at tear-down.
    func dial(
        _ server: TestServer, host: String = "localhost", context: TLSContext? = nil,
        settings: LinkSettings = .device()
    ) async throws -> (link: FramedLink, recorder: LinkRecorder) {
        let recorder = LinkRecorder()
        let link = try await TLSDialer.connect(
            host: host, port: server.port, context: context ?? clientContext(), settings: settings, loop: clientLoop,
            connectTimeout: .seconds(10), delegate: recorder)
        clients.withLock { $0.append((link, recorder)) }
        return (link, recorder)
    }

    /// Dials and expects the dial to fail; returns the error.
    func dialExpectingFailure(
        _ server: TestServer, host: String = "localhost", context: TLSContext, settings: LinkSettings = .device()
    ) async -> TransportError? {
        let recorder = LinkRecorder()
        do {
            let link = try await TLSDialer.connect(
                host: host, port: server.port, context: context, settings: settings, loop: clientLoop,
                delegate: recorder)
            clients.withLock { $0.append((link, recorder)) }
            return nil
        } catch {
            return error
        }
    }

    /// Closes every link and listener, waits until they are closed, stops the loops, deletes the certificates.
    func tearDown() async {
        let clientLinks = clients.withLock { $0 }
        let servers = self.servers.withLock { $0 }
        let serverLinks = servers.flatMap(\.links)
        for (link, _) in clientLinks + serverLinks { link.close() }
        for (_, recorder) in clientLinks + serverLinks {
            _ = try? await recorder.waitForClose(timeout: .seconds(5))
        }
        for server in servers { server.listener.close() }
        _ = await onLoop(serverGroup.loops[0]) { () }
        serverGroup.shutdown()
        clientGroup.shutdown()
        certificates.remove()
    }
}

/// Runs `body` with a fresh fixture and always tears it down.
func withTransport(_ body: (TransportFixture) async throws -> Void) async throws {
    let fixture = try TransportFixture()
    do {
        try await body(fixture)
    } catch {
        await fixture.tearDown()
        throw error
    }
    await fixture.tearDown()
}

// MARK: - File descriptors

/// The open file descriptors of this process, from /proc/self/fd (the directory's own fd excluded).
func openFileDescriptors() -> [String] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    let own = dirfd(directory)
    var entries: [String] = []
    while let entry = readdir(directory) {
        // Read d_name in place up to its NUL: records are shorter than the 256-byte field, so copying it whole
        // would read past the record (the bug that makes Foundation's Process crash).
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
        guard name != ".", name != "..", Int32(name) != own else { continue }
        var target = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/self/fd/" + name, &target, target.count - 1)
        let link = count > 0 ? String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        entries.append("\(name) -> \(link)")
    }
    return entries
}

/// The fds of this process that are TCP sockets with `port` at either end (from /proc/net/tcp and tcp6): the
/// listener and every connection to it. Exact even while other tests in the process open sockets of their own.
/// The sockets on `port` once the listener is among them (retried briefly: on a loaded machine a read of /proc can
/// miss it), for a leak baseline.
func listenerBaseline(_ port: UInt16) async -> Set<String> {
    _ = await waitUntil { !socketsOnPort(port).isEmpty }
    return socketsOnPort(port)
}

func socketsOnPort(_ port: UInt16) -> Set<String> {
    var inodes = Set<String>()
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9 else { continue }
            let ports = [fields[1], fields[2]].compactMap { $0.split(separator: ":").last.flatMap { UInt16($0, radix: 16) } }
            if ports.contains(port), fields[9] != "0" { inodes.insert(String(fields[9])) }
        }
    }
    return Set(openFileDescriptors().filter { entry in inodes.contains { entry.hasSuffix("socket:[\($0)]") } })
}

/// Waits until the sockets on `port` are exactly `baseline` again (closes finish asynchronously on the loops).
func expectNoLeakedSockets(
    on port: UInt16, baseline: Set<String>, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let settled = try? await eventually("sockets on port \(port) back to \(baseline.count)", timeout: waitDeadline) {
        socketsOnPort(port) == baseline ? true : nil
    }
    let now = socketsOnPort(port)
    #expect(
        settled == true,
        "sockets on port \(port) before: \(baseline.sorted()), after: \(now.sorted())",
        sourceLocation: sourceLocation)
}

// MARK: - Raw sockets

/// A blocking TCP socket to 127.0.0.1, for peers that do not speak TLS (or stop speaking it).
final class RawSocket {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            isOpen = false
            throw WaitTimeout(description: "socket: \(errno)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close()
            throw WaitTimeout(description: "connect: \(String(cString: strerror(code)))")
        }
        // Linux connects a socket to itself when the kernel picks the destination port as the source port (TCP
        // simultaneous open): possible once nothing listens there and the port is back in the ephemeral range. That
        // is no listener accepting, so it counts as refused.
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard UInt16(bigEndian: local.sin_port) != port else {
            close()
            throw WaitTimeout(description: "connect: connected to itself (nothing listens on port \(port))")
        }
    }

    // A throwing init runs deinit too once every property is set, so the failure paths above close through
    // `close()`: a second `close(fd)` would shut whatever descriptor another thread got that number for meanwhile.
    deinit { close() }

    private var isOpen = true
    func close() {
        guard isOpen else { return }
        isOpen = false
        Glibc.close(fd)
    }

    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the peer closes (0 or ECONNRESET) or `timeout` passes; returns when it closed, nil on timeout.
    /// Blocking reads with a short SO_RCVTIMEO, run off the cooperative pool.
    func waitUntilPeerCloses(timeout: Duration) async -> ContinuousClock.Instant? {
        let fd = self.fd
        return await Task.detached { () -> ContinuousClock.Instant? in
            var interval = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            let clock = ContinuousClock()
            let end = clock.now + timeout
            var buffer = [UInt8](repeating: 0, count: 4096)
            while clock.now < end {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count == 0 { return clock.now }
                if count < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    return clock.now  // ECONNRESET and the like: closed too
                }
            }
            return nil
        }.value
    }
}

// MARK: - openssl s_client

/// `openssl s_client` as an independent TLS peer; killed at the end by its own pid.
final class OpenSSLClient: Sendable {
    private let process: ChildProcess

    /// Starts `openssl s_client -connect 127.0.0.1:<port> -quiet -nocommands` plus `arguments`. With
    /// `captureOutput` its stdout is a pipe nobody reads (a peer that stops reading).
    init(port: UInt16, arguments: [String], captureOutput: Bool = false) throws {
        process = try ChildProcess(
            TestCertificates.opensslPath,
            ["s_client", "-connect", "127.0.0.1:\(port)", "-quiet", "-nocommands"] + arguments, stdin: .pipe,
            stdout: captureOutput ? .pipe : .null)
    }

    deinit { if process.stdoutFD >= 0 { close(process.stdoutFD) } }

    var exitStatus: Int32? { process.exitStatus }

    /// Sends bytes through the TLS connection (s_client copies its stdin to the connection).
    func write(_ bytes: [UInt8]) {
        guard exitStatus == nil else { return }
        process.write(bytes)
    }

    func waitForExit(timeout: Duration) async throws -> Int32 {
        try await eventually("openssl s_client to exit", timeout: timeout) { exitStatus }
    }

    /// Kills it at once (no close_notify): a peer that vanishes.
    func kill() async {
        process.signal(SIGKILL)
        _ = try? await waitForExit(timeout: .seconds(10))
        process.closeStdin()
    }
}

// MARK: - openssl s_server

/// `openssl s_server` as a TLS server outside our stack, for certificates our own listener refuses to serve (an
/// expired one); killed at the end by its own pid.
final class OpenSSLServer: Sendable {
    private let process: ChildProcess
    let port: UInt16

    init(certificate: CertificateFile, arguments: [String] = ["-alpn", "rsup/1"]) async throws {
        // A port that was free a moment ago (bound to port 0, then released).
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        port = SocketAddress.of(probe, peer: false)?.port ?? 0
        close(probe)
        process = try ChildProcess(
            TestCertificates.opensslPath,
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate.certificatePath, "-key",
             certificate.keyPath, "-quiet"] + arguments, stdin: .pipe)
        let port = self.port
        _ = try await eventually("openssl s_server to listen on \(port)") { try? RawSocket(port: port) }
    }

    func kill() async {
        process.signal(SIGKILL)
        _ = await process.waitForExit(timeout: .seconds(10))
        process.closeStdin()
    }
}

/// The bytes of `messages` as frames, as a peer outside our stack would send them.
func frames(_ messages: [Message], maxPayloadLength: Int = WireLimits.largestMaxFrameSize) throws -> [UInt8] {
    let encoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
    var bytes: [UInt8] = []
    for message in messages { try encoder.encode(message, into: &bytes) }
    return bytes
}
