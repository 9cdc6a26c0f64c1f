import SupportHTTP

/// The web console's files: `GET /` and `GET /<file>` (and HEAD).
extension RESTRouter {
    /// The file of ``ConsoleFiles`` for the request's path, or 404.
    func consoleFile(_ call: RESTCall) throws(RESTError) -> HTTPResponse {
        guard let response = console.response(for: call.request.path) else {
            throw RESTError(.notFound, "no such page: \(call.request.path)")
        }
        return response
    }
}
