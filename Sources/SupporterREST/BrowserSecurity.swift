import Foundation
import SupportHTTP
import SupportUtilities

/// What keeps a browser's ambient credentials from being used by other sites, and pages from being framed or
/// injected: the login cookie's attributes, the CSRF check on every state-changing request made with the cookie, and
/// the security headers on every answer.
enum BrowserSecurity {
    /// The login session cookie's name.
    static let cookieName = "rsup_session"
    /// The header a cookie-authenticated client echoes its session's CSRF token in.
    static let csrfHeader = "X-CSRF-Token"

    /// Strict: scripts, styles and images from the node only, no inline script or style, no framing, no plugins.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// The headers every answer carries, the REST API's and the console's, and the HTTP server's own error answers
    /// (``HTTPServerConfiguration/headersOnEveryAnswer``).
    static let headers: HTTPHeaders = [
        "Content-Security-Policy": contentSecurityPolicy,
        "Strict-Transport-Security": "max-age=31536000",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        // API answers and errors are never cached; the console's files say `no-cache` themselves.
        "Cache-Control": "no-store",
    ]

    /// Header fields a request may carry at most once: the ones that authenticate it or that the CSRF and origin checks
    /// read, and the ones that frame or resume it. Taken first-wins, a duplicate would let a proxy in front (which may
    /// read the last) and this node judge different requests. `X-Forwarded-For` is not here: it is a list, every field
    /// of it is read, in order (``ClientAddressResolver``).
    static let singleFields = [
        "Authorization", "Cookie", "Origin", csrfHeader, "Sec-Fetch-Site", "Host", "Content-Length",
        "Transfer-Encoding", "Content-Type", "Last-Event-ID",
    ]

    /// Refuses (400, ``RESTError/Kind/duplicateHeader`` naming the field) a request with two fields of one name of
    /// ``singleFields`` (in any case; their values need not differ).
    static func checkSingleFields(_ request: HTTPRequest) throws(RESTError) {
        for name in singleFields where request.headers.values(for: name).count > 1 {
            throw RESTError.duplicateHeader(name)
        }
    }

    /// `Set-Cookie` for a new login session: HttpOnly (no script reads it), Secure (HTTPS only), SameSite=Strict (no
    /// other site's request carries it), for the whole origin, ending with the browser session.
    static func sessionCookie(_ secret: String) -> String {
        "\(cookieName)=\(secret); Path=/; HttpOnly; Secure; SameSite=Strict"
    }

    /// `Set-Cookie` that removes the session cookie.
    static let clearedCookie = "\(cookieName)=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0"

    /// The cookie that proves an earlier sign-in (``SupporterService/knownSignInProof(login:)``): sent back with
    /// `POST /login` only (its path), it lets that sign-in be checked before strangers' (the reserved lane). It
    /// outlives the browser session and sign-out (30 days), and is no credential: the password is still needed.
    static let knownCookieName = "rsup_known"

    /// `Set-Cookie` for a proof of ``knownCookieName`` that stays valid for `lifetime` seconds.
    static func knownSignInCookie(_ proof: String, lifetime: TimeInterval) -> String {
        "\(knownCookieName)=\(proof); Path=/api/v1/login; Max-Age=\(Int(lifetime)); HttpOnly; "
            + "Secure; SameSite=Strict"
    }

    /// The login session secret in the request's `Cookie` fields, if any.
    static func sessionSecret(_ request: HTTPRequest) -> String? { cookie(cookieName, of: request) }

    /// The value of the cookie `name` in the request's `Cookie` fields, if any and not empty.
    static func cookie(_ name: String, of request: HTTPRequest) -> String? {
        for field in request.headers.values(for: "Cookie") {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                if !value.isEmpty { return value }
            }
        }
        return nil
    }

    /// Refuses (403) a request another site's page could have made: its `Origin` (when sent) must be the node's own
    /// (`https://` + `Host`), and `Sec-Fetch-Site` (when sent) `same-origin` or `none`. Browsers send `Origin` on every
    /// POST, PUT and DELETE, so a cross-site form or fetch is caught here even before the CSRF token.
    static func checkSameOrigin(_ request: HTTPRequest) throws(RESTError) {
        if let site = request.headers["Sec-Fetch-Site"], site != "same-origin", site != "none" {
            throw RESTError(.forbidden, "cross-site request refused (Sec-Fetch-Site: \(site))")
        }
        guard let origin = request.headers["Origin"] else { return }
        guard let host = request.headers["Host"], origin == "https://\(host)" else {
            throw RESTError(.forbidden, "cross-origin request refused: Origin \(origin) is not this node")
        }
    }

    /// Refuses (403) a state-changing request with the login cookie whose `X-CSRF-Token` is not the session's.
    static func checkCSRF(_ request: HTTPRequest, expected: String) throws(RESTError) {
        guard ConstantTime.equal(request.headers[csrfHeader] ?? "", expected) else {
            throw RESTError(.forbidden, "missing or wrong \(csrfHeader): send the csrf_token of your sign-in")
        }
    }
}
