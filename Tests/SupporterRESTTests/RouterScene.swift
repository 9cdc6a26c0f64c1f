import Foundation
import SupportHTTP
import TestSupport
import SupporterNode
import SupporterStores
import SupporterCore
import SupporterModel
@testable import SupporterREST

/// Who sends a request in a ``RouterScene``.
enum RouterCaller: String, Sendable, CustomStringConvertible {
    /// No credentials at all.
    case nobody
    /// The admin API token.
    case admin
    /// A device API token (valid, but not for this API).
    case device
    /// Supporter alice signed in: her cookie, her CSRF token and the node's own `Origin`.
    case alice
    /// Alice's cookie without the CSRF token.
    case aliceWithoutCSRF = "alice without CSRF"
    /// Supporter bob signed in.
    case bob
    /// Admin root signed in.
    case root

    var description: String { rawValue }
}

/// The store every ``RouterScene`` starts from, made once per test process: accounts root (admin), alice and bob
/// (supporters, each signed in once), a code nobody is assigned to, one assigned to bob, a device token, and the
/// certificates. Made once because scrypt is slow on purpose (about 0.1 s a password) and certificates take several
/// openssl runs; kept in memory, its folder removed at once.
struct RouterSceneTemplate: Sendable {
    let store: [UInt8]
    /// The store's write-ahead log (`-wal`), empty when there is none.
    let journal: [UInt8]
    /// The server certificate and key (PEM) every scene's node is configured with (no listener is opened).
    let certificate: [UInt8]
    let key: [UInt8]
    let code: String
    let bobCode: String
    let deviceToken: String
    let deviceTokenID: String
    /// A file a device sent on ``code`` (its `file_received` row's id), kept: ``fileBytes`` named ``fileName``.
    let fileID: Int64
    /// A file received on ``code`` whose bytes are no longer kept (past the retention).
    let goneFileID: Int64
    /// A webhook endpoint of every kind at ``webhookURL`` (TEST-NET-1: nothing delivers in a scene), and the delivery
    /// of its own `webhook_created` row.
    let webhookID: String
    let webhookDeliveryID: Int64
    static let webhookURL = "https://192.0.2.1/hook?token=receiver-secret"
    static let fileName = #"<script>alert(1)</script> "report";.txt"#
    static let fileBytes: [UInt8] = Array("line one\nline two\n".utf8) + [0, 255, 128]
    /// Login: the login session's secret and CSRF token.
    let sessions: [String: LoginPair]

    struct LoginPair: Sendable {
        let secret: String
        let csrf: String
    }

    static let shared = Task { try await RouterSceneTemplate() }

    static func password(_ login: String) -> String { "password of \(login)" }

    private init() async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath)))
        let path = certificates.directory + "/template.sqlite"
        let node = try SupporterNode(configuration: configuration, store: try StoreConfiguration(path: path).open().engine)
        var sessions: [String: LoginPair] = [:]
        do {
            for (login, role) in [("root", SupporterRole.admin), ("alice", .supporter), ("bob", .supporter)] {
                _ = try await node.addAccount(login: login, displayName: login, role: role, password: Self.password(login))
                let (secret, session, _) = try await node.signIn(
                    login: login, password: Self.password(login), address: "127.0.0.1")
                sessions[login] = LoginPair(secret: secret, csrf: session.csrfToken)
            }
            code = try await node.createCode().record.code
            bobCode = try await node.createCode().record.code
            _ = try await node.updateCode(bobCode) { $0.assignedSupporter = "bob" }
            deviceToken = try node.issueAPIToken(scope: .device)
            deviceTokenID = try requireValue(node.tokenRecord(of: deviceToken)?.id)
            webhookID = try node.addWebhookEndpoint(
                url: Self.webhookURL, eventKinds: ["*"], description: "scene", by: .local
            ).id
            webhookDeliveryID = try requireValue(
                node.webhookDeliveries(endpointID: webhookID, beforeID: nil, state: nil, limit: 1).first?.id)
        } catch {
            node.shutdown()
            throw error
        }
        node.shutdown()
        // Files a device sent on `code`: one kept, one past its retention (its row without content), written as the
        // node writes them.
        let engine = try StoreConfiguration(path: path).open().engine
        do {
            let time = Date()
            let details = ["transfer_id": "1", "name": Self.fileName, "size": "\(Self.fileBytes.count)"]
            try await engine.write([
                .auditWithContent(
                    AuditEvent(time: time, code: code, kind: .fileReceived, details: details),
                    SessionContent(
                        code: code, time: time,
                        body: .file(name: Self.fileName, contentType: "text/html", bytes: Self.fileBytes)))
            ])
            fileID = try engine.latestAuditID()
            try await engine.write([
                .audit(AuditEvent(time: time, code: code, kind: .fileReceived, details: details.merging(["transfer_id": "2"]) { $1 }))
            ])
            goneFileID = try engine.latestAuditID()
        } catch {
            engine.stop()
            throw error
        }
        engine.stop()
        // The store may still hold its connection (and the WAL): both files, as SQLite reads them back.
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ScriptFailure(description: "the template store \(path) cannot be read")
        }
        store = Array(bytes)
        journal = FileManager.default.contents(atPath: path + "-wal").map(Array.init) ?? []
        certificate = try requireValue(FileManager.default.contents(atPath: certificates.server.certificatePath)).map { $0 }
        key = try requireValue(FileManager.default.contents(atPath: certificates.server.keyPath)).map { $0 }
        self.sessions = sessions
    }
}

/// A real node (a SQLite store file copied from ``RouterSceneTemplate``) behind the router; requests go straight to
/// ``RESTRouter/handle(_:)`` (no sockets).
final class RouterScene: Sendable {
    let fixture: RouterFixture
    let template: RouterSceneTemplate

    init() async throws {
        template = try await RouterSceneTemplate.shared.value
        fixture = try RouterFixture(template: template)
    }

    /// Unassigned, made by the admin token.
    var code: String { template.code }
    /// Assigned to bob.
    var bobCode: String { template.bobCode }
    var deviceToken: String { template.deviceToken }
    var deviceTokenID: String { template.deviceTokenID }
    var fileID: Int64 { template.fileID }
    var webhookID: String { template.webhookID }
    var webhookDeliveryID: Int64 { template.webhookDeliveryID }

    static func password(_ login: String) -> String { RouterSceneTemplate.password(login) }

    func stop() { fixture.stop() }

    /// `template` with `{code}`, `{bobCode}`, `{login}` (alice), `{id}` (the device token's id), `{file}` (the kept
    /// file's id), `{goneFile}`, `{webhook}` (the endpoint's id) and `{delivery}` (its delivery's id) filled in.
    func fill(_ template: String) -> String {
        template.replacingOccurrences(of: "{code}", with: code).replacingOccurrences(of: "{bobCode}", with: bobCode)
            .replacingOccurrences(of: "{login}", with: "alice").replacingOccurrences(of: "{id}", with: deviceTokenID)
            .replacingOccurrences(of: "{file}", with: "\(self.template.fileID)")
            .replacingOccurrences(of: "{goneFile}", with: "\(self.template.goneFileID)")
            .replacingOccurrences(of: "{webhook}", with: self.template.webhookID)
            .replacingOccurrences(of: "{delivery}", with: "\(self.template.webhookDeliveryID)")
    }

    /// The header fields `caller` sends (see ``RouterFixture/request(_:_:body:headers:)``).
    func headers(for caller: RouterCaller) throws -> [(String, String)] {
        func cookie(_ login: String, csrf: Bool) throws -> [(String, String)] {
            let session = try requireValue(template.sessions[login])
            var fields = [
                ("Authorization", ""), ("Cookie", "rsup_session=\(session.secret)"), ("Origin", "https://127.0.0.1:7444"),
            ]
            if csrf { fields.append(("X-CSRF-Token", session.csrf)) }
            return fields
        }
        switch caller {
        case .nobody: return [("Authorization", "")]
        case .admin: return []
        case .device: return [("Authorization", "Bearer \(deviceToken)")]
        case .alice: return try cookie("alice", csrf: true)
        case .aliceWithoutCSRF: return try cookie("alice", csrf: false)
        case .bob: return try cookie("bob", csrf: true)
        case .root: return try cookie("root", csrf: true)
        }
    }

    func send(
        _ method: HTTPMethod, _ path: String, as caller: RouterCaller, body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> HTTPResponse {
        await fixture.handle(method, fill(path), body: body, headers: try self.headers(for: caller) + headers)
    }
}

struct MissingValue: Error {}

/// `value`, or a thrown ``MissingValue``.
func requireValue<T>(_ value: T?) throws -> T {
    guard let value else { throw MissingValue() }
    return value
}

extension HTTPResponse {
    /// The body as JSON.
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    /// The error body's message.
    var errorMessage: String? { (json?["error"] as? [String: Any])?["message"] as? String }
    var text: String { String(decoding: body, as: UTF8.self) }
}
