import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// SPEC §13.1: an IPv6 peer's limits count against its whole /64, so one host cannot multiply the per-address caps by
/// sending from many addresses of its prefix. The node runs in a network namespace of its own whose loopback answers
/// for all of 2001:db8:77::/48; the client there sends from any address of it (IP_FREEBIND). Needs root (namespaces,
/// routes); CI runs as root.
@Suite("source address keys", .serialized, .enabled(if: getuid() == 0, "needs root for a network namespace"))
struct SourceAddressKeyTests {
    /// Opens TLS connections (port, ALPN protocol, then the sources; nothing sent) from each source address given, in
    /// order, and prints one
    /// line per address: `open` when the handshake completed and the node still kept the connection a second after
    /// the last one, else `closed`. Keeps every connection open until all are tried.
    static let client = """
        import select, socket, ssl, sys, time
        port, protocol, sources = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols([protocol])
        states, kept = {}, {}
        for source in sources:  # all at once: the node closes a connection without HELLO after 10 s
            raw = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            raw.setsockopt(socket.SOL_IP, 15, 1)  # IP_FREEBIND: an address the route makes local, not one on lo
            raw.bind((source, 0))
            raw.settimeout(5)
            try:
                raw.connect(("::1", port))
                kept[source] = context.wrap_socket(raw)
                states[source] = "open"
            except (OSError, ssl.SSLError):
                states[source] = "closed"
        # wall clock: the sources beyond the limit are closed at once; a second shows which ones stay open (outside process)
        time.sleep(1)
        for source, tls in kept.items():
            if select.select([tls], [], [], 0)[0]:
                try:
                    tls.setblocking(False)
                    if tls.recv(1) == b"": states[source] = "closed"
                except (OSError, ssl.SSLError):
                    states[source] = "closed"
        for source in sources:
            print(source, states[source], flush=True)
        """

    /// The node in its own network namespace, with the REST API too; its device and REST ports.
    static func startNode(_ certificates: TestCertificates, _ folder: TemporaryFolder) async throws
        -> (CLIProcess, device: Int, rest: Int)
    {
        let setUp = "ip link set lo up && ip -6 route add local 2001:db8:77::/48 dev lo && exec \"$0\" \"$@\""
        let node = try CLIProcess(
            "/usr/bin/unshare",
            [
                "-n", "/bin/sh", "-c", setUp, Binaries.supporter, "serve", "--listen", "[::1]:0", "--api-listen",
                "[::1]:0", "--non-interactive", "--json", "--data", folder.file("data"), "--cert",
                certificates.server.certificatePath, "--key", certificates.server.keyPath, "--log-level", "info",
            ])
        let listening = await node.waitForEvent("listening")
        guard let device = listening?["port"] as? Int, let rest = listening?["api_port"] as? Int else {
            await node.stop()
            throw HarnessError("the node never reported 'listening' with both ports\n\(node.transcript)")
        }
        return (node, device, rest)
    }

    /// What the client saw from each source address, connecting to `port` in `node`'s namespace.
    static func connect(_ node: CLIProcess, port: Int, protocol: String, from sources: [String]) async throws
        -> (states: [String: String], result: CommandResult)
    {
        let result = try await runCommand(
            "/usr/bin/nsenter",
            ["--net=/proc/\(node.pid)/ns/net", "python3", "-c", client, "\(port)", `protocol`] + sources,
            timeout: .seconds(120))
        let states = Dictionary(
            result.stdout.compactMap { line -> (String, String)? in
                let fields = line.split(separator: " ")
                return fields.count == 2 ? (String(fields[0]), String(fields[1])) : nil
            }, uniquingKeysWith: { first, _ in first })
        return (states, result)
    }

    @Test("devices and REST: one IPv6 /64 shares one per-address cap, from any of its addresses; the next /64 does not")
    func anIPv6Slash64SharesOnePerAddressCap() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let (node, devicePort, restPort) = try await Self.startNode(certificates, folder)
            defer { Task { await node.stop() } }

            // Devices: 64 unregistered connections from distinct addresses of one /64 fill its cap; a 65th address of
            // the same /64 is refused; the next /64 has a cap of its own.
            let devices = (1...65).map { "2001:db8:77:1::\(String($0, radix: 16))" }
            let (states, result) = try await Self.connect(
                node, port: devicePort, protocol: "rsup/1", from: devices + ["2001:db8:77:2::1"])
            #expect(result.exitCode == 0, "\(result)")
            #expect(devices.prefix(64).allSatisfy { states[$0] == "open" }, "\(result)")
            #expect(states["2001:db8:77:1::41"] == "closed", "the 65th address of the /64: \(result)")
            #expect(states["2001:db8:77:2::1"] == "open", "another /64: \(result)")
            #expect(
                node.stderrLines.contains { $0.contains("refused") && $0.contains("2001:db8:77:1::/64") },
                "the node names the /64 it refused: \(node.transcript)")

            // REST: 32 open connections per client address key.
            let clients = (1...33).map { "2001:db8:77:3::\(String($0, radix: 16))" }
            let (restStates, restResult) = try await Self.connect(
                node, port: restPort, protocol: "http/1.1", from: clients + ["2001:db8:77:4::1"])
            #expect(restResult.exitCode == 0, "\(restResult)")
            #expect(clients.prefix(32).allSatisfy { restStates[$0] == "open" }, "\(restResult)")
            #expect(restStates["2001:db8:77:3::21"] == "closed", "the 33rd address of the /64: \(restResult)")
            #expect(restStates["2001:db8:77:4::1"] == "open", "another /64: \(restResult)")
        }
    }
}
