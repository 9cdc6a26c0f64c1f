import Foundation
import SupportHTTP
import SupporterModel

/// Signing in and out, and who is signed in.
extension RESTRouter {
    /// How long a refused sign-in's 429 is held before it is written.
    static let refusedSignInDelay: Duration = .seconds(1)

    /// `POST /login`: a login session (its cookie, with the known-sign-in proof's before it) and the CSRF token.
    func signIn(_ call: RESTCall) async throws(RESTError) -> HTTPResponse {
        let request = call.request
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
                headers.add(name: "Set-Cookie", value: BrowserSecurity.knownSignInCookie(proof, lifetime: type(of: node).knownSignInLifetime))
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

    /// `POST /logout`: ends the login session of the cookie (an API token has none: nothing to end), and clears the
    /// cookie.
    func signOut(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        if let secret = call.sessionSecret {
            do throws(SupporterNodeError) {
                try await node.signOut(secret: secret, address: clientAddress(call.request))
            } catch {
                // Not recorded, so not in effect: the session stays valid, and the caller hears it (503).
                throw RESTError(.unavailable, "the sign-out could not be recorded; try again", retryAfter: .seconds(1))
            }
        }
        return HTTPResponse(status: .noContent, headers: ["Set-Cookie": BrowserSecurity.clearedCookie])
    }

    /// `GET /me`: the signed-in account and its session's CSRF token; 404 for an API token.
    func signedInAccount(_ call: RESTCall, of principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        guard case .account(let account, let session, _) = principal else {
            throw RESTError(.notFound, "an API token has no account; /me is for signed-in supporters")
        }
        return .api(.ok, encoding: APISignedIn(account: APIAccount(account), csrfToken: session.csrfToken))
    }
}
