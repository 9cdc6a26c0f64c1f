import CLIKit
import Foundation
import SupporterNode

/// The supporter's commands, the same whether they come from the console or from another `rsup-supporter` process
/// through the control socket. Each takes and returns plain JSON-ready values.
struct SupporterCommands: Sendable {
    let node: SupporterNode

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
        switch name {
        case "screen_share", "screen-share": .screenShare
        case "assist_ar", "assist-ar": .assistAR
        case "voip": .voip
        case "remote_control", "remote-control": .remoteControl
        default: nil
        }
    }

    static func describe(_ info: SessionCodeInfo) -> [String: Any] {
        var object: [String: Any] = [
            "code": info.code, "type": info.type == .remoteSupport ? "remote_support" : "assist_ar",
            "state": info.state.rawValue,
        ]
        if let description = info.description { object["description"] = description }
        if let device = info.deviceName { object["device"] = device }
        if let supporter = info.assignedSupporter { object["supporter"] = supporter }
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
                let details = SessionCodeDetails(
                    description: request["description"] as? String, customerName: request["customer"] as? String,
                    customerEmail: request["email"] as? String, waitingMessage: request["waiting-message"] as? String)
                let info = try await node.createCode(type: type, details: details)
                return ["ok": true, "code": Self.describe(info)]
            case "list":
                return ["ok": true, "codes": node.codes().map(Self.describe)]
            case "connect":
                guard let name = request["as"] as? String, !name.isEmpty else {
                    return ["ok": false, "error": "a supporter name is required (--as NAME)"]
                }
                guard let type = Self.connectionType(request["type"] as? String) else {
                    return ["ok": false, "error": "type must be screen or assist"]
                }
                var features = FeatureSet()
                for name in (request["features"] as? String ?? "voip").split(separator: ",") where !name.isEmpty {
                    guard let id = Self.feature(String(name)) else {
                        return ["ok": false, "error": "unknown feature '\(name)' (screen_share, assist_ar, voip, remote_control)"]
                    }
                    features.insert(Feature(id))
                }
                let id = try await node.requestConnection(
                    code: code, supporterName: name, type: type, features: features)
                return ["ok": true, "request_id": Int(id)]
            case "cancel":
                try await node.abortRequest(code: code)
                return ["ok": true]
            case "end":
                try await node.endSession(code: code)
                return ["ok": true]
            case "close":
                try await node.closeCode(code)
                return ["ok": true]
            case "token":
                let scope = APITokenScope(rawValue: request["scope"] as? String ?? "device")
                guard let scope else { return ["ok": false, "error": "scope must be device or admin"] }
                let label = request["label"] as? String
                return ["ok": true, "token": try node.issueAPIToken(scope: scope, label: label), "scope": scope.rawValue]
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
            case "token-revoke":
                guard let id = request["id"] as? String else { return ["ok": false, "error": "--id is required"] }
                try node.revokeAPIToken(id: id)
                return ["ok": true]
            default:
                return ["ok": false, "error": "unknown command '\(command)'"]
            }
        } catch {
            return ["ok": false, "error": error.description]
        }
    }
}
