import SupportHTTP

/// What a handler of the route table gets besides the caller: the request and the path's parameters by name.
struct RESTCall: Sendable {
    let request: HTTPRequest
    /// The `{name}` segments of the route's pattern (``RoutePattern``), percent-decoded.
    let parameters: [String: String]
    /// The login session's secret when the caller was authenticated by its cookie (for event streams and sign-out);
    /// nil for an API token and on routes open to anyone.
    let sessionSecret: String?

    /// The parameter `name` of the route's pattern; traps when the pattern has none of that name (a table error,
    /// caught by the tests that walk every route).
    subscript(_ name: String) -> String {
        guard let value = parameters[name] else { preconditionFailure("the route has no parameter {\(name)}") }
        return value
    }
}
