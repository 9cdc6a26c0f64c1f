import Foundation
import SupportHTTP
import SupporterModel

/// Webhook endpoints and their delivery logs (admins only: the route table checks it). Every store call runs on the
/// node's worker (``SupporterService/run(_:)``), never on the server's loop.
extension RESTRouter {
    /// `GET /webhooks`: every endpoint, never a secret.
    func listWebhooks(_ call: RESTCall) async throws(RESTError) -> HTTPResponse {
        do {
            let endpoints = try await node.run { [node] () throws(SupporterNodeError) in try node.webhookEndpoints() }
            return .api(.ok, encoding: APIWebhookList(webhooks: endpoints.map { APIWebhook(endpoint: $0) }))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `POST /webhooks`: the new endpoint with its secret, shown this once.
    func createWebhook(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APIWebhookCreate.self, from: call.request.body)
        do {
            let endpoint = try await node.run { [node] () throws(SupporterNodeError) in
                try node.addWebhookEndpoint(
                    url: input.url, eventKinds: input.eventKinds, description: input.description,
                    isEnabled: input.enabled, by: principal.actor)
            }
            return .api(.created, encoding: APIWebhook(endpoint: endpoint, showsSecret: true))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `GET /webhooks/{id}`.
    func getWebhook(_ call: RESTCall) async throws(RESTError) -> HTTPResponse {
        .api(.ok, encoding: APIWebhook(endpoint: try await webhook(call["id"])))
    }

    /// `PATCH /webhooks/{id}`.
    func updateWebhook(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let input = try StrictJSON.decode(APIWebhookUpdate.self, from: call.request.body)
        let id = call["id"]
        do {
            let endpoint = try await node.run { [node] () throws(SupporterNodeError) in
                try node.changeWebhookEndpoint(id: id, input.change, by: principal.actor)
            }
            return .api(.ok, encoding: APIWebhook(endpoint: endpoint))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `POST /webhooks/{id}/secret`: a new secret, shown this once; the old one keeps signing for 24 hours.
    func rotateWebhookSecret(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try Self.refuseBody(call, "rotating a secret takes no body")
        let id = call["id"]
        do {
            let endpoint = try await node.run { [node] () throws(SupporterNodeError) in
                try node.changeWebhookEndpoint(id: id, WebhookEndpointChange(rotateSecret: true), by: principal.actor)
            }
            return .api(.ok, encoding: APIWebhook(endpoint: endpoint, showsSecret: true))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `DELETE /webhooks/{id}`.
    func deleteWebhook(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let id = call["id"]
        do {
            try await node.run { [node] () throws(SupporterNodeError) in
                try node.deleteWebhookEndpoint(id: id, by: principal.actor)
            }
        } catch {
            throw RESTError(any: error)
        }
        return HTTPResponse(status: .noContent)
    }

    /// `GET /webhooks/{id}/deliveries?before_id=&state=&limit=`: the delivery log, newest first.
    func listWebhookDeliveries(_ call: RESTCall) async throws(RESTError) -> HTTPResponse {
        let request = call.request
        guard let limit = Self.integer(request.query("limit"), default: 50), (1...500).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 500")
        }
        var before: Int64?
        if let text = request.query("before_id") {
            guard let value = Self.integer(text, default: 0) else {
                throw RESTError(.badRequest, "before_id must be a whole number")
            }
            before = Int64(value)
        }
        var state: WebhookDelivery.State?
        if let text = request.query("state") {
            guard let value = WebhookDelivery.State(rawValue: text) else {
                throw RESTError(.badRequest, "state must be pending, delivered or failed")
            }
            state = value
        }
        let id = call["id"]
        _ = try await webhook(id)
        do {
            let deliveries = try await node.run { [node, before, state] () throws(SupporterNodeError) in
                try node.webhookDeliveries(endpointID: id, beforeID: before, state: state, limit: limit)
            }
            return .api(
                .ok,
                encoding: APIWebhookDeliveryPage(
                    deliveries: deliveries.map(APIWebhookDelivery.init),
                    nextBeforeID: deliveries.count == limit ? deliveries.last?.id : nil))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `POST /webhooks/{id}/deliveries/{delivery}/redeliver`: the event again, as a new delivery (202).
    func redeliverWebhook(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        guard let deliveryID = Int64(call["delivery"]), deliveryID > 0 else {
            throw RESTError(.notFound, "no delivery '\(call["delivery"])': a delivery's id is a whole number")
        }
        let id = call["id"]
        do {
            let made = try await node.run { [node] () throws(SupporterNodeError) in
                try node.redeliverWebhook(endpointID: id, deliveryID: deliveryID, by: principal.actor)
            }
            return .api(.accepted, encoding: APIWebhookDelivery(delivery: made))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// `POST /webhooks/{id}/retry`: the endpoint's pending deliveries due now (its receiver is back); 202 with how many.
    func retryWebhookDeliveries(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        try Self.refuseBody(call, "a retry takes no body")
        let id = call["id"]
        do {
            let retried = try await node.run { [node] () throws(SupporterNodeError) in
                try node.retryWebhookDeliveries(endpointID: id, by: principal.actor)
            }
            return .api(.accepted, encoding: APIWebhookRetry(retried: retried))
        } catch {
            throw RESTError(any: error)
        }
    }

    /// 422 with `why` unless the body is empty or `{}` (an action that takes no input).
    private static func refuseBody(_ call: RESTCall, _ why: String) throws(RESTError) {
        guard call.request.body.isEmpty || call.request.body == Array("{}".utf8) else {
            throw RESTError.unprocessable(why)
        }
    }

    /// Endpoint `id`, or 404.
    private func webhook(_ id: String) async throws(RESTError) -> WebhookEndpoint {
        let endpoints: [WebhookEndpoint]
        do {
            endpoints = try await node.run { [node] () throws(SupporterNodeError) in try node.webhookEndpoints() }
        } catch {
            throw RESTError(any: error)
        }
        guard let endpoint = endpoints.first(where: { $0.id == id }) else {
            throw RESTError(.notFound, "no webhook endpoint has the id \(id)")
        }
        return endpoint
    }
}
