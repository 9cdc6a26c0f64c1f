import Foundation
import SupportHTTP
import SupportSession

/// A request the API refuses, with the response that says why.
struct APIRefusal: Error {
    let response: HTTPResponse
    init(_ response: HTTPResponse) { self.response = response }
}

/// The REST API's JSON: sessions out, creations and changes in, validated as protocol/openapi.yaml says.
enum SessionJSON {
    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    static func parseTime(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// A session as the API shows it.
    static func session(_ info: SessionCodeInfo) -> [String: Any] {
        let record = info.record
        func text(_ value: String?) -> Any { value ?? NSNull() }
        return [
            "code": record.code, "type": record.type.name, "description": text(record.description),
            "customer_name": text(record.customerName), "customer_email": text(record.customerEmail),
            "waiting_message": text(record.waitingMessage), "state": record.isClosed ? "closed" : "open",
            "live_state": info.state.rawValue, "online": info.online, "created_at": time(record.createdAt),
            "valid_until": time(record.validUntil), "closed_at": record.closedAt.map(time) ?? NSNull(),
            "assigned_supporter": text(record.assignedSupporter), "device_name": text(info.deviceName),
        ]
    }

    static func response(for error: SupporterNodeError) -> HTTPResponse {
        switch error.kind {
        case .notFound: .error(.notFound, message: error.description)
        case .conflict: .error(.conflict, message: error.description)
        case .invalid: .error(.unprocessableContent, message: error.description)
        default: .error(.internalServerError, message: error.description)
        }
    }

    /// The body as a JSON object, or the 400 to send.
    static func object(_ body: [UInt8]) -> Result<[String: Any], APIRefusal> {
        guard !body.isEmpty else { return .failure(APIRefusal(.error(.badRequest, message: "the body must be a JSON object"))) }
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(body)) else {
            return .failure(APIRefusal(.error(.badRequest, message: "the body is not valid JSON")))
        }
        guard let object = parsed as? [String: Any] else {
            return .failure(APIRefusal(.error(.badRequest, message: "the body must be a JSON object")))
        }
        return .success(object)
    }

    private static func unprocessable(_ message: String) -> APIRefusal {
        APIRefusal(.error(.unprocessableContent, message: message))
    }

    /// A text member: absent (nil), null (`.some(nil)`, when allowed), or a string within its length.
    private static func text(
        _ object: [String: Any], _ key: String, min: Int = 1, max: Int, nullable: Bool
    ) -> Result<String??, APIRefusal> {
        guard let value = object[key] else { return .success(nil) }
        if value is NSNull {
            return nullable ? .success(.some(nil)) : .failure(unprocessable("\(key) cannot be null"))
        }
        guard let string = value as? String else { return .failure(unprocessable("\(key) must be a string")) }
        // Lengths count Unicode code points, as JSON Schema's minLength/maxLength do (not grapheme clusters).
        guard (min...max).contains(string.unicodeScalars.count) else {
            return .failure(unprocessable("\(key) must have \(min) to \(max) characters"))
        }
        return .success(.some(string))
    }

    private static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix("."), !text.contains(where: \.isWhitespace)
        else { return false }
        return true
    }

    private static func refuseUnknown(_ object: [String: Any], allowed: Set<String>) -> APIRefusal? {
        let unknown = Set(object.keys).subtracting(allowed).sorted()
        guard let first = unknown.first else { return nil }
        return unprocessable("unknown member '\(first)'")
    }

    struct Creation {
        var type: SessionCodeType
        var details: SessionCodeDetails
        var lifetime: Duration?
        var validUntil: Date?
    }

    static func creation(_ object: [String: Any]) -> Result<Creation, APIRefusal> {
        let allowed: Set<String> = [
            "type", "description", "customer_name", "customer_email", "waiting_message", "valid_for_seconds",
            "valid_until",
        ]
        if let refusal = refuseUnknown(object, allowed: allowed) { return .failure(refusal) }
        var creation = Creation(type: .remoteSupport, details: SessionCodeDetails())
        if let type = object["type"] {
            switch type as? String {
            case "remote_support": creation.type = .remoteSupport
            case "assist_ar": creation.type = .assistAR
            default: return .failure(unprocessable("type must be remote_support or assist_ar"))
            }
        }
        do {
            creation.details.description = try text(object, "description", max: 256, nullable: false).get() ?? nil
            creation.details.customerName = try text(object, "customer_name", max: 128, nullable: false).get() ?? nil
            creation.details.customerEmail =
                try text(object, "customer_email", min: 3, max: 254, nullable: false).get() ?? nil
            creation.details.waitingMessage =
                try text(object, "waiting_message", max: 256, nullable: false).get() ?? nil
        } catch {
            return .failure(error)
        }
        if let email = creation.details.customerEmail, !isEmail(email) {
            return .failure(unprocessable("customer_email is not an email address"))
        }
        if object["valid_for_seconds"] != nil, object["valid_until"] != nil {
            return .failure(unprocessable("give valid_for_seconds or valid_until, not both"))
        }
        if let seconds = object["valid_for_seconds"] {
            // JSON true/false arrive as NSNumber too; Foundation marks them with the objCType "c".
            guard let number = seconds as? NSNumber, String(cString: number.objCType) != "c",
                let value = Int(exactly: number.doubleValue), (60...31_536_000).contains(value)
            else { return .failure(unprocessable("valid_for_seconds must be a whole number from 60 to 31536000")) }
            creation.lifetime = .seconds(value)
        }
        if let until = object["valid_until"] {
            guard let text = until as? String, let date = parseTime(text) else {
                return .failure(unprocessable("valid_until must be an RFC 3339 time"))
            }
            guard date > Date() else { return .failure(unprocessable("valid_until must be in the future")) }
            creation.validUntil = date
        }
        return .success(creation)
    }

    struct Change: Sendable {
        var description: String??
        var customerName: String??
        var customerEmail: String??
        var waitingMessage: String??
        var assignedSupporter: String??
        var validUntil: Date?
        var close = false
        var reopen = false

        var hasMetadata: Bool {
            description != nil || customerName != nil || customerEmail != nil || waitingMessage != nil
                || assignedSupporter != nil || validUntil != nil
        }

        func apply(to record: inout SessionCodeRecord) {
            if let description { record.description = description }
            if let customerName { record.customerName = customerName }
            if let customerEmail { record.customerEmail = customerEmail }
            if let waitingMessage { record.waitingMessage = waitingMessage }
            if let assignedSupporter { record.assignedSupporter = assignedSupporter }
            if let validUntil { record.validUntil = validUntil }
        }
    }

    static func change(_ object: [String: Any]) -> Result<Change, APIRefusal> {
        let allowed: Set<String> = [
            "description", "customer_name", "customer_email", "waiting_message", "valid_until", "assigned_supporter",
            "state",
        ]
        if let refusal = refuseUnknown(object, allowed: allowed) { return .failure(refusal) }
        guard !object.isEmpty else { return .failure(unprocessable("nothing to change")) }
        var change = Change()
        do {
            change.description = try text(object, "description", max: 256, nullable: true).get()
            change.customerName = try text(object, "customer_name", max: 128, nullable: true).get()
            change.customerEmail = try text(object, "customer_email", min: 3, max: 254, nullable: true).get()
            change.waitingMessage = try text(object, "waiting_message", max: 256, nullable: true).get()
            change.assignedSupporter = try text(object, "assigned_supporter", max: 64, nullable: true).get()
        } catch {
            return .failure(error)
        }
        if case .some(.some(let email)) = change.customerEmail, !isEmail(email) {
            return .failure(unprocessable("customer_email is not an email address"))
        }
        if let until = object["valid_until"] {
            guard let text = until as? String, let date = parseTime(text) else {
                return .failure(unprocessable("valid_until must be an RFC 3339 time"))
            }
            guard date > Date() else { return .failure(unprocessable("valid_until must be in the future")) }
            change.validUntil = date
        }
        if let state = object["state"] {
            switch state as? String {
            case "closed": change.close = true
            case "open": change.reopen = true
            default: return .failure(unprocessable("state must be open or closed"))
            }
        }
        return .success(change)
    }
}
