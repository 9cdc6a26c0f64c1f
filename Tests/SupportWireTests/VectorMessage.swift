import Foundation
@testable import SupportWire
import TestSupport
import SupportVocabulary

/// Builds a ``Message`` from the JSON form used in `protocol/vectors/` (see its README).
enum VectorMessage {
    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    static func message(from object: [String: Any]) throws -> Message {
        var fields = Fields(object: object)
        let type = try fields.string("type", maxLength: .max)
        let message: Message
        switch type {
        case "HELLO":
            message = .hello(
                Hello(
                    minVersion: try fields.integer("min_version"), maxVersion: try fields.integer("max_version"),
                    role: try fields.enumeration("role"), nodeName: try fields.string("node_name"),
                    features: try fields.features("features"), keepaliveMilliseconds: try fields.integer("keepalive_ms"),
                    maxFrameSize: try fields.integer("max_frame_size")))
        case "HELLO_ACK":
            message = .helloAck(
                HelloAck(
                    version: try fields.integer("version"), role: try fields.enumeration("role"),
                    nodeName: try fields.string("node_name"), features: try fields.features("features"),
                    keepaliveMilliseconds: try fields.integer("keepalive_ms"),
                    maxFrameSize: try fields.integer("max_frame_size"),
                    resumeGraceMilliseconds: try fields.optionalInteger("resume_grace_ms")))
        case "PING": message = .ping(Ping(nonce: try fields.unsigned64("nonce")))
        case "PONG": message = .pong(Pong(nonce: try fields.unsigned64("nonce")))
        case "GOAWAY":
            message = .goAway(
                GoAway(
                    reason: try fields.reason("reason"), text: fields.optionalString("text"),
                    resumeElsewhere: try fields.optionalFlag("resume_elsewhere")))
        case "REGISTER":
            message = .register(
                Register(
                    sessionCode: try fields.string("session_code"), apiToken: try fields.string("api_token"),
                    capabilities: try fields.features("capabilities")))
        case "REGISTER_RESULT":
            message = .registerResult(
                RegisterResult(
                    reason: try fields.reason("reason"), text: fields.optionalString("text"),
                    retryAfterMilliseconds: try fields.optionalInteger("retry_after_ms"),
                    codeType: try fields.optionalEnumeration("code_type"),
                    resumeSecret: fields.optionalString("resume_secret")))
        case "CONNECTION_REQUEST":
            message = .connectionRequest(
                ConnectionRequest(
                    requestID: try fields.integer("request_id"), supporterName: try fields.string("supporter_name"),
                    connectionType: try fields.enumeration("connection_type"),
                    requestedFeatures: try fields.features("requested_features"),
                    confirmFeatures: try fields.optionalFeatures("confirm_features")))
        case "CONNECTION_RESPONSE":
            message = .connectionResponse(
                ConnectionResponse(
                    requestID: try fields.integer("request_id"), decision: try fields.enumeration("decision"),
                    reason: try fields.reason("reason"),
                    grantedFeatures: try fields.optionalFeatures("granted_features")))
        case "REQUEST_ABORT":
            message = .requestAbort(
                RequestAbort(requestID: try fields.integer("request_id"), reason: try fields.reason("reason")))
        case "SESSION_STARTED":
            message = .sessionStarted(
                SessionStarted(
                    requestID: try fields.integer("request_id"),
                    grantedFeatures: try fields.optionalFeatures("granted_features"),
                    mediaDescriptor: try fields.optionalBytes("media_descriptor"),
                    resumeSecret: fields.optionalString("resume_secret")))
        case "SESSION_END":
            message = .sessionEnd(SessionEnd(reason: try fields.reason("reason"), text: fields.optionalString("text")))
        case "SESSION_ERROR":
            message = .sessionError(
                SessionError(
                    reason: try fields.reason("reason"),
                    feature: try fields.optionalInteger("feature").map { Feature.ID(rawValue: $0) },
                    text: fields.optionalString("text")))
        case "VOIP_STATE":
            message = .voipState(VoIPState(state: try fields.enumeration("state"), text: fields.optionalString("text")))
        case "FEATURE_REQUEST":
            message = .featureRequest(
                FeatureRequest(
                    askID: try fields.integer("ask_id"), feature: Feature.ID(rawValue: try fields.integer("feature")),
                    confirm: try fields.optionalFlag("confirm"), text: fields.optionalString("text")))
        case "FEATURE_ANSWER":
            message = .featureAnswer(
                FeatureAnswer(
                    askID: try fields.integer("ask_id"), decision: try fields.enumeration("decision"),
                    reason: try fields.reason("reason")))
        case "FEATURE_REVOKE":
            message = .featureRevoke(
                FeatureRevoke(
                    feature: Feature.ID(rawValue: try fields.integer("feature")), text: fields.optionalString("text")))
        case "SESSION_MESSAGE":
            message = .sessionMessage(
                SessionMessage(
                    messageID: try fields.integer("message_id"), kind: try fields.enumeration("kind"),
                    contentType: fields.optionalString("content_type"), body: try fields.bytes("body"),
                    transferID: try fields.optionalInteger("transfer_id"), fileName: fields.optionalString("file_name"),
                    fileSize: try fields.optionalUnsigned64("file_size"),
                    offset: try fields.optionalUnsigned64("offset")))
        case "MESSAGE_ACK":
            message = .messageAck(
                MessageAck(
                    messageID: try fields.integer("message_id"), reason: try fields.reason("reason"),
                    text: fields.optionalString("text")))
        case "RESUME":
            message = .resume(
                Resume(
                    sessionCode: try fields.string("session_code"), resumeSecret: try fields.string("resume_secret"),
                    state: try fields.enumeration("state"), requestID: try fields.optionalInteger("request_id"),
                    lastMessageID: try fields.optionalInteger("last_message_id"),
                    grantedFeatures: try fields.optionalFeatures("granted_features")))
        case "RESUME_RESULT":
            message = .resumeResult(
                ResumeResult(
                    reason: try fields.reason("reason"), text: fields.optionalString("text"),
                    resumeSecret: fields.optionalString("resume_secret"),
                    lastMessageID: try fields.optionalInteger("last_message_id"),
                    retryAfterMilliseconds: try fields.optionalInteger("retry_after_ms")))
        case "FEATURE_WITHDRAW":
            message = .featureWithdraw(FeatureWithdraw(askID: try fields.integer("ask_id")))
        default: throw FormatError(description: "unknown message type \(type)")
        }
        guard fields.unused.isEmpty else { throw FormatError(description: "unused keys \(fields.unused) in \(type)") }
        return message
    }

    /// Reads keys out of a JSON object and remembers which ones were never read.
    private struct Fields {
        let object: [String: Any]
        var unused: Set<String>

        init(object: [String: Any]) {
            self.object = object
            self.unused = Set(object.keys)
        }

        mutating func take(_ key: String) -> Any? {
            unused.remove(key)
            return object[key]
        }

        mutating func string(_ key: String, maxLength: Int = 0) throws -> String {
            guard let value = take(key) as? String else { throw FormatError(description: "\(key) missing") }
            return value
        }

        mutating func optionalString(_ key: String) -> String? { take(key) as? String }

        mutating func optionalInteger<Value: FixedWidthInteger>(_ key: String) throws -> Value? {
            guard let raw = take(key) else { return nil }
            guard let number = raw as? NSNumber, let value = Value(exactly: number.int64Value) else {
                throw FormatError(description: "\(key) is not a \(Value.self)")
            }
            return value
        }

        mutating func integer<Value: FixedWidthInteger>(_ key: String) throws -> Value {
            guard let value: Value = try optionalInteger(key) else { throw FormatError(description: "\(key) missing") }
            return value
        }

        mutating func optionalUnsigned64(_ key: String) throws -> UInt64? {
            guard let raw = take(key) else { return nil }
            guard let text = raw as? String, let value = UInt64(text) else {
                throw FormatError(description: "\(key) is not a decimal u64 string")
            }
            return value
        }

        mutating func unsigned64(_ key: String) throws -> UInt64 {
            guard let value = try optionalUnsigned64(key) else { throw FormatError(description: "\(key) missing") }
            return value
        }

        /// A `u8` whose only value is 1 (FEATURE_REQUEST `confirm`): present means true.
        mutating func optionalFlag(_ key: String) throws -> Bool {
            guard let raw: UInt8 = try optionalInteger(key) else { return false }
            guard raw == 1 else { throw FormatError(description: "\(key) = \(raw), only 1 is defined") }
            return true
        }

        /// A `bytes` value: lowercase hex, two digits per byte, at least one byte.
        mutating func optionalBytes(_ key: String) throws -> [UInt8]? {
            guard let raw = take(key) else { return nil }
            guard let text = raw as? String, !text.isEmpty, text.count.isMultiple(of: 2),
                text.allSatisfy({ $0.isHexDigit && !$0.isUppercase })
            else { throw FormatError(description: "\(key) is not lowercase hex") }
            return [UInt8](hex: text)
        }

        mutating func bytes(_ key: String) throws -> [UInt8] {
            guard let value = try optionalBytes(key) else { throw FormatError(description: "\(key) missing") }
            return value
        }

        mutating func reason(_ key: String) throws -> ReasonCode { ReasonCode(rawValue: try integer(key)) }

        mutating func optionalEnumeration<Value: RawRepresentable>(_ key: String) throws -> Value?
        where Value.RawValue == UInt8 {
            guard let raw: UInt8 = try optionalInteger(key) else { return nil }
            guard let value = Value(rawValue: raw) else { throw FormatError(description: "\(key) = \(raw)") }
            return value
        }

        mutating func enumeration<Value: RawRepresentable>(_ key: String) throws -> Value where Value.RawValue == UInt8 {
            guard let value: Value = try optionalEnumeration(key) else { throw FormatError(description: "\(key) missing") }
            return value
        }

        mutating func optionalFeatures(_ key: String) throws -> FeatureSet? {
            guard object[key] != nil else {
                unused.remove(key)
                return nil
            }
            return try features(key)
        }

        mutating func features(_ key: String) throws -> FeatureSet {
            guard let pairs = take(key) as? [[NSNumber]] else { throw FormatError(description: "\(key) missing") }
            var result: [Feature] = []
            for pair in pairs {
                guard pair.count == 2, let id = UInt16(exactly: pair[0].int64Value),
                    let version = UInt16(exactly: pair[1].int64Value)
                else { throw FormatError(description: "bad feature pair in \(key)") }
                result.append(Feature(Feature.ID(rawValue: id), version: version))
            }
            return FeatureSet(result)
        }
    }
}
