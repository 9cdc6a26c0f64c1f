import Foundation
import Synchronization
import SupportHTTP
import SupporterNode
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

/// A real node (in-memory SQLite store) behind the router, with accounts root (admin), alice and bob (supporters), a
/// code nobody is assigned to, one assigned to bob, and a device token; requests go straight to
/// ``RESTRouter/handle(_:)`` (no sockets).
final class RouterScene: Sendable {
    let fixture: RouterFixture
    /// Unassigned, made by the admin token.
    let code: String
    /// Assigned to bob.
    let bobCode: String
    let deviceToken: String
    let deviceTokenID: String
    private let signedIn = Mutex<String?>(nil)

    /// The secret of the last login session ``signIn(_:)`` opened.
    var lastSessionSecret: String? { signedIn.withLock { $0 } }

    init() async throws {
        fixture = try RouterFixture()
        let node = fixture.node
        for (login, role) in [("root", SupporterRole.admin), ("alice", .supporter), ("bob", .supporter)] {
            _ = try await node.addAccount(login: login, displayName: login, role: role, password: Self.password(login))
        }
        code = try await node.createCode().record.code
        bobCode = try await node.createCode().record.code
        _ = try await node.updateCode(bobCode) { $0.assignedSupporter = "bob" }
        deviceToken = try node.issueAPIToken(scope: .device)
        deviceTokenID = try requireValue(node.tokenRecord(of: deviceToken)?.id)
    }

    static func password(_ login: String) -> String { "password of \(login)" }

    func stop() { fixture.stop() }

    /// `template` with `{code}`, `{bobCode}`, `{login}` (alice) and `{id}` (the device token's id) filled in.
    func fill(_ template: String) -> String {
        template.replacingOccurrences(of: "{code}", with: code).replacingOccurrences(of: "{bobCode}", with: bobCode)
            .replacingOccurrences(of: "{login}", with: "alice").replacingOccurrences(of: "{id}", with: deviceTokenID)
    }

    /// A login session of `login`, signed in on the node: the cookie's secret and the CSRF token.
    func signIn(_ login: String) async throws -> (secret: String, csrf: String) {
        let (secret, session, _) = try await fixture.node.signIn(
            login: login, password: Self.password(login), address: "127.0.0.1")
        signedIn.withLock { $0 = secret }
        return (secret, session.csrfToken)
    }

    /// The header fields `caller` sends (see ``RouterFixture/request(_:_:body:headers:)``).
    func headers(for caller: RouterCaller) async throws -> [(String, String)] {
        func cookie(_ login: String, csrf: Bool) async throws -> [(String, String)] {
            let (secret, token) = try await signIn(login)
            var fields = [("Authorization", ""), ("Cookie", "rsup_session=\(secret)"), ("Origin", "https://127.0.0.1:7444")]
            if csrf { fields.append(("X-CSRF-Token", token)) }
            return fields
        }
        switch caller {
        case .nobody: return [("Authorization", "")]
        case .admin: return []
        case .device: return [("Authorization", "Bearer \(deviceToken)")]
        case .alice: return try await cookie("alice", csrf: true)
        case .aliceWithoutCSRF: return try await cookie("alice", csrf: false)
        case .bob: return try await cookie("bob", csrf: true)
        case .root: return try await cookie("root", csrf: true)
        }
    }

    func send(
        _ method: HTTPMethod, _ path: String, as caller: RouterCaller, body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> HTTPResponse {
        await fixture.handle(method, fill(path), body: body, headers: try await self.headers(for: caller) + headers)
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
