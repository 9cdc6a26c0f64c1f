import SupportHTTP

/// One declarative list of routes — methods, a ``RoutePattern`` and a handler each — and a pure matcher over it
/// (no I/O, no state: a request's method and path segments in, a ``Match`` out).
///
/// The routes of a path are those of the most specific pattern that matches it (``RoutePattern/isMoreSpecific(than:)``):
/// a method one of them takes finds that route; another method finds ``Match/methodNotAllowed(allowed:routes:parameters:)``
/// with the methods of exactly that pattern, in table order (the `Allow` header). Less specific patterns are not
/// consulted for the method: `GET /api/v1/sessions/C/end` is a 405, never the fallback `/api/v1/sessions/{code}/{action}`.
struct RouteTable<Handler: Sendable>: Sendable {
    struct Route: Sendable {
        /// The methods this route takes, in the order `Allow` lists them; nil for every method (the fallbacks).
        let methods: [HTTPMethod]?
        let pattern: RoutePattern
        let handler: Handler

        init(_ methods: [HTTPMethod]?, _ pattern: RoutePattern, _ handler: Handler) {
            precondition(methods.map { !$0.isEmpty } ?? true, "route \(pattern): an empty method list")
            self.methods = methods
            self.pattern = pattern
            self.handler = handler
        }

        init(_ method: HTTPMethod, _ pattern: RoutePattern, _ handler: Handler) {
            self.init([method], pattern, handler)
        }

        func takes(_ method: HTTPMethod) -> Bool { methods?.contains(method) ?? true }
    }

    enum Match {
        /// The route, and the path's parameters by name.
        case found(Route, parameters: [String: String])
        /// A path the table knows, by a method none of its routes takes: `allowed` is the methods of the path in table
        /// order, `routes` the path's routes (table order).
        case methodNotAllowed(allowed: [HTTPMethod], routes: [Route], parameters: [String: String])
        /// No pattern matches the path.
        case notFound
    }

    let routes: [Route]

    /// Traps when two routes of one pattern share a method (the second could never be reached).
    init(_ routes: [Route]) {
        for (index, route) in routes.enumerated() {
            for earlier in routes[..<index] where earlier.pattern == route.pattern {
                let shared = (route.methods ?? []).filter { earlier.takes($0) }
                precondition(
                    earlier.methods != nil && route.methods != nil && shared.isEmpty,
                    "route table: \(route.pattern) is routed twice for \(shared.isEmpty ? "every method" : "\(shared)")")
            }
        }
        self.routes = routes
    }

    /// The route for `method` on `path` (decoded segments).
    func match(_ method: HTTPMethod, _ path: [String]) -> Match {
        var best: RoutePattern?
        var parameters: [String: String] = [:]
        for route in routes where route.pattern != best {
            guard let found = route.pattern.match(path) else { continue }
            if let current = best, !route.pattern.isMoreSpecific(than: current) { continue }
            best = route.pattern
            parameters = found
        }
        guard let best else { return .notFound }
        let candidates = routes.filter { $0.pattern == best }
        if let route = candidates.first(where: { $0.takes(method) }) {
            return .found(route, parameters: parameters)
        }
        var allowed: [HTTPMethod] = []
        for method in candidates.flatMap({ $0.methods ?? [] }) where !allowed.contains(method) {
            allowed.append(method)
        }
        return .methodNotAllowed(allowed: allowed, routes: candidates, parameters: parameters)
    }
}
