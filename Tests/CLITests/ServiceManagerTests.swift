import Foundation
import Glibc
import Testing
import TestSupport

/// Issue 23: the node under systemd. The unit file in deploy/ passes `systemd-analyze verify` and its offline security
/// review; `serve` tells a `Type=notify` service manager READY=1 only once it listens, feeds the watchdog, and says
/// STOPPING=1 when it drains — by datagrams on `NOTIFY_SOCKET`, no libsystemd.
@Suite("service manager (systemd)") struct ServiceManagerTests {
    static let unitFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/rsup-supporter.service").path

    /// The unit with its `ExecStart` pointing at the binary under test (verify checks that it exists).
    private func unitUnderTest(in folder: TemporaryFolder) throws -> String {
        let text = try String(contentsOfFile: Self.unitFile, encoding: .utf8)
        let path = folder.file("rsup-supporter.service")
        try text.replacingOccurrences(of: "/usr/local/bin/rsup-supporter", with: Binaries.supporter)
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("deploy/rsup-supporter.service passes systemd-analyze verify without a warning, and its exposure is low")
    func theUnitFileVerifies() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let unit = try unitUnderTest(in: folder)
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for required in [
            "Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "StateDirectory=rsup-supporter", "ProtectSystem=strict",
            "NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "WatchdogSec=",
        ] {
            #expect(text.contains(required), "the unit lacks \(required)")
        }
        let verify = try await runCommand("/usr/bin/systemd-analyze", ["verify", unit])
        #expect(verify.exitCode == 0, "\(verify)")
        // verify exits 0 on an unknown key too: any word from it is a finding.
        #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")

        let security = try await runCommand("/usr/bin/systemd-analyze", ["security", "--offline=yes", unit])
        let line = (security.stdout + security.stderr).first { $0.contains("Overall exposure level") } ?? ""
        let level = line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        let exposure = try #require(level, "no exposure level in \(security)")
        #expect(exposure <= 2.0, "exposure \(exposure): \(line)")
    }

    /// A datagram socket standing in for systemd's notification socket: a thread of its own reads every datagram as
    /// it comes, as systemd does, so that a test slowed by load never leaves the node's queue full.
    private final class NotifySocket: @unchecked Sendable {
        // @unchecked: `fd` and `path` are immutable; `received` is a Locked.
        let path: String
        let fd: Int32
        private let received = Locked<(messages: [String], closed: Bool)>(([], false))

        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw HarnessError("cannot bind \(path): \(String(cString: strerror(errno)))") }
            let socketFD = self.fd
            let received = self.received
            Thread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { break }  // closed by deinit
                    let message = String(decoding: buffer[..<count], as: UTF8.self)
                    received.withLock { $0.messages.append(message) }
                }
                received.withLock { $0.closed = true }
            }.start()
        }

        /// The first datagram containing `text` (nil if none comes in time) and the ones before it.
        func until(_ text: String) async -> (found: String?, before: [String]) {
            var result: (found: String?, before: [String]) = (nil, [])
            _ = await waitUntil {
                let messages = received.withLock { $0.messages }
                guard let index = messages.firstIndex(where: { $0.contains(text) }) else {
                    result = (nil, messages)
                    return false
                }
                result = (messages[index], Array(messages[..<index]))
                return true
            }
            return result
        }

        deinit {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
            unlink(path)
        }
    }

    @Test("serve sends READY=1 only once it listens, WATCHDOG=1 while its loops answer, STOPPING=1 when it drains")
    func serveNotifiesTheServiceManager() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let notify = try NotifySocket(path: folder.file("notify"))
            let port = freeLoopbackPort()
            let server = try await SupporterServer(
                certificate: certificates.server, port: Int(port),
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])
            do {
                let ready = await notify.until("READY=1")
                let readyMessage = try #require(ready.found, "no READY=1; got \(ready.before)")
                #expect(ready.before.isEmpty, "before READY=1: \(ready.before)")
                #expect(readyMessage.contains("MAINPID="), "\(readyMessage)")
                // Ready means listening: the device port takes a connection now.
                #expect(Self.connects(port: port), "READY=1 came before the device port listened")
                // WATCHDOG_USEC 200 ms: fed every 100 ms while the loops answer.
                let fed = await notify.until("WATCHDOG=1")
                #expect(fed.found != nil, "no WATCHDOG=1; got \(fed.before)")

                server.process.signal(SIGTERM)
                let stopping = await notify.until("STOPPING=1")
                #expect(stopping.found != nil, "no STOPPING=1; got \(stopping.before)")
                #expect(await server.process.waitForExit() == 0, "\(server.process.transcript)")
                await server.close()
            } catch {
                await server.close()
                throw error
            }
        }
    }

    /// Whether a TCP connect to 127.0.0.1:`port` succeeds.
    private static func connects(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    @Test("without NOTIFY_SOCKET serve sends nothing and runs as before; SIGHUP is not fatal")
    func withoutAServiceManagerNothingChanges() async throws {
        try await withSupporter { _, server in
            server.process.signal(SIGHUP)
            _ = try #require(await server.process.waitForEvent("reloaded"), "\(server.process.transcript)")
            #expect(try await server.control(["list"])["codes"] != nil)
        }
    }
}
