import Foundation
import SupportHTTP
import SupportSession
import SupportTransport
import Synchronization
import SupportRegistry

/// The REST API of protocol/openapi.yaml: session codes over HTTPS, bearer-token authentication, JSON errors.
struct RESTAPI: Sendable {
    /// Weak: the server must not keep the node alive.
    private weak var node: SupporterNode?
    private let limiter: BackoffLimiter

    init(node: SupporterNode) {
        self.node = node
        let free = node.configuration.restAPI?.freeAuthenticationFailures ?? 5
        limiter = BackoffLimiter(
            BackoffTable(
                policy: BackoffPolicy(
                    freeFailures: free, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60)),
                capacity: 10_000))
    }

    /// Starts the HTTPS server on the node's loops, with the node's certificate.
    func serve(_ configuration: RESTAPIConfiguration, tls: TLSConfiguration, group: EventLoopGroup)
        throws(TransportError) -> HTTPServer
    {
        guard let chain = tls.certificateChain, let key = tls.privateKey else {
            throw TransportError(.invalidConfiguration, "the REST API needs the node's certificate and key")
        }
        let context = try TLSContext(HTTPServer.makeTLSConfiguration(certificateChain: chain, privateKey: key))
        let api = self
        return try HTTPServer(host: configuration.host, port: configuration.port, context: context, group: group) {
            request in await api.handle(request)
        }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        guard let node else { return .error(.serviceUnavailable, message: "the node is shutting down") }
        let segments = request.pathSegments
        guard segments.count >= 3, segments[0] == "api", segments[1] == "v1", segments[2] == "sessions",
            segments.count <= 4
        else { return .error(.notFound, message: "no such resource: \(request.path)") }
        let actor: AuditActor
        switch authenticate(request, node: node) {
        case .failure(let refusal): return refusal.response
        case .success(let value): actor = value
        }
        if segments.count == 3 {
            switch request.method {
            case .post: return await create(request, node: node, by: actor)
            case .get: return list(request, node: node)
            default: return methodNotAllowed(request.method, allowed: "GET, POST")
            }
        }
        let code = segments[3]
        switch request.method {
        case .get: return get(code, node: node)
        case .put: return await update(code, request, node: node, by: actor)
        case .delete: return await delete(code, node: node, by: actor)
        default: return methodNotAllowed(request.method, allowed: "GET, PUT, DELETE")
        }
    }

    private func methodNotAllowed(_ method: HTTPMethod, allowed: String) -> HTTPResponse {
        var response = HTTPResponse.error(.methodNotAllowed, message: "\(method) is not allowed here")
        response.headers.replaceOrAdd(name: "Allow", value: allowed)
        return response
    }

    // MARK: authentication

    /// The acting token when the request carries an admin token; else the 401, 403 or 429 to send.
    ///
    /// A valid admin token is never refused for failures from its address (SPEC §13): the token is checked first.
    /// Failures (no, unknown or wrong-scope token) count against the source address under the node's one back-off
    /// policy type, in memory (they decay; a restart forgets them), and make that address wait once blocked.
    private func authenticate(_ request: HTTPRequest, node: SupporterNode) -> Result<AuditActor, APIRefusal> {
        let address = request.peerAddress?.host ?? "unknown"
        let clock = Duration.milliseconds(Date().unixMilliseconds)
        let header = request.headers["Authorization"] ?? ""
        let parts = header.split(separator: " ", maxSplits: 1)
        let token = parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : ""
        let record = token.isEmpty ? nil : node.tokenRecord(of: token)
        let scope = record?.scope
        if let record, record.scope == .admin {
            return .success(AuditActor(kind: "rest", tokenID: record.id, address: address))
        }
        // Only unknown tokens count: a missing token or a device token guesses nothing.
        guard !token.isEmpty else {
            return .failure(APIRefusal(unauthorized("missing bearer token: send 'Authorization: Bearer <admin token>'")))
        }
        if scope == .device {
            return .failure(
                APIRefusal(.error(.forbidden, message: "this is a device token; the REST API needs an admin token")))
        }
        if let wait = limiter.retryAfter(address, now: clock) {
            var response = HTTPResponse.error(
                .tooManyRequests, message: "too many failed authentications from \(address); retry later")
            response.headers.replaceOrAdd(name: "Retry-After", value: "\(max(1, (wait.components.seconds) + 1))")
            return .failure(APIRefusal(response))
        }
        limiter.recordFailure(address, now: clock)
        node.logger.log(.warning, "REST API: unknown bearer token from \(address)")
        return .failure(APIRefusal(unauthorized("unknown bearer token")))
    }

    private func unauthorized(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(.unauthorized, message: message)
        response.headers.replaceOrAdd(name: "WWW-Authenticate", value: "Bearer realm=\"rsup\"")
        return response
    }

    // MARK: operations

    private func create(_ request: HTTPRequest, node: SupporterNode, by actor: AuditActor) async -> HTTPResponse {
        let body: [String: Any]
        switch SessionJSON.object(request.body) {
        case .failure(let refusal): return refusal.response
        case .success(let object): body = object
        }
        let input: SessionJSON.Creation
        switch SessionJSON.creation(body) {
        case .failure(let refusal): return refusal.response
        case .success(let value): input = value
        }
        do {
            let info = try await node.createCode(
                type: input.type, details: input.details, lifetime: input.lifetime, validUntil: input.validUntil,
                by: actor)
            var response = HTTPResponse.json(.created, SessionJSON.session(info))
            response.headers.replaceOrAdd(name: "Location", value: "/api/v1/sessions/\(info.record.code)")
            return response
        } catch {
            return SessionJSON.response(for: error)
        }
    }

    private func list(_ request: HTTPRequest, node: SupporterNode) -> HTTPResponse {
        guard let offset = integer(request.query("offset"), default: 0), offset >= 0 else {
            return .error(.badRequest, message: "offset must be a whole number, 0 or more")
        }
        guard let limit = integer(request.query("limit"), default: 50), (1...500).contains(limit) else {
            return .error(.badRequest, message: "limit must be a whole number from 1 to 500")
        }
        let page = node.codes(offset: offset, limit: limit)
        return .json(
            .ok,
            ["sessions": page.codes.map(SessionJSON.session), "total": page.total, "offset": offset, "limit": limit]
                as [String: Any])
    }

    private func integer(_ text: String?, default fallback: Int) -> Int? {
        guard let text else { return fallback }
        guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else { return nil }
        return Int(text)
    }

    private func get(_ code: String, node: SupporterNode) -> HTTPResponse {
        guard let info = node.code(code) else { return .error(.notFound, message: "no session code \(code)") }
        return .json(.ok, SessionJSON.session(info))
    }

    private func update(_ code: String, _ request: HTTPRequest, node: SupporterNode, by actor: AuditActor) async
        -> HTTPResponse
    {
        guard let current = node.code(code) else { return .error(.notFound, message: "no session code \(code)") }
        let body: [String: Any]
        switch SessionJSON.object(request.body) {
        case .failure(let refusal): return refusal.response
        case .success(let object): body = object
        }
        let change: SessionJSON.Change
        switch SessionJSON.change(body) {
        case .failure(let refusal): return refusal.response
        case .success(let value): change = value
        }
        if change.reopen, current.record.isClosed {
            return .error(.conflict, message: "a closed session code cannot be reopened")
        }
        do {
            if change.hasMetadata {
                try await node.updateCode(code, by: actor) { record in change.apply(to: &record) }
            }
            if change.close, !current.record.isClosed { try await node.closeCode(code, by: actor) }
        } catch {
            return SessionJSON.response(for: error)
        }
        guard let info = node.code(code) else { return .error(.notFound, message: "no session code \(code)") }
        return .json(.ok, SessionJSON.session(info))
    }

    private func delete(_ code: String, node: SupporterNode, by actor: AuditActor) async -> HTTPResponse {
        do {
            try await node.deleteCode(code, by: actor)
            return HTTPResponse(status: .noContent)
        } catch {
            return SessionJSON.response(for: error)
        }
    }
}

/// A ``BackoffTable`` shared by the REST API's handlers.
final class BackoffLimiter: Sendable {
    private let table: Mutex<BackoffTable>

    init(_ table: BackoffTable) { self.table = Mutex(table) }

    func retryAfter(_ key: String, now: Duration) -> Duration? { table.withLock { $0.retryAfter(key, now: now) } }

    func recordFailure(_ key: String, now: Duration) { table.withLock { _ = $0.recordFailure(key, now: now) } }
}
