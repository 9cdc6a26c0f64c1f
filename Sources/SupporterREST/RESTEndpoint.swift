import SupportHTTP

/// A route's handler in the REST API's ``RouteTable``: who may call it, whether a wrong method on its path is refused
/// before or after that is checked, the operation of protocol/openapi.yaml it implements, and the handler itself.
struct RESTEndpoint: Sendable {
    /// Who may call the route; checked by the router before the handler runs.
    enum Access: Sendable, Hashable, CustomStringConvertible {
        /// No authentication (sign-in, the console's files, the 404 fallbacks).
        case anyone
        /// An admin API token or a signed-in account (401, 403 or 429 otherwise; a cookie's state change also needs
        /// the node's own origin and the CSRF token, see ``RESTRouter/authenticate(_:)``).
        case caller
        /// As ``caller``, then 403 unless the caller is an admin.
        case admin

        var description: String {
            switch self {
            case .anyone: "anyone"
            case .caller: "caller"
            case .admin: "admin"
            }
        }
    }

    /// When a method the path does not have is refused (405), relative to ``Access``. Version 1 answered 401/403
    /// before 405 below `/sessions`, `/users` and `/tokens`, and 405 first everywhere else (protocol/openapi.yaml's
    /// description says so); every route of one path says the same (a test checks it).
    enum MethodCheck: Sendable, Hashable {
        /// 405 before anything else.
        case first
        /// 405 only once the caller passed ``Access``.
        case afterAccess
    }

    typealias Open = @Sendable (RESTRouter, RESTCall) async throws(RESTError) -> HTTPResponse
    typealias Authenticated = @Sendable (RESTRouter, RESTCall, RESTPrincipal) async throws(RESTError) -> HTTPResponse

    private enum Body: Sendable {
        case open(Open)
        case authenticated(Authenticated)
    }

    let access: Access
    let methodCheck: MethodCheck
    /// The `operationId` in protocol/openapi.yaml; nil for the fallbacks the spec describes only in prose (404 for
    /// other paths, the console's deeper paths).
    let operationID: String?
    private let body: Body

    /// A route open to anyone; a wrong method is refused first.
    static func open(_ operationID: String?, _ run: @escaping Open) -> RESTEndpoint {
        RESTEndpoint(access: .anyone, methodCheck: .first, operationID: operationID, body: .open(run))
    }

    /// A route for an admin token or signed-in account (`access` ``Access/caller`` or ``Access/admin``).
    static func authenticated(
        _ access: Access, methodCheck: MethodCheck, _ operationID: String?, _ run: @escaping Authenticated
    ) -> RESTEndpoint {
        precondition(access != .anyone, "an authenticated route needs a caller")
        return RESTEndpoint(access: access, methodCheck: methodCheck, operationID: operationID, body: .authenticated(run))
    }

    /// Checks ``access``, then runs the handler.
    func run(_ router: RESTRouter, _ request: HTTPRequest, parameters: [String: String]) async throws(RESTError)
        -> HTTPResponse
    {
        switch body {
        case .open(let run):
            return try await run(router, RESTCall(request: request, parameters: parameters, sessionSecret: nil))
        case .authenticated(let run):
            let (principal, secret) = try await router.authorize(request, access)
            return try await run(
                router, RESTCall(request: request, parameters: parameters, sessionSecret: secret), principal)
        }
    }
}
