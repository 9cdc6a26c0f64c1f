import Foundation
import SupportHTTP
import SupporterModel

/// API tokens (admins only: the route table checks it).
extension RESTRouter {
    /// `GET /tokens`: every token's record, never its secret.
    func listTokens(_ call: RESTCall) throws(RESTError) -> HTTPResponse {
        do {
            return .api(.ok, encoding: APITokenList(tokens: try node.apiTokens().map { APIToken(record: $0) }))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `POST /tokens`: the new token, shown this once.
    func createToken(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APITokenCreate.self, from: call.request.body)
        let token = input.scope.makeToken()
        do {
            let record = try await node.run { [node] () throws(SupporterNodeError) -> APITokenRecord in
                try node.addAPIToken(token, scope: input.scope, label: input.label, by: principal.actor)
            }
            return .api(.created, encoding: APIToken(record: record, token: token))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `DELETE /tokens/{id}`.
    func revokeToken(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let id = call["id"]
        do {
            try await node.run { [node] () throws(SupporterNodeError) in
                try node.revokeAPIToken(id: id, by: principal.actor)
            }
        } catch {
            throw RESTError(any: error)
        }
        return HTTPResponse(status: .noContent)
    }
}
