import Foundation
import SupportHTTP

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

    /// `Set-Cookie` for a new login session: HttpOnly (no script reads it), Secure (HTTPS only), SameSite=Strict (no
    /// other site's request carries it), for the whole origin, ending with the browser session.
    static func sessionCookie(_ secret: String) -> String {
        "\(cookieName)=\(secret); Path=/; HttpOnly; Secure; SameSite=Strict"
    }

    /// `Set-Cookie` that removes the session cookie.
    static let clearedCookie = "\(cookieName)=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0"

    /// The login session secret in the request's `Cookie` fields, if any.
    static func sessionSecret(_ request: HTTPRequest) -> String? {
        for field in request.headers.values(for: "Cookie") {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName else { continue }
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
        let given = Array((request.headers[csrfHeader] ?? "").utf8)
        let wanted = Array(expected.utf8)
        var difference = given.count == wanted.count ? 0 : 1
        for (a, b) in zip(given, wanted) { difference |= Int(a ^ b) }
        guard difference == 0 else {
            throw RESTError(.forbidden, "missing or wrong \(csrfHeader): send the csrf_token of your sign-in")
        }
    }
}
