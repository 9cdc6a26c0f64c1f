import Foundation
import SupportHTTP
import SupporterNode
import SupporterCore
import SupportWire
import SupportUtilities

/// Sign-in and sign-out, accounts and API tokens (admins), the audit trail and the event stream.
extension RESTRouter {
    /// How long a refused sign-in's 429 is held before it is written.
    static let refusedSignInDelay: Duration = .seconds(1)

    func signIn(_ request: HTTPRequest) async throws(RESTError) -> HTTPResponse {
        // Login CSRF: another site must not sign a browser in to an account of its choosing.
        try BrowserSecurity.checkSameOrigin(request)
        let input = try StrictJSON.decode(APILogin.self, from: request.body)
        let address = clientAddress(request)
        do throws(SignInError) {
            let (secret, session, account) = try await node.signIn(
                login: input.login, password: input.password, address: address,
                knownSignIn: BrowserSecurity.cookie(BrowserSecurity.knownCookieName, of: request))
            // The proof's cookie first, the session's last (a client that keeps one `Set-Cookie` keeps the session).
            var headers = HTTPHeaders()
            if let proof = node.knownSignInProof(login: account.login) {
                headers.add(name: "Set-Cookie", value: BrowserSecurity.knownSignInCookie(proof))
            }
            headers.add(name: "Set-Cookie", value: BrowserSecurity.sessionCookie(secret))
            return .api(
                .ok, encoding: APISignedIn(account: APIAccount(account), csrfToken: session.csrfToken), headers: headers)
        } catch {
            switch error.kind {
            case .wrongCredentials: throw RESTError(.unauthorized, error.description)
            case .disabled: throw RESTError(.forbidden, error.description)
            case .rateLimited(let wait):
                // Held for up to a second (half the block at most, so a client that waits for its answer still
                // finds the block it was told of): a client that hammers gets about one answer a second per
                // connection, and the flood's 429s cost the node next to nothing (issue 20, finding 10).
                var refusal = RESTError(.tooManyRequests, error.description, retryAfter: wait)
                refusal.delay = min(wait / 2, Self.refusedSignInDelay)
                throw refusal
            case .busy: throw RESTError(.unavailable, error.description, retryAfter: .seconds(1))
            }
        }
    }

    func signOut(_ request: HTTPRequest) async throws(RESTError) -> HTTPResponse {
        let (principal, secret) = try await authenticate(request)
        if let secret {
            do throws(SupporterNodeError) {
                try await node.signOut(secret: secret, address: clientAddress(request))
            } catch {
                // Not recorded, so not in effect: the session stays valid, and the caller hears it (503).
                throw RESTError(.unavailable, "the sign-out could not be recorded; try again", retryAfter: .seconds(1))
            }
        }
        _ = principal
        return HTTPResponse(status: .noContent, headers: ["Set-Cookie": BrowserSecurity.clearedCookie])
    }

    /// `GET /audit?code=&kind=&before_id=&limit=`: newest first, only what the caller may see.
    func audit(_ request: HTTPRequest, as principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        guard let limit = Self.integer(request.query("limit"), default: 100), (1...1000).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 1000")
        }
        var before: Int64?
        if let text = request.query("before_id") {
            guard let value = Self.integer(text, default: 0) else {
                throw RESTError(.badRequest, "before_id must be a whole number")
            }
            before = Int64(value)
        }
        let code = request.query("code")
        if let code { _ = try visibleCode(code, for: principal) }
        let kind = request.query("kind")
        if code == nil, !principal.isAdmin {
            throw RESTError(.forbidden, "a supporter reads the audit trail of one code at a time (code=…)")
        }
        var events: [AuditEvent] = []
        var cursor = before
        var reachedEnd = false
        // Filtering by kind happens here: read pages until `limit` match or the trail ends (bounded to 20 pages).
        for _ in 0..<20 {
            let page: [AuditEvent]
            do {
                page = try node.auditEvents(code: code, limit: limit, beforeID: cursor, newestFirst: true)
            } catch {
                throw RESTError(error)
            }
            events += page.filter { kind == nil || $0.kind.rawValue == kind }
            cursor = page.last?.id ?? cursor
            if page.count < limit {
                reachedEnd = true
                break
            }
            if events.count >= limit { break }
        }
        events = Array(events.prefix(limit))
        // A full page goes on after its last row; a page cut short by the 20-page bound goes on where reading stopped
        // (so a client is never told the trail ended when it did not).
        let next = events.count == limit ? events.last?.id : (reachedEnd ? nil : cursor)
        return .api(.ok, encoding: APIAuditPage(events: events.map(APIAuditEvent.init), nextBeforeID: next))
    }

    /// `GET /events`: Server-Sent Events (``EventFeed``), resuming after `Last-Event-ID` when sent.
    func events(_ request: HTTPRequest, as principal: RESTPrincipal, sessionSecret: String?) throws(RESTError)
        -> HTTPResponse
    {
        var lastEventID: Int64?
        if let text = request.headers["Last-Event-ID"] ?? request.query("last_event_id") {
            guard let value = Self.integer(text.trimmingCharacters(in: .whitespaces), default: 0) else {
                throw RESTError(.badRequest, "Last-Event-ID must be an event id (a whole number)")
            }
            lastEventID = Int64(value)
        }
        let credential: EventFeed.Credential
        if let sessionSecret {
            credential = .session(sessionSecret)
        } else if let token = AuthenticationGuard.bearerToken(request.headers["Authorization"]) {
            credential = .token(token)
        } else {
            throw RESTError(.unauthorized, "missing bearer token: send 'Authorization: Bearer <admin token>'")
        }
        let stream = try feed.subscribe(principal, credential: credential, lastEventID: lastEventID)
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store"], stream: stream)
    }

    func users(_ request: HTTPRequest, _ login: String?, as principal: RESTPrincipal) async throws(RESTError)
        -> HTTPResponse
    {
        do {
            guard let login else {
                switch request.method {
                case .get: return .api(.ok, encoding: APIAccountList(users: node.accounts().map(APIAccount.init)))
                case .post:
                    let input = try StrictJSON.decode(APIAccountCreate.self, from: request.body)
                    let account = try await node.addAccount(
                        login: input.login, displayName: input.displayName, role: input.role, password: input.password,
                        by: principal.actor)
                    return .api(
                        .created, encoding: APIAccount(account), headers: ["Location": "/api/v1/users/\(account.login)"])
                default:
                    throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, POST")
                }
            }
            switch request.method {
            case .get:
                guard let account = node.account(login) else { throw RESTError(.notFound, "no account '\(login)'") }
                return .api(.ok, encoding: APIAccount(account))
            case .put:
                let input = try StrictJSON.decode(APIAccountUpdate.self, from: request.body)
                return .api(.ok, encoding: APIAccount(try await node.changeAccount(login, input.change, by: principal.actor)))
            default:
                throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, PUT")
            }
        } catch {
            throw RESTError(any: error)
        }
    }

    func tokens(_ request: HTTPRequest, _ id: String?, as principal: RESTPrincipal) async throws(RESTError)
        -> HTTPResponse
    {
        do {
            guard let id else {
                switch request.method {
                case .get:
                    return .api(.ok, encoding: APITokenList(tokens: try node.apiTokens().map { APIToken(record: $0) }))
                case .post:
                    let input = try StrictJSON.decode(APITokenCreate.self, from: request.body)
                    let token = APITokenStore.makeToken(scope: input.scope)
                    let record = try await node.run { [node] () throws(SupporterNodeError) -> APITokenRecord in
                        try node.addAPIToken(token, scope: input.scope, label: input.label, by: principal.actor)
                    }
                    return .api(.created, encoding: APIToken(record: record, token: token))
                default:
                    throw RESTError(.methodNotAllowed, "\(request.method) is not allowed here", allowedMethods: "GET, POST")
                }
            }
            try allow(request, .delete)
            try await node.run { [node] () throws(SupporterNodeError) in
                try node.revokeAPIToken(id: id, by: principal.actor)
            }
            return HTTPResponse(status: .noContent)
        } catch {
            throw RESTError(any: error)
        }
    }
}
