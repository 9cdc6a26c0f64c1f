import Testing
import SupportHTTP
@testable import SupporterREST

/// The route table's matcher alone: patterns, parameters, which pattern wins, 404 and 405 with `Allow`.
@Suite struct RouteTableTests {
    static func segments(_ path: String) -> [String] { path.split(separator: "/").map(String.init) }

    static let table = RouteTable<String>([
        .init([.get, .head], "/", "root"),
        .init(.get, "/{file}", "file"),
        .init(.get, "/items", "list"),
        .init(.post, "/items", "create"),
        .init(.get, "/items/{id}", "get"),
        .init(.put, "/items/{id}", "put"),
        .init(.delete, "/items/{id}", "delete"),
        .init(.post, "/items/{id}/close", "close"),
        .init(nil, "/items/{id}/{action}", "other action"),
        .init(nil, "/items/**", "below items"),
    ])

    func found(_ method: HTTPMethod, _ path: String) -> (String, [String: String])? {
        guard case .found(let route, let parameters) = Self.table.match(method, Self.segments(path)) else { return nil }
        return (route.handler, parameters)
    }

    @Test func patternsReadBackAsWritten() {
        for text in ["/", "/items", "/items/{id}", "/items/{id}/close", "/items/**", "/**"] {
            #expect(RoutePattern(text).description == text)
        }
        #expect(RoutePattern("/a/{b}/{c}").parameterNames == ["b", "c"])
    }

    @Test func aParameterTakesOneWholeSegmentByName() throws {
        let (handler, parameters) = try #require(found(.get, "/items/a b%2F"))
        #expect(handler == "get")
        #expect(parameters == ["id": "a b%2F"])
        #expect(found(.get, "/items/x")?.1 == ["id": "x"])
    }

    @Test func aLiteralWinsOverAParameterWhichWinsOverTheRest() {
        #expect(found(.post, "/items/7/close")?.0 == "close")
        #expect(found(.get, "/items/7/open")?.0 == "other action")
        #expect(found(.get, "/items/7/open")?.1 == ["id": "7", "action": "open"])
        #expect(found(.get, "/items/7/open/now")?.0 == "below items")
        #expect(found(.get, "/items")?.0 == "list")
        #expect(found(.get, "/")?.0 == "root")
        #expect(found(.get, "/other")?.0 == "file")
    }

    @Test func restMatchesZeroOrMoreSegments() {
        #expect(RoutePattern("/api/**").match(["api"]) == [:])
        #expect(RoutePattern("/api/**").match(["api", "v1", "x"]) == [:])
        #expect(RoutePattern("/api/**").match(["apix"]) == nil)
        #expect(RoutePattern("/").match([]) == [:])
        #expect(RoutePattern("/").match(["a"]) == nil)
        #expect(RoutePattern("/a/{b}").match(["a"]) == nil)
        #expect(RoutePattern("/a/{b}").match(["a", "b", "c"]) == nil)
    }

    @Test func aPathNoPatternMatchesIsNotFound() {
        guard case .notFound = Self.table.match(.get, ["x", "y"]) else {
            Issue.record("expected notFound")
            return
        }
    }

    @Test(arguments: [
        ("/items", "PATCH", ["GET", "POST"]),
        ("/items/7", "POST", ["GET", "PUT", "DELETE"]),
        ("/items/7/close", "GET", ["POST"]),
        ("/", "POST", ["GET", "HEAD"]),
        ("/x", "HEAD", ["GET"]),
    ])
    func aWrongMethodListsExactlyThatPathsMethodsInTableOrder(path: String, method: String, allowed: [String]) {
        guard case .methodNotAllowed(let methods, let routes, _) = Self.table.match(
            HTTPMethod(rawValue: method), Self.segments(path))
        else {
            Issue.record("\(method) \(path): expected 405")
            return
        }
        #expect(methods.map(\.rawValue) == allowed)
        // Only the winning pattern's routes: the fallbacks below it are not asked.
        #expect(Set(routes.map(\.pattern)).count == 1)
    }

    @Test func methodsAreCaseSensitive() {
        guard case .methodNotAllowed = Self.table.match(HTTPMethod(rawValue: "get"), ["items"]) else {
            Issue.record("lowercase get is another method")
            return
        }
    }
}
