import Foundation
import SupportHTTP
import SupporterModel

/// Supporter accounts (admins only: the route table checks it).
extension RESTRouter {
    /// `GET /users`.
    func listUsers(_ call: RESTCall) -> HTTPResponse {
        .api(.ok, encoding: APIAccountList(users: node.accounts().map(APIAccount.init)))
    }

    /// `POST /users`.
    func createUser(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APIAccountCreate.self, from: call.request.body)
        let account: SupporterAccount
        do {
            account = try await node.addAccount(
                login: input.login, displayName: input.displayName, role: input.role, password: input.password,
                by: principal.actor)
        } catch {
            throw RESTError(any: error)
        }
        return .api(.created, encoding: APIAccount(account), headers: ["Location": "/api/v1/users/\(account.login)"])
    }

    /// `GET /users/{login}`.
    func getUser(_ call: RESTCall) throws(RESTError) -> HTTPResponse {
        let login = call["login"]
        guard let account = node.account(login) else { throw RESTError(.notFound, "no account '\(login)'") }
        return .api(.ok, encoding: APIAccount(account))
    }

    /// `PUT /users/{login}`: name, role, password, disabling.
    func updateUser(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APIAccountUpdate.self, from: call.request.body)
        do {
            let account = try await node.changeAccount(call["login"], input.change, by: principal.actor)
            return .api(.ok, encoding: APIAccount(account))
        } catch {
            throw RESTError(any: error)
        }
    }
}
