import Foundation
import SupportHTTP
import SupportSession
import SupportTransport

/// The REST API of protocol/openapi.yaml: session codes over HTTPS, bearer-token authentication, JSON errors.
struct RESTAPI: Sendable {
    /// Weak: the server must not keep the node alive.
    private weak var node: SupporterNode?

    init(node: SupporterNode) { self.node = node }

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
        if let refusal = authenticate(request, node: node) { return refusal }
        if segments.count == 3 {
            switch request.method {
            case .post: return create(request, node: node)
            case .get: return list(request, node: node)
            default: return methodNotAllowed(request.method, allowed: "GET, POST")
            }
        }
        let code = segments[3]
        switch request.method {
        case .get: return get(code, node: node)
        case .put: return await update(code, request, node: node)
        case .delete: return delete(code, node: node)
        default: return methodNotAllowed(request.method, allowed: "GET, PUT, DELETE")
        }
    }

    private func methodNotAllowed(_ method: HTTPMethod, allowed: String) -> HTTPResponse {
        var response = HTTPResponse.error(.methodNotAllowed, message: "\(method) is not allowed here")
        response.headers.replaceOrAdd(name: "Allow", value: allowed)
        return response
    }

    // MARK: authentication

    /// Nil when the request carries an admin token; else the 401, 403 or 429 to send. Failures back off per source
    /// address, durably, like device registrations.
    private func authenticate(_ request: HTTPRequest, node: SupporterNode) -> HTTPResponse? {
        let address = request.peerAddress?.host ?? "unknown"
        let key = "rest:addr:" + address
        let clock = SupporterNode.wallClock()
        if let wait = retryAfter(key, now: clock, node: node) {
            var response = HTTPResponse.error(
                .tooManyRequests, message: "too many failed authentications from \(address); retry later")
            response.headers.replaceOrAdd(name: "Retry-After", value: "\(max(1, (wait.wholeMilliseconds + 999) / 1000))")
            return response
        }
        let header = request.headers["Authorization"] ?? ""
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            return unauthorized("missing bearer token: send 'Authorization: Bearer <admin token>'")
        }
        switch node.scope(ofToken: String(parts[1])) {
        case .admin:
            return nil
        case .device:
            return .error(.forbidden, message: "this is a device token; the REST API needs an admin token")
        case nil:
            node.state.withLock { $0.backoff.recordFailure(key, now: clock) }
            node.persistBackoff(keys: [key])
            node.logger.log(.warning, "REST API: unknown bearer token from \(address)")
            return unauthorized("unknown bearer token")
        }
    }

    /// How long `key` must still wait under the REST API's own policy: the node's back-off counts the failures (and
    /// stores them), but the REST API blocks only after ``RESTAPIConfiguration/freeAuthenticationFailures`` of them,
    /// for the back-off's base delay, doubling with each further failure up to its maximum.
    private func retryAfter(_ key: String, now: Duration, node: SupporterNode) -> Duration? {
        let free = max(1, node.configuration.restAPI?.freeAuthenticationFailures ?? 5)
        let policy = node.configuration.backoff
        guard let entry = node.state.withLock({ $0.backoff.state(of: key) }), entry.failures >= free else { return nil }
        let exponent = min(entry.failures - free, 30)
        let blockedUntil = entry.lastFailure + min(policy.base * (1 << exponent), policy.maximum)
        return blockedUntil > now ? blockedUntil - now : nil
    }

    private func unauthorized(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(.unauthorized, message: message)
        response.headers.replaceOrAdd(name: "WWW-Authenticate", value: "Bearer realm=\"rsup\"")
        return response
    }

    // MARK: operations

    private func create(_ request: HTTPRequest, node: SupporterNode) -> HTTPResponse {
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
            let info = try node.createCode(
                type: input.type, details: input.details, lifetime: input.lifetime, validUntil: input.validUntil)
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

    private func update(_ code: String, _ request: HTTPRequest, node: SupporterNode) async -> HTTPResponse {
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
                try node.updateCode(code) { record in change.apply(to: &record) }
            }
            if change.close, !current.record.isClosed { try await node.closeCode(code) }
        } catch {
            return SessionJSON.response(for: error)
        }
        guard let info = node.code(code) else { return .error(.notFound, message: "no session code \(code)") }
        return .json(.ok, SessionJSON.session(info))
    }

    private func delete(_ code: String, node: SupporterNode) -> HTTPResponse {
        do {
            try node.deleteCode(code)
            return HTTPResponse(status: .noContent)
        } catch {
            return SessionJSON.response(for: error)
        }
    }
}
