import SupportHTTP

/// The route table of the REST API and the web console: every path and method the node answers on its API address.
///
/// Order matters only for `Allow`: the methods of one path are listed in table order. Which route a path takes does
/// not depend on order (``RouteTable``: the most specific pattern wins), so the fallbacks may sit anywhere.
extension RESTRouter {
    typealias Route = RouteTable<RESTEndpoint>.Route

    static let routes = RouteTable<RESTEndpoint>([
        // The web console's files, outside /api/ (GET and HEAD; the HTTP server leaves HEAD's body out).
        Route([.get, .head], "/", .open("getConsole") { router, call throws(RESTError) in try router.consoleFile(call) }),
        Route([.get, .head], "/{file}", .open("getConsoleFile") { router, call throws(RESTError) in
            try router.consoleFile(call)
        }),
        // Deeper paths are no file of the console: 404 "no such page", and 405 for other methods as on /{file}.
        Route([.get, .head], "/**", .open(nil) { router, call throws(RESTError) in try router.consoleFile(call) }),
        // Health probes (tag health): open to anyone, a status word and code only.
        Route([.get, .head], "/livez", .open("getLiveness") { router, call throws(RESTError) in
            await router.liveness(call)
        }),
        Route([.get, .head], "/readyz", .open("getReadiness") { router, call throws(RESTError) in
            await router.readiness(call)
        }),
        // Prometheus metrics (tag health): by address or token, no account (``MetricsAccess``).
        Route([.get, .head], "/metrics", .open("getMetrics") { router, call throws(RESTError) in
            try await router.metricsExposition(call)
        }),
        // Any other path below /api/ (also /api and /api/v1 themselves): 404, before any authentication.
        Route(nil, "/api/**", .open(nil) { router, call throws(RESTError) in throw router.noSuchResource(call) }),

        // Signing in and out (protocol/openapi.yaml tag sign-in).
        Route(.post, "/api/v1/login", .open("signIn") { router, call throws(RESTError) in
            try await router.signIn(call)
        }),
        Route(.post, "/api/v1/logout", .authenticated(.caller, methodCheck: .first, "signOut") {
            router, call, principal throws(RESTError) in try await router.signOut(call, by: principal)
        }),
        Route(.get, "/api/v1/me", .authenticated(.caller, methodCheck: .first, "getMe") {
            router, call, principal throws(RESTError) in try router.signedInAccount(call, of: principal)
        }),

        // Session codes (tag sessions): authenticated before a wrong method is refused.
        Route(.get, "/api/v1/sessions", .authenticated(.caller, methodCheck: .afterAccess, "listSessions") {
            router, call, principal throws(RESTError) in try router.listSessions(call, for: principal)
        }),
        Route(.post, "/api/v1/sessions", .authenticated(.caller, methodCheck: .afterAccess, "createSession") {
            router, call, principal throws(RESTError) in try await router.createSession(call, by: principal)
        }),
        Route(.get, "/api/v1/sessions/{code}", .authenticated(.caller, methodCheck: .afterAccess, "getSession") {
            router, call, principal throws(RESTError) in try router.getSession(call, for: principal)
        }),
        Route(.put, "/api/v1/sessions/{code}", .authenticated(.caller, methodCheck: .afterAccess, "updateSession") {
            router, call, principal throws(RESTError) in try await router.updateSession(call, by: principal)
        }),
        Route(.delete, "/api/v1/sessions/{code}", .authenticated(.caller, methodCheck: .afterAccess, "deleteSession") {
            router, call, principal throws(RESTError) in try await router.deleteSession(call, by: principal)
        }),
        Route(.post, "/api/v1/sessions/{code}/connect", .authenticated(
            .caller, methodCheck: .afterAccess, "connectSession"
        ) { router, call, principal throws(RESTError) in try await router.connectSession(call, by: principal) }),
        Route(.post, "/api/v1/sessions/{code}/cancel", .authenticated(
            .caller, methodCheck: .afterAccess, "cancelRequest"
        ) { router, call, principal throws(RESTError) in try await router.cancelRequest(call, by: principal) }),
        Route(.post, "/api/v1/sessions/{code}/end", .authenticated(.caller, methodCheck: .afterAccess, "endSession") {
            router, call, principal throws(RESTError) in try await router.endSession(call, by: principal)
        }),
        Route(.get, "/api/v1/sessions/{code}/report", .authenticated(
            .caller, methodCheck: .afterAccess, "getSessionReport"
        ) { router, call, principal throws(RESTError) in try router.sessionReport(call, for: principal) }),
        Route(.post, "/api/v1/sessions/{code}/ask", .authenticated(.caller, methodCheck: .afterAccess, "askFeature") {
            router, call, principal throws(RESTError) in try await router.askFeature(call, by: principal)
        }),
        Route(.post, "/api/v1/sessions/{code}/ask/withdraw", .authenticated(
            .caller, methodCheck: .afterAccess, "withdrawFeatureAsk") {
            router, call, principal throws(RESTError) in try await router.withdrawFeatureAsk(call, by: principal)
        }),
        Route(.get, "/api/v1/sessions/{code}/messages", .authenticated(
            .caller, methodCheck: .afterAccess, "listSessionMessages"
        ) { router, call, principal throws(RESTError) in try router.listSessionMessages(call, for: principal) }),
        Route(.post, "/api/v1/sessions/{code}/messages", .authenticated(
            .caller, methodCheck: .afterAccess, "sendApplicationMessage"
        ) { router, call, principal throws(RESTError) in try await router.sendApplicationMessage(call, by: principal) }),
        Route(.post, "/api/v1/sessions/{code}/chat", .authenticated(.caller, methodCheck: .afterAccess, "sendChat") {
            router, call, principal throws(RESTError) in try await router.sendChat(call, by: principal)
        }),
        Route(.get, "/api/v1/sessions/{code}/files", .authenticated(
            .caller, methodCheck: .afterAccess, "listSessionFiles"
        ) { router, call, principal throws(RESTError) in try router.listSessionFiles(call, for: principal) }),
        Route(.post, "/api/v1/sessions/{code}/files", .authenticated(
            .caller, methodCheck: .afterAccess, "uploadSessionFile"
        ) { router, call, principal throws(RESTError) in try await router.uploadSessionFile(call, by: principal) }),
        Route(.get, "/api/v1/sessions/{code}/files/{file}", .authenticated(
            .caller, methodCheck: .afterAccess, "downloadSessionFile"
        ) { router, call, principal throws(RESTError) in try router.downloadSessionFile(call, for: principal) }),
        // Another action on a code: 404, but (as in version 1, and as the spec says) only once authenticated.
        Route(nil, "/api/v1/sessions/{code}/{action}", .authenticated(.caller, methodCheck: .afterAccess, nil) {
            router, call, _ throws(RESTError) in throw router.noSuchResource(call)
        }),

        // The audit trail, paged and live (tag audit).
        Route(.get, "/api/v1/audit", .authenticated(.caller, methodCheck: .first, "listAudit") {
            router, call, principal throws(RESTError) in try router.listAudit(call, as: principal)
        }),
        Route(.get, "/api/v1/sessions/reports", .authenticated(.admin, methodCheck: .afterAccess, "listSessionReports") {
            router, call, principal throws(RESTError) in try router.sessionReportsCSV(call, as: principal)
        }),
        Route(.get, "/api/v1/events", .authenticated(.caller, methodCheck: .first, "streamEvents") {
            router, call, principal throws(RESTError) in try router.streamEvents(call, as: principal)
        }),

        // Accounts and API tokens (tag admin): admins only, authorized before a wrong method is refused.
        Route(.get, "/api/v1/users", .authenticated(.admin, methodCheck: .afterAccess, "listUsers") {
            router, call, _ throws(RESTError) in router.listUsers(call)
        }),
        Route(.post, "/api/v1/users", .authenticated(.admin, methodCheck: .afterAccess, "createUser") {
            router, call, principal throws(RESTError) in try await router.createUser(call, by: principal)
        }),
        Route(.get, "/api/v1/users/{login}", .authenticated(.admin, methodCheck: .afterAccess, "getUser") {
            router, call, _ throws(RESTError) in try router.getUser(call)
        }),
        Route(.put, "/api/v1/users/{login}", .authenticated(.admin, methodCheck: .afterAccess, "updateUser") {
            router, call, principal throws(RESTError) in try await router.updateUser(call, by: principal)
        }),
        Route(.get, "/api/v1/tokens", .authenticated(.admin, methodCheck: .afterAccess, "listTokens") {
            router, call, _ throws(RESTError) in try router.listTokens(call)
        }),
        Route(.post, "/api/v1/tokens", .authenticated(.admin, methodCheck: .afterAccess, "createToken") {
            router, call, principal throws(RESTError) in try await router.createToken(call, by: principal)
        }),
        Route(.delete, "/api/v1/tokens/{id}", .authenticated(.admin, methodCheck: .afterAccess, "revokeToken") {
            router, call, principal throws(RESTError) in try await router.revokeToken(call, by: principal)
        }),
        Route(.get, "/api/v1/webhooks", .authenticated(.admin, methodCheck: .afterAccess, "listWebhooks") {
            router, call, _ throws(RESTError) in try await router.listWebhooks(call)
        }),
        Route(.post, "/api/v1/webhooks", .authenticated(.admin, methodCheck: .afterAccess, "createWebhook") {
            router, call, principal throws(RESTError) in try await router.createWebhook(call, by: principal)
        }),
        Route(.get, "/api/v1/webhooks/{id}", .authenticated(.admin, methodCheck: .afterAccess, "getWebhook") {
            router, call, _ throws(RESTError) in try await router.getWebhook(call)
        }),
        Route(.patch, "/api/v1/webhooks/{id}", .authenticated(.admin, methodCheck: .afterAccess, "updateWebhook") {
            router, call, principal throws(RESTError) in try await router.updateWebhook(call, by: principal)
        }),
        Route(.delete, "/api/v1/webhooks/{id}", .authenticated(.admin, methodCheck: .afterAccess, "deleteWebhook") {
            router, call, principal throws(RESTError) in try await router.deleteWebhook(call, by: principal)
        }),
        Route(.post, "/api/v1/webhooks/{id}/secret", .authenticated(
            .admin, methodCheck: .afterAccess, "rotateWebhookSecret") {
            router, call, principal throws(RESTError) in try await router.rotateWebhookSecret(call, by: principal)
        }),
        Route(.post, "/api/v1/webhooks/{id}/retry", .authenticated(
            .admin, methodCheck: .afterAccess, "retryWebhookDeliveries") {
            router, call, principal throws(RESTError) in try await router.retryWebhookDeliveries(call, by: principal)
        }),
        Route(.get, "/api/v1/webhooks/{id}/deliveries", .authenticated(
            .admin, methodCheck: .afterAccess, "listWebhookDeliveries") {
            router, call, _ throws(RESTError) in try await router.listWebhookDeliveries(call)
        }),
        Route(.post, "/api/v1/webhooks/{id}/deliveries/{delivery}/redeliver", .authenticated(
            .admin, methodCheck: .afterAccess, "redeliverWebhook") {
            router, call, principal throws(RESTError) in try await router.redeliverWebhook(call, by: principal)
        }),
    ])

    /// The 404 of a path below /api/ that is no resource.
    func noSuchResource(_ call: RESTCall) -> RESTError {
        RESTError(.notFound, "no such resource: \(call.request.path)")
    }
}
