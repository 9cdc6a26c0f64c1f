import CLIKit
import Foundation
import SupporterNode
import SupporterREST
import SupportSession
import SupportUtilities
import SupportWire
import SupporterCore
import SupportRuntime
import SupportVocabulary
import SupporterModel

/// The supporter's commands, the same whether they come from the console or from another `rsup-supporter` process
/// through the control socket. Each takes and returns plain JSON-ready values.
struct SupporterCommands: Sendable {
    let node: SupporterNode
    /// Asks `serve` to stop as SIGTERM does (the `drain` command); answered before the stop begins.
    var stop: @Sendable () -> Void = {}

    static func codeType(_ text: String?) -> SessionCodeType? {
        switch text ?? "remote" {
        case "remote", "remote-support", "remote_support": .remoteSupport
        case "assist", "assist-ar", "assist_ar": .assistAR
        default: nil
        }
    }

    static func connectionType(_ text: String?) -> ConnectionType? {
        switch text ?? "screen" {
        case "screen", "screen-share", "screen_share": .screenShare
        case "assist", "assist-ar", "assist_ar": .assistAR
        default: nil
        }
    }

    static func feature(_ name: String) -> Feature.ID? {
        Feature.ID(name: name.replacingOccurrences(of: "-", with: "_"))
    }

    /// One `NAME=RULE` of `--feature-rule` or of `rules`: a feature name (SPEC §4.3, §15.2; `-` may stand for `_`)
    /// and `allow`, `confirm` or `deny`, or, where `allowDefault`, `default` (nil: the feature follows the default
    /// rule again).
    static func ruleAssignment(_ text: String, allowDefault: Bool) throws(CLIError) -> (Feature.ID, AccessRule?) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .usage(
                "'\(TerminalText.escaped(text))' is not NAME=RULE, e.g. chat=deny (features: "
                    + "\(FeatureRuleNames.featureList); rules: \(FeatureRuleNames.ruleList)"
                    + (allowDefault ? ", or default to follow the default rule)" : ")"))
        }
        let name = parts[0].replacingOccurrences(of: "-", with: "_")
        do throws(FeatureRuleNameError) {
            let feature = try FeatureRuleNames.feature(named: name)
            if allowDefault, parts[1] == "default" { return (feature, nil) }
            return (feature, try FeatureRuleNames.rule(named: String(parts[1])))
        } catch {
            throw .usage("in '\(TerminalText.escaped(text))': \(error)" + (allowDefault && error.kind == .unknownRule ? " (or default)" : ""))
        }
    }

    /// `allow`, `confirm` or `deny` as given to `--default-rule`.
    static func defaultRule(_ text: String) throws(CLIError) -> AccessRule {
        do throws(FeatureRuleNameError) { return try FeatureRuleNames.rule(named: text) } catch {
            throw .usage("--default-rule: \(error)")
        }
    }

    /// The rules of `--feature-rule` and `--default-rule` at creation, from the code default (allow everything).
    static func featureRules(_ assignments: [String], default text: String?) throws(CLIError) -> FeatureRules {
        var rules = FeatureRules.codeDefault
        if let text { rules.defaultRule = try defaultRule(text) }
        for assignment in assignments {
            let (feature, rule) = try ruleAssignment(assignment, allowDefault: false)
            if let rule { rules.set(rule, for: feature) }
        }
        return rules
    }

    /// The rules as JSON, as the REST API writes them.
    static func describe(_ rules: FeatureRules) -> [String: Any] {
        var named: [String: String] = [:]
        for (feature, rule) in rules.rules { named[FeatureRuleNames.name(of: feature)] = rule.description }
        return ["default": rules.defaultRule.description, "rules": named]
    }

    static func describe(_ info: SessionCodeInfo) -> [String: Any] {
        var object: [String: Any] = [
            "code": info.code, "type": info.type == .remoteSupport ? "remote_support" : "assist_ar",
            "state": info.state.rawValue,
        ]
        if let description = info.description { object["description"] = description }
        if let device = info.deviceName { object["device"] = device }
        if let supporter = info.assignedSupporter { object["supporter"] = supporter }
        if let node = info.node { object["node"] = node }  // the device is on another node of the cluster
        if info.reconnecting { object["reconnecting"] = true }
        object["feature_rules"] = describe(info.featureRules)
        return object
    }

    static func describe(_ account: SupporterAccount) -> [String: Any] {
        [
            "login": account.login, "display_name": account.displayName, "role": account.role.rawValue,
            "state": account.state.rawValue,
        ]
    }

    static func describe(_ endpoint: WebhookEndpoint, secret: Bool) -> [String: Any] {
        var object: [String: Any] = [
            "id": endpoint.id, "url": endpoint.url, "events": endpoint.eventKinds, "enabled": endpoint.isEnabled,
            "pending": endpoint.pendingCount, "failed": endpoint.failedCount,
        ]
        if let description = endpoint.description { object["description"] = description }
        if secret { object["secret"] = endpoint.secret }
        return object
    }

    static func describe(_ delivery: WebhookDelivery) -> [String: Any] {
        let formatter = ISO8601DateFormatter()
        var object: [String: Any] = [
            "id": Int(delivery.id), "event_id": Int(delivery.eventID), "event_kind": delivery.eventKind,
            "state": delivery.state.rawValue, "attempts": delivery.attempts,
            "created_at": formatter.string(from: delivery.createdAt),
        ]
        if let code = delivery.code { object["code"] = code }
        if let status = delivery.lastStatus { object["last_status"] = status }
        if let error = delivery.lastError { object["last_error"] = error }
        if let next = delivery.nextAttemptAt { object["next_attempt_at"] = formatter.string(from: next) }
        if let of = delivery.redeliveryOf { object["redelivery_of"] = Int(of) }
        return object
    }

    /// Runs one command; the reply has `ok` and either the result or `error`.
    func run(_ request: [String: Any]) async -> [String: Any] {
        let command = request["command"] as? String ?? ""
        let code = request["code"] as? String ?? ""
        do {
            switch command {
            case "create":
                guard let type = Self.codeType(request["type"] as? String) else {
                    return ["ok": false, "error": "type must be remote or assist"]
                }
                let rules = try Self.featureRules(
                    request["feature-rule"] as? [String] ?? [], default: request["default-rule"] as? String)
                let assignee = request["assign"] as? String
                if let assignee, node.account(assignee)?.isActive != true {
                    return ["ok": false, "error": "--assign: no active supporter account '\(assignee)'"]
                }
                let details = SessionCodeDetails(
                    description: request["description"] as? String, customerName: request["customer"] as? String,
                    customerEmail: request["email"] as? String, waitingMessage: request["waiting-message"] as? String,
                    featureRules: rules, assignedSupporter: assignee)
                let info = try await node.createCode(type: type, details: details)
                return ["ok": true, "code": Self.describe(info)]
            case "list":
                return ["ok": true, "codes": node.codes().map(Self.describe)]
            case "rules":
                let assignments = try (request["set"] as? [String] ?? []).map { (text) throws(CLIError) in
                    try Self.ruleAssignment(text, allowDefault: true)
                }
                let newDefault = try (request["default-rule"] as? String).map(Self.defaultRule)
                let reset = request["reset"] as? Bool ?? false
                let info: SessionCodeInfo
                if assignments.isEmpty, newDefault == nil, !reset {
                    guard let found = node.code(code) else { return ["ok": false, "error": "no such code \(code)"] }
                    info = found
                } else {
                    info = try await node.changeFeatureRules(code) { rules in
                        if reset { rules = .codeDefault }
                        if let newDefault { rules.defaultRule = newDefault }
                        for (feature, rule) in assignments { rules.rules[feature] = rule }
                    }
                }
                return ["ok": true, "code": info.code, "feature_rules": Self.describe(info.featureRules)]
            case "connect":
                guard let login = request["as"] as? String, !login.isEmpty else {
                    return ["ok": false, "error": "a supporter account is required (--as LOGIN)"]
                }
                // The device's user sees the account's display name, never free text.
                guard let account = node.account(login), account.isActive else {
                    return [
                        "ok": false,
                        "error": "no active supporter account '\(login)'; add one with 'rsup-supporter user add \(login) "
                            + "--display-name NAME --password-file FILE'",
                    ]
                }
                guard let type = Self.connectionType(request["type"] as? String) else {
                    return ["ok": false, "error": "type must be screen or assist"]
                }
                var features = FeatureSet()
                for name in (request["features"] as? String ?? "voip").split(separator: ",") where !name.isEmpty {
                    guard let id = Self.feature(String(name)) else {
                        return [
                            "ok": false,
                            "error": "unknown feature '\(name)' (\(Feature.ID.defined.compactMap(\.name).joined(separator: ", ")))",
                        ]
                    }
                    features.insert(Feature(id))
                }
                var media: [UInt8]?
                if let path = request["media-file"] as? String {
                    // Read by the node, as `send` reads its file: the control socket is its owner's only.
                    guard let data = FileManager.default.contents(atPath: path), (1...4_096).contains(data.count) else {
                        return ["ok": false, "error": "--media-file must be a readable file of 1 to 4096 bytes"]
                    }
                    media = [UInt8](data)
                }
                let id = try await node.requestConnection(
                    code: code, account: account, type: type, features: features, mediaDescriptor: media,
                    by: account.actor(kind: "local"))
                return ["ok": true, "request_id": Int(id)]
            case "cancel":
                try await node.abortRequest(code: code)
                return ["ok": true]
            case "say":
                guard let text = request["text"] as? String, !text.isEmpty else {
                    return ["ok": false, "error": "say needs a text"]
                }
                try await node.sendChat(code: code, text: text)
                return ["ok": true]
            case "send":
                guard let path = request["file"] as? String, let data = FileManager.default.contents(atPath: path) else {
                    return ["ok": false, "error": "send needs a readable file"]
                }
                let name = URL(fileURLWithPath: path).lastPathComponent
                let id = try await node.sendFile(code: code, name: name, bytes: [UInt8](data))
                return ["ok": true, "transfer_id": Int(id), "bytes": data.count]
            case "ask":
                guard let name = request["feature"] as? String, let feature = Self.feature(name) else {
                    return ["ok": false, "error": "ask needs a feature name"]
                }
                try await node.askFeature(code: code, feature: feature, text: request["text"] as? String)
                return ["ok": true]
            case "end":
                try await node.endSession(code: code)
                return ["ok": true]
            case "close":
                try await node.closeCode(code)
                return ["ok": true]
            case "drain":
                // Sessions that can resume are handed over either way: to the other nodes, or to this node's next start.
                let to = node.clusterNodeID != nil ? "other_nodes" : "next_start"
                stop()
                return ["ok": true, "hands_over": true, "to": to]
            case "token":
                let scope = APITokenScope(rawValue: request["scope"] as? String ?? "device")
                guard let scope else { return ["ok": false, "error": "scope must be device or admin"] }
                let label = request["label"] as? String
                let token = try node.issueAPIToken(scope: scope, label: label)
                var reply: [String: Any] = ["ok": true, "token": token, "scope": scope.rawValue]
                if let id = node.tokenRecord(of: token)?.id { reply["id"] = id }
                return reply
            case "token-list":
                let formatter = ISO8601DateFormatter()
                let tokens: [[String: Any]] = try node.apiTokens().map { record in
                    var entry: [String: Any] = [
                        "id": record.id, "scope": record.scope.rawValue,
                        "created_at": formatter.string(from: record.createdAt),
                    ]
                    if let label = record.label { entry["label"] = label }
                    if let revoked = record.revokedAt { entry["revoked_at"] = formatter.string(from: revoked) }
                    return entry
                }
                return ["ok": true, "tokens": tokens]
            case "user-add":
                let account = try await node.addAccount(
                    login: request["login"] as? String ?? "", displayName: request["display-name"] as? String ?? "",
                    role: SupporterRole(rawValue: request["role"] as? String ?? "") ?? .supporter,
                    password: request["password"] as? String ?? "")
                return ["ok": true, "user": Self.describe(account)]
            case "user-list":
                return ["ok": true, "users": node.accounts().map(Self.describe)]
            case "user-change":
                let change = SupporterAccountChange(
                    displayName: request["display-name"] as? String,
                    role: (request["role"] as? String).flatMap(SupporterRole.init(rawValue:)),
                    state: (request["state"] as? String).flatMap(SupporterAccountState.init(rawValue:)),
                    password: request["password"] as? String)
                let account = try await node.changeAccount(request["login"] as? String ?? "", change)
                return ["ok": true, "user": Self.describe(account)]
            case "webhook-add":
                let endpoint = try node.addWebhookEndpoint(
                    url: request["url"] as? String ?? "", eventKinds: request["events"] as? [String] ?? [],
                    description: request["description"] as? String, isEnabled: true, by: .local)
                return ["ok": true, "webhooks": [Self.describe(endpoint, secret: true)]]
            case "webhook-list":
                return ["ok": true, "webhooks": try node.webhookEndpoints().map { Self.describe($0, secret: false) }]
            case "webhook-change":
                var change = WebhookEndpointChange()
                change.url = request["url"] as? String
                change.eventKinds = request["events"] as? [String]
                change.isEnabled = request["enabled"] as? Bool
                if let description = request["description"] as? String {
                    change.description = .some(description.isEmpty ? nil : description)
                }
                change.rotateSecret = request["rotate"] as? Bool ?? false
                let endpoint = try node.changeWebhookEndpoint(id: request["id"] as? String ?? "", change, by: .local)
                return ["ok": true, "webhooks": [Self.describe(endpoint, secret: change.rotateSecret)]]
            case "webhook-remove":
                try node.deleteWebhookEndpoint(id: request["id"] as? String ?? "", by: .local)
                return ["ok": true, "webhooks": [[String: Any]]()]
            case "webhook-deliveries":
                let state = (request["state"] as? String).flatMap(WebhookDelivery.State.init(rawValue:))
                let deliveries = try node.webhookDeliveries(
                    endpointID: request["id"] as? String ?? "", beforeID: nil, state: state,
                    limit: request["limit"] as? Int ?? 20)
                return ["ok": true, "deliveries": deliveries.map(Self.describe)]
            case "webhook-retry":
                let retried = try node.retryWebhookDeliveries(endpointID: request["id"] as? String ?? "", by: .local)
                return ["ok": true, "retried": retried]
            case "webhook-redeliver":
                let made = try node.redeliverWebhook(
                    endpointID: request["id"] as? String ?? "", deliveryID: Int64(request["delivery"] as? Int ?? 0),
                    by: .local)
                return ["ok": true, "deliveries": [Self.describe(made)]]
            case "token-revoke":
                guard let id = request["id"] as? String else { return ["ok": false, "error": "--id is required"] }
                try node.revokeAPIToken(id: id)
                return ["ok": true]
            default:
                return ["ok": false, "error": "unknown command '\(command)'"]
            }
        } catch let error as CLIError {
            return ["ok": false, "error": error.description]
        } catch {
            return ["ok": false, "error": "\(error)"]
        }
    }
}
