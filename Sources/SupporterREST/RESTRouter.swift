import Foundation
import Synchronization
import SupportHTTP
import SupporterNode
import SupportUtilities
import SupporterCore
import SupportWire

/// The API of protocol/openapi.yaml on the node's public API: routes, authenticates, decodes, calls the node, encodes.
///
/// Every state-changing call names its actor to the node (`rest`, the token's id, the client address), which audits
/// it durably before it answers.
struct RESTRouter: Sendable {
    let node: SupporterNode
    let guardian: GuardBox
    let resolver: ClientAddressResolver
    let logger: NodeLogger
    let console: ConsoleFiles
    let feed: EventFeed

    /// The path prefix of every API resource.
    static let api = ["api", "v1"]

    /// Answers `request` (the HTTP server adds the security headers of ``BrowserSecurity/headers``).
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        do throws(RESTError) {
            try BrowserSecurity.checkSingleFields(request)
            return request.pathSegments.first == "api" ? try await route(request) : try serveConsole(request)
        } catch {
            return error.response
        }
    }

    /// The web console's files: `GET /` and `GET /<file>`.
    private func serveConsole(_ request: HTTPRequest) throws(RESTError) -> HTTPResponse {
        guard request.method == .get || request.method == .head else {
            throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, HEAD")
        }
        guard let response = console.response(for: request.path) else {
            throw RESTError(.notFound, "no such page: \(request.path)")
        }
        return response
    }

    private func route(_ request: HTTPRequest) async throws(RESTError) -> HTTPResponse {
        let segments = request.pathSegments
        guard segments.count >= 3, Array(segments.prefix(2)) == Self.api else {
            throw RESTError(.notFound, "no such resource: \(request.path)")
        }
        let path = Array(segments.dropFirst(2))
        switch path[0] {
        case "login" where path.count == 1:
            try allow(request, .post)
            return try await signIn(request)
        case "logout" where path.count == 1:
            try allow(request, .post)
            return try await signOut(request)
        case "me" where path.count == 1:
            try allow(request, .get)
            let (principal, _) = try await authenticate(request)
            guard case .account(let account, let session, _) = principal else {
                throw RESTError(.notFound, "an API token has no account; /me is for signed-in supporters")
            }
            return .api(.ok, encoding: APISignedIn(account: APIAccount(account), csrfToken: session.csrfToken))
        case "sessions" where path.count <= 3:
            let (principal, _) = try await authenticate(request)
            return try await sessions(request, Array(path.dropFirst()), as: principal)
        case "audit" where path.count == 1:
            try allow(request, .get)
            let (principal, _) = try await authenticate(request)
            return try audit(request, as: principal)
        case "events" where path.count == 1:
            try allow(request, .get)
            let (principal, secret) = try await authenticate(request)
            return try events(request, as: principal, sessionSecret: secret)
        case "users" where path.count <= 2:
            let (principal, _) = try await authenticate(request)
            try principal.requireAdmin()
            return try await users(request, path.count == 2 ? path[1] : nil, as: principal)
        case "tokens" where path.count <= 2:
            let (principal, _) = try await authenticate(request)
            try principal.requireAdmin()
            return try await tokens(request, path.count == 2 ? path[1] : nil, as: principal)
        default:
            throw RESTError(.notFound, "no such resource: \(request.path)")
        }
    }

    /// 405 unless `request` uses one of `methods`.
    func allow(_ request: HTTPRequest, _ methods: HTTPMethod...) throws(RESTError) {
        guard !methods.contains(request.method) else { return }
        throw RESTError(
            .methodNotAllowed, "\(request.method) is not allowed here",
            allowedMethods: methods.map(\.description).joined(separator: ", "))
    }

    private func sessions(_ request: HTTPRequest, _ path: [String], as principal: RESTPrincipal) async throws(RESTError)
        -> HTTPResponse
    {
        guard let code = path.first else {
            switch request.method {
            case .post: return try await create(request, by: principal)
            case .get: return try list(request, for: principal)
            default: throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, POST")
            }
        }
        guard path.count == 1 else {
            guard ["connect", "cancel", "end"].contains(path[1]) else {
                throw RESTError(.notFound, "no such resource: \(request.path)")
            }
            try allow(request, .post)
            return try await act(path[1], on: code, request, by: principal)
        }
        switch request.method {
        case .get: return try get(code, for: principal)
        case .put: return try await update(code, request, by: principal)
        case .delete: return try await delete(code, by: principal)
        default:
            throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, PUT, DELETE")
        }
    }

    // MARK: authentication

    /// The caller, or the 401, 403 or 429 to send. An `Authorization: Bearer` token is checked as before (admin
    /// tokens only, guessing limited per address, see ``AuthenticationGuard``); without one, the login session cookie.
    /// A request with the cookie that changes something must come from the node's own origin and carry the session's
    /// CSRF token (``BrowserSecurity``). Also returns the session's secret, for event streams.
    func authenticate(_ request: HTTPRequest) async throws(RESTError) -> (RESTPrincipal, String?) {
        let address = clientAddress(request)
        if request.headers["Authorization"] == nil, let secret = BrowserSecurity.sessionSecret(request) {
            guard let (session, account) = node.loginSession(secret: secret) else {
                throw RESTError(.unauthorized, "your sign-in has ended; sign in again")
            }
            if request.method != .get, request.method != .head {
                try BrowserSecurity.checkSameOrigin(request)
                try BrowserSecurity.checkCSRF(request, expected: session.csrfToken)
            }
            return (.account(account, session: session, address: address), secret)
        }
        let credential: AuthenticationGuard.Credential
        if let token = AuthenticationGuard.bearerToken(request.headers["Authorization"]) {
            let record = node.tokenRecord(of: token)
            switch record?.scope {
            case .admin: credential = .admin(tokenID: record?.id ?? "?")
            case .device: credential = .device
            case nil: credential = .unknown
            }
        } else {
            credential = .missing
        }
        switch guardian.check(credential, address: address, now: Date()) {
        case .accept(let id):
            return (.adminToken(id: id, address: address), nil)
        case .refuse(let error, let row):
            if let row {
                logger.log(.warning, "REST API: unknown bearer token from \(address) (at most one line per minute)")
                do { try await node.appendAudit([row]) } catch {
                    logger.log(.error, "REST API: could not audit a failed authentication: \(error)")
                }
            }
            throw error
        }
    }

    func clientAddress(_ request: HTTPRequest) -> String {
        resolver.clientAddress(peer: request.peerAddress?.host, forwardedFor: request.headers.values(for: "X-Forwarded-For"))
    }
}

/// The ``AuthenticationGuard`` shared by the REST API's handlers, behind a lock held for in-memory work only.
final class GuardBox: Sendable {
    private let state: Mutex<AuthenticationGuard>

    init(_ value: AuthenticationGuard) { state = Mutex(value) }

    func check(_ credential: AuthenticationGuard.Credential, address: String, now: Date) -> AuthenticationGuard.Decision {
        state.withLock { $0.check(credential, address: address, now: now) }
    }

    func tick(now: Date, everything: Bool = false) -> [AuditEvent] {
        state.withLock { $0.tick(now: now, everything: everything) }
    }
}
