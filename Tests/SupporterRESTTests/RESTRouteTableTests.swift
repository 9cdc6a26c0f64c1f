import Foundation
import Testing
import SupportHTTP
@testable import SupporterREST

/// The REST API's route table itself: its invariants, protocol/openapi.yaml both ways, and the 401/403/405 of every
/// route derived from the table (so a route added to it is tested without a new case).
/// Serialized, as ``RouterEndpointTests``: a node per case.
@Suite(.serialized) struct RESTRouteTableTests {
    typealias Route = RESTRouter.Route

    /// The patterns of the table, once each, in table order.
    static let patterns: [RoutePattern] = RESTRouter.routes.routes.reduce(into: []) { patterns, route in
        if !patterns.contains(route.pattern) { patterns.append(route.pattern) }
    }

    static func routes(of pattern: RoutePattern) -> [Route] {
        RESTRouter.routes.routes.filter { $0.pattern == pattern }
    }

    @Test func theRoutesOfOnePathAgreeOnAccessAndMethodCheck() {
        for pattern in Self.patterns {
            let routes = Self.routes(of: pattern)
            #expect(Set(routes.map(\.handler.access)).count == 1, "\(pattern)")
            #expect(Set(routes.map(\.handler.methodCheck)).count == 1, "\(pattern)")
        }
    }

    /// As protocol/openapi.yaml's description says: below /sessions, /users, /tokens and /webhooks a wrong method is
    /// refused only once the caller is authenticated (and for /users, /tokens and /webhooks authorized); elsewhere
    /// first.
    @Test func wrongMethodsAreRefusedAfterAuthenticationOnlyBelowSessionsUsersTokensAndWebhooks() {
        for route in RESTRouter.routes.routes {
            let text = route.pattern.description
            let late = ["/api/v1/sessions", "/api/v1/users", "/api/v1/tokens", "/api/v1/webhooks"].contains {
                text.hasPrefix($0)
            }
            #expect(route.handler.methodCheck == (late ? .afterAccess : .first), "\(text)")
            if ["/api/v1/users", "/api/v1/tokens", "/api/v1/webhooks"].contains(where: { text.hasPrefix($0) }) {
                #expect(route.handler.access == .admin, "\(text)")
            }
        }
    }

    // MARK: protocol/openapi.yaml

    struct Operation: Hashable, CustomStringConvertible {
        var method: String
        var path: String
        var id: String
        var access: RESTEndpoint.Access
        var description: String { "\(method) \(path) \(id) (\(access))" }
    }

    /// The operations of protocol/openapi.yaml: method, full path (the API's under /api/v1, the console's at the
    /// root), operationId, and who may call it (`security: []` anyone, tag `admin` admins, else any caller).
    static func specOperations() throws -> [Operation] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("protocol/openapi.yaml"), encoding: .utf8)
        var operations: [Operation] = []
        var inPaths = false
        var template = ""
        var base = "/api/v1"
        let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if let first = line.first, first != " " { break }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                template = String(line.dropFirst(2).dropLast())
                base = "/api/v1"
            } else if line == "    servers:" {
                base = ""
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"),
                methods.contains(String(line.dropFirst(4).dropLast()))
            {
                let path = base.isEmpty ? template : base + template
                operations.append(
                    Operation(method: line.dropFirst(4).dropLast().uppercased(), path: path, id: "", access: .caller))
            } else if line.hasPrefix("      operationId: "), !operations.isEmpty {
                operations[operations.count - 1].id = String(line.dropFirst("      operationId: ".count))
            } else if line == "      security: []", !operations.isEmpty {
                operations[operations.count - 1].access = .anyone
            } else if line.hasPrefix("      tags: ["), line.contains("admin"), !operations.isEmpty {
                operations[operations.count - 1].access = .admin
            }
        }
        return operations
    }

    /// The table's documented routes as operations; HEAD beside GET is implicit (the console's files; the spec says
    /// "GET and HEAD" in prose).
    static func tableOperations() -> [Operation] {
        RESTRouter.routes.routes.flatMap { route -> [Operation] in
            guard let id = route.handler.operationID else { return [] }
            let methods = route.methods ?? []
            return methods.filter { $0 != .head || !methods.contains(.get) }.map { method in
                Operation(method: method.rawValue, path: route.pattern.description, id: id, access: route.handler.access)
            }
        }
    }

    @Test func theTableAndOpenAPIHaveTheSameOperationsBothWays() throws {
        let spec = try Self.specOperations()
        #expect(spec.count >= 20, "the spec's paths were read: \(spec)")
        #expect(spec.allSatisfy { !$0.id.isEmpty }, "\(spec)")
        let table = Self.tableOperations()
        #expect(Set(table).count == table.count, "an operation routed twice: \(table)")
        for operation in Set(spec).subtracting(table).sorted(by: { $0.description < $1.description }) {
            Issue.record("in openapi.yaml, not in the route table: \(operation)")
        }
        for operation in Set(table).subtracting(spec).sorted(by: { $0.description < $1.description }) {
            Issue.record("in the route table, not in openapi.yaml: \(operation)")
        }
    }

    @Test func theUndocumentedRoutesAreTheFallbacksTheSpecDescribesInProse() {
        let fallbacks = RESTRouter.routes.routes.filter { $0.handler.operationID == nil }.map(\.pattern.description)
        #expect(fallbacks == ["/**", "/api/**", "/api/v1/sessions/{code}/{action}"])
    }

    // MARK: derived from the table

    /// A path the pattern matches, with the scene's values (`{code}`, `{login}`, `{id}`; `**` as two segments).
    static func concrete(_ pattern: RoutePattern) -> String {
        let text = pattern.description.replacingOccurrences(of: "**", with: "a/b")
            .replacingOccurrences(of: "{action}", with: "other").replacingOccurrences(of: "{file}", with: "index.html")
        return text
    }

    @Test(arguments: patterns.map(\.description))
    func aWrongMethodIs405WithExactlyThePathsMethods(pattern: String) async throws {
        let routes = Self.routes(of: RoutePattern(pattern))
        guard routes.allSatisfy({ $0.methods != nil }) else { return }  // the fallbacks take every method
        let allowed = routes.flatMap { $0.methods ?? [] }
        let scene = try await RouterScene()
        defer { scene.stop() }
        let path = Self.concrete(RoutePattern(pattern))
        let endpoint = routes[0].handler
        for method in [HTTPMethod.patch, .options, HTTPMethod(rawValue: "PROPFIND")] where !allowed.contains(method) {
            let early = try await scene.send(method, path, as: .nobody)
            if endpoint.methodCheck == .first {
                #expect(early.status == .methodNotAllowed, "\(method) \(path): \(early.text)")
                #expect(early.headers["Allow"] == allowed.map(\.rawValue).joined(separator: ", "))
            } else {
                #expect(early.status == .unauthorized, "\(method) \(path): \(early.text)")
                #expect(early.headers["Allow"] == nil)
            }
            if endpoint.access == .admin {
                let supporter = try await scene.send(method, path, as: .bob)
                #expect(supporter.status == .forbidden, "\(method) \(path): \(supporter.text)")
            }
            let admin = try await scene.send(method, path, as: .admin)
            #expect(admin.status == .methodNotAllowed, "\(method) \(path): \(admin.text)")
            #expect(admin.headers["Allow"] == allowed.map(\.rawValue).joined(separator: ", "))
            #expect(admin.errorMessage == "\(method) is not allowed here")
        }
    }

    @Test(arguments: patterns.map(\.description))
    func everyAuthenticatedRouteRefusesNoCredentialsADeviceTokenAndForAdminsASupporter(pattern: String)
        async throws
    {
        let routes = Self.routes(of: RoutePattern(pattern)).filter { $0.handler.access != .anyone }
        guard !routes.isEmpty else { return }
        let scene = try await RouterScene()
        defer { scene.stop() }
        let path = Self.concrete(RoutePattern(pattern))
        let codes = scene.fixture.node.codes().count
        for route in routes {
            for method in route.methods ?? [.get, .post] {
                let nobody = try await scene.send(method, path, as: .nobody, body: "{}")
                #expect(nobody.status == .unauthorized, "\(method) \(path): \(nobody.text)")
                #expect(nobody.headers["WWW-Authenticate"] == #"Bearer realm="rsup""#)
                let device = try await scene.send(method, path, as: .device, body: "{}")
                #expect(device.status == .forbidden, "\(method) \(path): \(device.text)")
                if route.handler.access == .admin {
                    let supporter = try await scene.send(method, path, as: .alice, body: "{}")
                    #expect(supporter.status == .forbidden, "\(method) \(path): \(supporter.text)")
                    #expect(supporter.errorMessage == "only an admin may do this")
                }
            }
        }
        #expect(scene.fixture.node.codes().count == codes, "a refused request changed nothing")
    }
}
