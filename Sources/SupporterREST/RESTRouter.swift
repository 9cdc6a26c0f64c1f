import Foundation
import Synchronization
import SupportHTTP
import SupporterNode

/// The API of protocol/openapi.yaml on the node's public API: routes, authenticates, decodes, calls the node, encodes.
///
/// Every state-changing call names its actor to the node (`rest`, the token's id, the client address), which audits
/// it durably before it answers.
struct RESTRouter: Sendable {
    let node: SupporterNode
    let guardian: GuardBox
    let resolver: ClientAddressResolver
    let logger: NodeLogger

    /// The path prefix of every resource.
    static let base = ["api", "v1", "sessions"]

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        do throws(RESTError) {
            return try await route(request)
        } catch {
            return error.response
        }
    }

    private func route(_ request: HTTPRequest) async throws(RESTError) -> HTTPResponse {
        let segments = request.pathSegments
        guard segments.count >= 3, Array(segments.prefix(3)) == Self.base, segments.count <= 4 else {
            throw RESTError(.notFound, "no such resource: \(request.path)")
        }
        let actor = try await authenticate(request)
        guard segments.count == 4 else {
            switch request.method {
            case .post: return try await create(request, by: actor)
            case .get: return try list(request)
            default: throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, POST")
            }
        }
        let code = segments[3]
        switch request.method {
        case .get: return try get(code)
        case .put: return try await update(code, request, by: actor)
        case .delete: return try await delete(code, by: actor)
        default:
            throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, PUT, DELETE")
        }
    }

    // MARK: authentication

    /// The acting token and client address, or the 401, 403 or 429 to send (see ``AuthenticationGuard``). A refusal
    /// that the guard audits is answered only once its row is durable.
    private func authenticate(_ request: HTTPRequest) async throws(RESTError) -> AuditActor {
        let address = resolver.clientAddress(
            peer: request.peerAddress?.host, forwardedFor: request.headers.values(for: "X-Forwarded-For"))
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
            return AuditActor(kind: "rest", tokenID: id, address: address)
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

    // MARK: operations

    private func create(_ request: HTTPRequest, by actor: AuditActor) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APISessionCreate.self, from: request.body).validated(now: Date())
        let info: SessionCodeInfo
        do {
            info = try await node.createCode(
                type: input.codeType, details: input.details, lifetime: input.lifetime, validUntil: input.validUntil,
                by: actor)
        } catch {
            throw RESTError(error)
        }
        return .json(
            .created, encoding: APISession(info), headers: ["Location": "/api/v1/sessions/\(info.record.code)"])
    }

    private func list(_ request: HTTPRequest) throws(RESTError) -> HTTPResponse {
        guard let offset = Self.integer(request.query("offset"), default: 0), offset >= 0 else {
            throw RESTError(.badRequest, "offset must be a whole number, 0 or more")
        }
        guard let limit = Self.integer(request.query("limit"), default: 50), (1...500).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 500")
        }
        let page = node.codes(offset: offset, limit: limit)
        return .json(
            .ok,
            encoding: APISessionPage(
                sessions: page.codes.map(APISession.init), total: page.total, offset: offset, limit: limit))
    }

    /// A query parameter of decimal digits only, or `fallback` when absent; nil when malformed or too large.
    static func integer(_ text: String?, default fallback: Int) -> Int? {
        guard let text else { return fallback }
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }

    private func get(_ code: String) throws(RESTError) -> HTTPResponse {
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .json(.ok, encoding: APISession(info))
    }

    private func update(_ code: String, _ request: HTTPRequest, by actor: AuditActor) async throws(RESTError)
        -> HTTPResponse
    {
        guard let current = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        let change = try StrictJSON.decode(APISessionUpdate.self, from: request.body).validated(now: Date())
        if change.state == .open, current.record.isClosed {
            throw RESTError(.conflict, "a closed session code cannot be reopened")
        }
        do {
            if change.changesMetadata {
                try await node.updateCode(code, by: actor) { record in change.apply(to: &record) }
            }
            if let rules = change.featureRules { try await node.setFeatureRules(code, rules, by: actor) }
            if change.state == .closed, !current.record.isClosed { try await node.closeCode(code, by: actor) }
        } catch {
            throw RESTError(error)
        }
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .json(.ok, encoding: APISession(info))
    }

    private func delete(_ code: String, by actor: AuditActor) async throws(RESTError) -> HTTPResponse {
        do {
            try await node.deleteCode(code, by: actor)
        } catch {
            throw RESTError(error)
        }
        return HTTPResponse(status: .noContent)
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
