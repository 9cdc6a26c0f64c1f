import Foundation
import SupportHTTP
import SupportUtilities
import SupporterModel

/// Session codes: create, list, read, change, delete, and the supporter's actions on them.
extension RESTRouter {
    /// `POST /sessions`.
    func createSession(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        // Unassigned unless `assigned_supporter` says otherwise (an unassigned code becomes a supporter's when they
        // send a request on it).
        let input = try StrictJSON.decode(APISessionCreate.self, from: call.request.body).validated(now: clock.wallTime)
        if let assignee = input.assignedSupporter { try checkAssignment(to: assignee, by: principal) }
        let info: SessionCodeInfo
        do {
            info = try await node.createCode(
                type: input.codeType, details: input.details, lifetime: input.lifetime, validUntil: input.validUntil,
                by: principal.actor)
        } catch {
            throw RESTError(error)
        }
        return .api(
            .created, encoding: APISession(info), headers: ["Location": "/api/v1/sessions/\(info.record.code)"])
    }

    /// An assignment `principal` may make: to itself, or (admins) to any active account.
    func checkAssignment(to assignee: String, by principal: RESTPrincipal) throws(RESTError) {
        guard let account = node.account(assignee), account.isActive else {
            throw RESTError.unprocessable("assigned_supporter: no active account has the login '\(assignee)'")
        }
        guard principal.isAdmin || principal.account?.login == account.login else {
            throw RESTError(.forbidden, "a supporter may assign a code only to themselves")
        }
    }

    /// `GET /sessions?offset=&limit=`: the codes the caller may see.
    func listSessions(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let request = call.request
        guard let offset = Self.integer(request.query("offset"), default: 0), offset >= 0 else {
            throw RESTError(.badRequest, "offset must be a whole number, 0 or more")
        }
        guard let limit = Self.integer(request.query("limit"), default: 50), (1...500).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 500")
        }
        if principal.isAdmin {
            let page = node.codes(offset: offset, limit: limit)
            return .api(
                .ok,
                encoding: APISessionPage(
                    sessions: page.codes.map(APISession.init), total: page.total, offset: offset, limit: limit))
        }
        let visible = node.codes().filter { principal.mayWork(onCodeAssignedTo: $0.record.assignedSupporter) }
        let page = visible.dropFirst(offset).prefix(limit)
        return .api(
            .ok,
            encoding: APISessionPage(
                sessions: page.map(APISession.init), total: visible.count, offset: offset, limit: limit))
    }

    /// A query parameter of decimal digits only, or `fallback` when absent; nil when malformed or too large.
    static func integer(_ text: String?, default fallback: Int) -> Int? {
        guard let text else { return fallback }
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }

    /// The code, when `principal` may work on it: 404 when there is none, 403 when it is another supporter's.
    func visibleCode(_ code: String, for principal: RESTPrincipal) throws(RESTError) -> SessionCodeInfo {
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        guard principal.mayWork(onCodeAssignedTo: info.record.assignedSupporter) else {
            throw RESTError(.forbidden, "session code \(code) is assigned to another supporter")
        }
        return info
    }

    /// `GET /sessions/{code}`.
    func getSession(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        .api(.ok, encoding: APISession(try visibleCode(call["code"], for: principal)))
    }

    /// `PUT /sessions/{code}`: metadata, feature rules, closing.
    func updateSession(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        let current = try visibleCode(code, for: principal)
        let change = try StrictJSON.decode(APISessionUpdate.self, from: call.request.body).validated(now: clock.wallTime)
        if case .set(let assignee) = change.assignedSupporter { try checkAssignment(to: assignee, by: principal) }
        if change.state == .open, current.record.isClosed {
            throw RESTError(.conflict, "a closed session code cannot be reopened")
        }
        let actor = principal.actor
        do {
            if change.changesMetadata {
                try await node.updateCode(code, by: actor) { record in change.apply(to: &record) }
            }
            if let rules = change.featureRules { try await node.setFeatureRules(code, rules, by: actor) }
            if change.state == .closed, !current.record.isClosed { try await node.closeCode(code, by: actor) }
        } catch {
            throw RESTError(error)
        }
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .api(.ok, encoding: APISession(info))
    }

    /// `DELETE /sessions/{code}`.
    func deleteSession(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        do {
            try await node.deleteCode(code, by: principal.actor)
        } catch {
            throw RESTError(error)
        }
        return HTTPResponse(status: .noContent)
    }

    /// `POST /sessions/{code}/connect`: a connection request to the device, sent as the signed-in account.
    func connectSession(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try await act(on: call["code"], by: principal) { code throws(RESTError) in
            // The name the device's user sees is the account's, never free text: an API token has none.
            guard let account = principal.account else {
                throw RESTError(
                    .forbidden, "a connection request is sent as a supporter account: sign in (POST /api/v1/login)")
            }
            let input = try StrictJSON.decode(APIConnect.self, from: call.request.body)
            try await nodeCall { () throws(SupporterNodeError) in
                _ = try await node.requestConnection(
                    code: code, account: account, type: input.connectionType, features: input.features,
                    mediaDescriptor: input.mediaDescriptor, by: principal.actor)
            }
        }
    }

    /// `POST /sessions/{code}/ask`: asks the device for a feature during the session; the answer is audited (and on
    /// the event stream).
    func askFeature(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try await act(on: call["code"], by: principal) { code throws(RESTError) in
            let input = try StrictJSON.decode(APIFeatureAsk.self, from: call.request.body)
            try await nodeCall { () throws(SupporterNodeError) in
                try await node.askFeature(code: code, feature: input.feature, text: input.text, by: principal.actor)
            }
        }
    }

    /// `POST /sessions/{code}/ask/withdraw`: withdraws the pending ask for a feature; the device's answer (refused
    /// `aborted_by_supporter`, or a grant that crossed the withdrawal) is audited and on the event stream.
    func withdrawFeatureAsk(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try await act(on: call["code"], by: principal) { code throws(RESTError) in
            let input = try StrictJSON.decode(APIFeatureWithdraw.self, from: call.request.body)
            try await nodeCall { () throws(SupporterNodeError) in
                try await node.withdrawFeatureAsk(code: code, feature: input.feature, by: principal.actor)
            }
        }
    }

    /// `POST /sessions/{code}/messages`: sends an application message to the device (needs `app_messages` granted);
    /// answers its id.
    func sendApplicationMessage(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        let input = try StrictJSON.decode(APIApplicationMessage.self, from: call.request.body)
        var id: UInt32 = 0
        try await nodeCall { () throws(SupporterNodeError) in
            id = try await node.sendApplicationMessage(
                code: code, contentType: input.contentType, body: input.body, by: principal.actor)
        }
        return try messageSent(id, on: code)
    }

    /// `POST /sessions/{code}/chat`: sends chat text to the device (needs `chat` granted); answers its id.
    func sendChat(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        let input = try StrictJSON.decode(APIChat.self, from: call.request.body)
        var id: UInt32 = 0
        try await nodeCall { () throws(SupporterNodeError) in
            id = try await node.sendChat(code: code, text: input.text, by: principal.actor)
        }
        return try messageSent(id, on: code)
    }

    /// 202 with the message's id (its delivery arrives as a `message_delivered` event naming it) and the code's state.
    private func messageSent(_ id: UInt32, on code: String) throws(RESTError) -> HTTPResponse {
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .api(.accepted, encoding: APIMessageSent(messageID: id, session: APISession(info)))
    }

    /// `POST /sessions/{code}/cancel`: withdraws the pending connection request.
    func cancelRequest(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try await act(on: call["code"], by: principal) { code throws(RESTError) in
            try await nodeCall { () throws(SupporterNodeError) in
                try await node.abortRequest(code: code, by: principal.actor)
            }
        }
    }

    /// `POST /sessions/{code}/end`: ends the code's session.
    func endSession(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try await act(on: call["code"], by: principal) { code throws(RESTError) in
            try await nodeCall { () throws(SupporterNodeError) in
                try await node.endSession(code: code, text: nil, by: principal.actor)
            }
        }
    }

    /// A supporter's action on `code`: 404 or 403 unless the caller may work on it, then `action`; answered 202 with
    /// the code's state once the action is audited and on its way to the device (the device's answer arrives as
    /// events).
    private func act(
        on code: String, by principal: RESTPrincipal, _ action: (String) async throws(RESTError) -> Void
    ) async throws(RESTError) -> HTTPResponse {
        _ = try visibleCode(code, for: principal)
        try await action(code)
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .api(.accepted, encoding: APISession(info))
    }

    /// `body`'s refusal as the API answers it (``RESTError/init(_:)``).
    private func nodeCall(_ body: () async throws(SupporterNodeError) -> Void) async throws(RESTError) {
        do throws(SupporterNodeError) { try await body() } catch { throw RESTError(error) }
    }
}
