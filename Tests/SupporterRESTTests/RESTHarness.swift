// RESTHarness.swift — a supporter node and its REST server in this process over real TLS on loopback, driven by
// Python client scripts (which may bind 127.0.0.x source addresses), and the router alone without sockets.

import Foundation
import Testing
import TestSupport
import SupporterNode
import SupporterStores
import StoreTestSupport
import SupportHTTP
@testable import SupporterREST
import SupportRuntime
import SupporterCore
import SupportSession
import SupportWire
import SupporterModel

/// Parent of every suite that opens sockets; serialized so they do not compete for the 2 cores.
@Suite(.serialized, .timeLimit(.minutes(3))) enum RESTIntegration {}

/// A node (in-memory store, not listening for devices) with accounts, an admin token and a REST server.
final class RESTFixture: Sendable {
    let certificates: TestCertificates
    let node: SupporterNode
    let server: RESTServer
    let adminToken: String

    /// `accounts`: login and role; each password is ``password(_:)``. `store`: where the node keeps its state (an
    /// in-memory SQLite store by default); `listening`: the node also listens for devices (port 0).
    init(
        accounts: [(String, SupporterRole)], store: StoreConfiguration = StoreConfiguration(), listening: Bool = false
    ) async throws {
        certificates = try TestCertificates.make()
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath)))
        configuration.port = 0
        let opened = try store.open()
        node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
        if listening { try node.start() }
        for (login, role) in accounts {
            _ = try await node.addAccount(login: login, displayName: login, role: role, password: Self.password(login))
        }
        adminToken = try node.issueAPIToken(scope: .admin)
        server = try RESTServer(
            node: node,
            configuration: RESTServerConfiguration(host: "127.0.0.1", port: 0).withIdentity(of: configuration.tls))
    }

    static func password(_ login: String) -> String { "password of \(login)" }

    func stop() async {
        await server.shutdown()
        node.shutdown()
        certificates.remove()
    }
}

func withREST(accounts: [(String, SupporterRole)] = [], _ body: (RESTFixture) async throws -> Void) async throws {
    let fixture = try await RESTFixture(accounts: accounts)
    do {
        try await body(fixture)
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
}

struct ScriptFailure: Error, CustomStringConvertible { let description: String }

/// Runs a Python 3 script against `fixture` with `sys.argv[1:] = [port, caPath, adminToken] + extra` and helpers
/// (`call`, `admin`, `sign_in`, `open_stream`, `read_stream`); its last stdout line must be JSON.
func python(_ fixture: RESTFixture, _ script: String, _ extra: [String] = [], timeout: Duration = .seconds(300))
    async throws -> [String: Any]
{
    let prelude = #"""
        import http.client, json, re, socket, ssl, sys, time
        PORT = int(sys.argv[1]); CA = sys.argv[2]; ADMIN = sys.argv[3]
        CTX = ssl.create_default_context(cafile=CA)
        # Only a hang ends a wait: on a loaded machine (the whole suite beside stress-ng) an answer may take long.
        SOCKET_TIMEOUT = 120
        def password(login): return "password of " + login
        def connect(source="127.0.0.1"):
            raw = socket.socket(); raw.bind((source, 0)); raw.settimeout(SOCKET_TIMEOUT); raw.connect(("127.0.0.1", PORT))
            return CTX.wrap_socket(raw, server_hostname="127.0.0.1")
        def call(method, path, body=None, headers=None, source="127.0.0.1"):
            c = http.client.HTTPSConnection("127.0.0.1", PORT, context=CTX, timeout=SOCKET_TIMEOUT, source_address=(source, 0))
            h = dict(headers or {})
            data = None if body is None else json.dumps(body).encode()
            if data is not None: h["Content-Type"] = "application/json"
            c.request(method, "/api/v1" + path, body=data, headers=h)
            r = c.getresponse(); raw = r.read(); c.close()
            return r.status, r.msg, raw
        def admin(method, path, body=None, token=None):
            return call(method, path, body, {"Authorization": "Bearer " + (token or ADMIN)})
        def sign_in(login, source="127.0.0.1"):
            status, msg, raw = call("POST", "/login", {"login": login, "password": password(login)}, source=source)
            assert status == 200, (status, raw)
            cookies = [c.split(";")[0] for c in msg.get_all("Set-Cookie")]
            return "; ".join(c for c in cookies if c.startswith("rsup_session=")), json.loads(raw)["csrf_token"]
        def open_stream(headers, source="127.0.0.1"):
            """GET /events; returns (status line, socket) after the stream's first comment (or the error answer)."""
            s = connect(source)
            head = "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % PORT
            head += "".join("%s: %s\r\n" % item for item in headers.items()) + "\r\n"
            s.sendall(head.encode())
            data = b""
            while b": connected\n\n" not in data and b"\r\n\r\n{" not in data:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
                if b"\r\n\r\n" in data and not data.startswith(b"HTTP/1.1 200"):
                    length = int(data.split(b"Content-Length: ")[1].split(b"\r\n")[0]) if b"Content-Length: " in data else 0
                    if len(data.split(b"\r\n\r\n", 1)[1]) >= length: break
            return data.split(b"\r\n")[0].decode(), s
        def read_stream(s, seconds):
            """What the stream sends within `seconds`, and whether the node closed it."""
            s.settimeout(seconds); data = b""; deadline = time.time() + seconds
            while time.time() < deadline:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    return data, False
                except (ssl.SSLError, ConnectionResetError):
                    return data, True
                if not chunk: return data, True
                data += chunk
            return data, False
        def cookie_headers(cookie, csrf=None):
            h = {"Cookie": cookie}
            if csrf: h["X-CSRF-Token"] = csrf
            return h

        """#
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-rest-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("out").path
    let err = directory.appendingPathComponent("err").path
    let process = try ChildProcess(
        "/usr/bin/env",
        ["python3", "-c", prelude + script, String(fixture.server.port), fixture.certificates.caPath, fixture.adminToken]
            + extra, stdout: .file(out), stderr: .file(err))
    let status = await process.waitForExit(timeout: timeout)
    if status == nil { process.signal(SIGKILL) }
    let stdout = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data(), as: UTF8.self)
    let stderr = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: err))) ?? Data(), as: UTF8.self)
    guard status == 0, let line = stdout.split(separator: "\n").last,
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { throw ScriptFailure(description: "python exited \(status.map(String.init) ?? "late"): \(stdout)\n\(stderr)") }
    return object
}

/// The router without sockets: requests built here, answers read back.
final class RouterFixture: Sendable {
    /// This fixture's files (certificates, store), removed by ``stop()``.
    let folder: String
    let node: SupporterNode
    /// The event feed's loop: embedded, so that its polls run only when a test advances it (``EventFeedPollTests``).
    let feedLoop: EventLoop
    let feed: EventFeed
    let router: RESTRouter
    let adminToken: String
    /// The node's store, which a test may make fail or stall.
    let store: FailingStoreEngine

    /// Fresh certificates and an empty in-memory store; `metricsAccess`: who may read `/metrics`; `trustedProxies`: the
    /// router's.
    convenience init(metricsAccess: MetricsAccess = MetricsAccess(), trustedProxies: [String] = []) throws {
        let certificates = try TestCertificates.make()
        do {
            try self.init(
                folder: certificates.directory, certificate: certificates.server.certificatePath,
                key: certificates.server.keyPath, storePath: nil, metricsAccess: metricsAccess,
                trustedProxies: trustedProxies)
        } catch {
            certificates.remove()
            throw error
        }
    }

    /// Starts from `template`'s files (``RouterSceneTemplate``: certificate, key, SQLite store and its `-wal`), copied
    /// into a folder of its own.
    convenience init(template: RouterSceneTemplate) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-router-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        do {
            for (name, bytes) in [
                ("server.pem", template.certificate), ("server.key", template.key), ("store.sqlite", template.store),
                ("store.sqlite-wal", template.journal),
            ] where !bytes.isEmpty || name == "store.sqlite" {
                guard FileManager.default.createFile(atPath: folder + "/" + name, contents: Data(bytes)) else {
                    throw ScriptFailure(description: "cannot write \(folder)/\(name)")
                }
            }
            try self.init(
                folder: folder, certificate: folder + "/server.pem", key: folder + "/server.key",
                storePath: folder + "/store.sqlite")
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    private init(
        folder: String, certificate: String, key: String, storePath: String?,
        metricsAccess: MetricsAccess = MetricsAccess(), trustedProxies: [String] = []
    ) throws {
        self.folder = folder
        let configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(certificateChain: .file(certificate), privateKey: .file(key)))
        store = FailingStoreEngine(wrapping: try StoreConfiguration(path: storePath ?? ":memory:").open().engine)
        node = try SupporterNode(configuration: configuration, store: store)
        adminToken = try node.issueAPIToken(scope: .admin)
        feedLoop = try EventLoop.embedded()
        feed = EventFeed(node: node, loop: feedLoop, logger: .disabled)
        router = RESTRouter(
            node: node, guardian: GuardBox(AuthenticationGuard()),
            resolver: ClientAddressResolver(trustedProxies: trustedProxies) ?? ClientAddressResolver(trustedProxies: [])!,
            logger: .disabled, console: ConsoleFiles(), feed: feed, clock: node.clock, probeLoop: feedLoop,
            metricsAccess: metricsAccess, metrics: RESTMetrics(registry: node.metrics, feed: feed))
    }

    func stop() {
        feed.stop()
        feedLoop.shutdown()
        node.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A request as the HTTP server would hand it over, from 127.0.0.1, with the admin token unless `headers` say
    /// otherwise (`Authorization: ""` sends none).
    func request(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = []) -> HTTPRequest {
        var fields = HTTPHeaders([("Host", "127.0.0.1:7444")] + headers)
        if !headers.contains(where: { $0.0 == "Authorization" }) {
            fields.add(name: "Authorization", value: "Bearer \(adminToken)")
        } else if fields["Authorization"] == "" {
            fields.remove(name: "Authorization")
        }
        if body != nil { fields.add(name: "Content-Type", value: "application/json") }
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let segments = parts[0].split(separator: "/").map(String.init)
        // The query as the parser hands it over: name=value pairs, percent-decoded (no '+' here).
        let query: [HTTPQueryItem] = parts.count > 1 ? parts[1].split(separator: "&").map { pair -> HTTPQueryItem in
            let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return HTTPQueryItem(
                name: String(nameValue[0]).removingPercentEncoding ?? "",
                value: nameValue.count > 1 ? String(nameValue[1]).removingPercentEncoding ?? "" : "")
        } : []
        return HTTPRequest(
            method: method, target: path, path: String(parts[0]), pathSegments: segments,
            queryItems: query, version: .http1_1, headers: fields, body: Array((body ?? "").utf8), keepAlive: true,
            peerAddress: (try? SocketAddress.resolve(host: "127.0.0.1", port: 40000))?.first)
    }

    func handle(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = []) async
        -> HTTPResponse
    {
        await router.handle(request(method, path, body: body, headers: headers))
    }
}
