import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// The control socket between `rsup-supporter` commands and the node: it survives running out of descriptors, and a
/// command never hangs on a node that does not answer.
@Suite("control socket", .serialized)
struct ControlSocketTests {
    @Test("a node out of file descriptors keeps its control socket: commands work again once descriptors are free")
    func survivesDescriptorExhaustion() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(
                certificate: certificates.server, extra: ["--log-level", "warning"], fileLimit: 96)
            defer { Task { await server.close() } }
            _ = try await server.control(["list"])
            // Plain TCP connections the node accepts and keeps until their TLS handshake times out: more than its
            // descriptors allow.
            var sockets: [Int32] = []
            for _ in 0..<120 {
                let fd = connectedLoopbackSocket(port: server.port)
                sockets.append(fd)
            }
            // At its budget the node closes new connections at once: one of ours closed is the event that says so.
            let ours = sockets
            #expect(await anyClosedByPeer(ours), "the node never reached its descriptor budget")
            // While exhausted a command may fail, but it ends (the client's timeout), and the node lives.
            let during = try await runCommand(Binaries.supporter, ["list", "--data", server.data], timeout: .seconds(30))
            #expect(during.exitCode != nil, "\(during)")
            for fd in sockets { close(fd) }
            let recovered = (try? await retrying("a command once descriptors are free") {
                try await server.control(["list"])
            }) != nil
            #expect(recovered, "\(server.process.transcript)")
            // It never reached its limit: past its descriptor budget it closed new connections at once, keeping
            // descriptors for its store, its control socket and the runtime (libdispatch stops a process whose
            // worker monitor cannot open /proc files).
            #expect(
                server.process.transcript.contains("a limit of 96, 64 of them kept for the node itself"),
                "\(server.process.transcript)")
            #expect(
                await server.process.waitForExit(timeout: .milliseconds(100)) == nil,
                "the node exited\n\(server.process.transcript)")
        }
    }

    @Test("a command on a node that never answers fails after its timeout with a clear error")
    func silentNodeTimesOut() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let socketPath = folder.file("control.sock")
        // A listener that accepts and never replies.
        let silent = try CLIProcess(
            "/usr/bin/env",
            ["python3", "-c",
             "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen(8)\n"
                + "print('ready',flush=True)\nc=s.accept()[0]\nwhile c.recv(4096): pass", socketPath])  // reads, never answers
        defer { Task { await silent.stop() } }
        #expect(await silent.waitForLine { $0 == "ready" } != nil, "\(silent.transcript)")
        let started = ContinuousClock.now
        let result = try await runCommand(Binaries.supporter, ["list", "--data", folder.path], timeout: .seconds(30))
        let elapsed = ContinuousClock.now - started
        expectError(result, exitCode: 1, mentions: ["did not answer"])
        #expect(elapsed < .seconds(20), "\(elapsed)")
    }
}
