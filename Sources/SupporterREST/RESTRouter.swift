import Foundation
import SupportHTTP
import SupportRuntime
import SupportUtilities
import SupporterModel

/// The API of protocol/openapi.yaml on the node's public API: routes, authenticates, decodes, calls the node, encodes.
///
/// Every state-changing call names its actor to the node (`rest`, the token's id, the client address), which audits
/// it durably before it answers.
struct RESTRouter: Sendable {
    let node: any SupporterService
    let guardian: GuardBox
    let resolver: ClientAddressResolver
    let logger: NodeLogger
    let console: ConsoleFiles
    let feed: EventFeed
    /// Where the API reads the wall time (the server's clock).
    let clock: any NodeClock
    /// The loop whose timers bound the health probes' waits (``probeTimeout``), and whose clock times requests.
    let probeLoop: EventLoop
    /// Who may read `GET /metrics`.
    let metricsAccess: MetricsAccess
    let metrics: RESTMetrics

    /// Answers `request` (the HTTP server adds the security headers of ``BrowserSecurity/headers``): the duplicate
    /// header check, then the route of ``routes`` (404 and 405 as ``RouteTable`` decides, 405 before or after
    /// authentication as the route's ``RESTEndpoint/MethodCheck`` says), its ``RESTEndpoint/Access``, its handler.
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = probeLoop.now
        var route = "other"
        let response: HTTPResponse
        do throws(RESTError) {
            try BrowserSecurity.checkSingleFields(request)
            response = try await dispatch(request, route: &route)
        } catch {
            response = error.response
        }
        metrics.answered(
            route: route, method: request.method, status: response.status.code, after: probeLoop.now.since(started))
        return response
    }

    /// `route`: set to the template of the route the request took (its label in the metrics).
    private func dispatch(_ request: HTTPRequest, route label: inout String) async throws(RESTError) -> HTTPResponse {
        switch Self.routes.match(request.method, request.pathSegments) {
        case .found(let route, let parameters):
            label = "\(route.pattern)"
            return try await route.handler.run(self, request, parameters: parameters)
        case .methodNotAllowed(let allowed, let routes, _):
            label = routes.first.map { "\($0.pattern)" } ?? label
            // Every route of a path has the same access and method check (RESTRouteTableTests).
            if let endpoint = routes.first?.handler, endpoint.methodCheck == .afterAccess {
                _ = try await authorize(request, endpoint.access)
            }
            throw RESTError(
                .methodNotAllowed, "\(request.method) is not allowed here",
                allowedMethods: allowed.map(\.description).joined(separator: ", "))
        case .notFound:
            // Not reached with ``routes`` (its fallbacks take every path); kept for a table without them.
            throw RESTError(.notFound, "no such resource: \(request.path)")
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
        switch guardian.check(credential, address: address, now: clock.wallTime) {
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

    /// The caller, when it passes `access` (``RESTEndpoint/Access/caller`` or ``RESTEndpoint/Access/admin``): the
    /// 401, 403 or 429 of ``authenticate(_:)``, then for admin routes 403 unless the caller is an admin.
    func authorize(_ request: HTTPRequest, _ access: RESTEndpoint.Access) async throws(RESTError)
        -> (RESTPrincipal, String?)
    {
        let (principal, secret) = try await authenticate(request)
        if access == .admin { try principal.requireAdmin() }
        return (principal, secret)
    }

    func clientAddress(_ request: HTTPRequest) -> String {
        resolver.clientAddress(peer: request.peerAddress?.host, forwardedFor: request.headers.values(for: "X-Forwarded-For"))
    }
}
