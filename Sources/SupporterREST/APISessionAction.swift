import Foundation
import SupportUtilities
import SupportVocabulary
import SupporterModel

/// `ConnectRequest`: the body of `POST /sessions/{code}/connect`.
struct APIConnect: Decodable {
    let connectionType: ConnectionType
    let features: FeatureSet
    /// What SESSION_STARTED hands the app (SPEC §15): 1–4,096 bytes, sent as standard Base64; never logged.
    let mediaDescriptor: [UInt8]?

    static let featureNames: Set<String> = Set(Feature.ID.defined.compactMap(\.name))

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["connection_type", "features", "media_descriptor"])
        mediaDescriptor = try object.mediaDescriptor("media_descriptor", nullable: false).value
        switch try object.string("connection_type", max: 32, required: false) ?? "screen_share" {
        case "screen_share": connectionType = .screenShare
        case "assist_ar": connectionType = .assistAR
        default: throw RESTError.unprocessable("connection_type must be screen_share or assist_ar")
        }
        var features = FeatureSet()
        for name in try object.names("features", from: Self.featureNames) ?? ["voip"] {
            if let id = Feature.ID(name: name) { features.insert(Feature(id)) }
        }
        self.features = features
    }
}

/// `FeatureAsk`: the body of `POST /sessions/{code}/ask`.
struct APIFeatureAsk: Decodable {
    let feature: Feature.ID
    /// Shown to the device's user with the ask.
    let text: String?

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["feature", "text"])
        let name = try object.string("feature", max: 32, required: true) ?? ""
        guard APIConnect.featureNames.contains(name), let id = Feature.ID(name: name) else {
            throw RESTError.unprocessable(
                "feature: unknown value '\(name)' (one of \(APIConnect.featureNames.sorted().joined(separator: ", ")))")
        }
        feature = id
        text = try object.string("text", max: 256, required: false)
        if let text, text.utf8.count > 256 { throw RESTError.unprocessable("text has at most 256 bytes of UTF-8") }
    }
}

/// `FeatureWithdraw`: the body of `POST /sessions/{code}/ask/withdraw`.
struct APIFeatureWithdraw: Decodable {
    let feature: Feature.ID

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["feature"])
        let name = try object.string("feature", max: 32, required: true) ?? ""
        guard APIConnect.featureNames.contains(name), let id = Feature.ID(name: name) else {
            throw RESTError.unprocessable(
                "feature: unknown value '\(name)' (one of \(APIConnect.featureNames.sorted().joined(separator: ", ")))")
        }
        feature = id
    }
}

/// `ChatMessage`: the body of `POST /sessions/{code}/chat`.
struct APIChat: Decodable {
    let text: String

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["text"])
        text = try object.string("text", max: 4_096, required: true) ?? ""
        guard text.utf8.count <= 4_096 else { throw RESTError.unprocessable("text has at most 4096 bytes of UTF-8") }
    }
}

/// `ApplicationMessage`: the body of `POST /sessions/{code}/messages`.
struct APIApplicationMessage: Decodable {
    let contentType: String
    let body: [UInt8]
    /// What one message part holds at the smallest frame a peer may announce (SPEC §15.4): a message is one part.
    static let maximumBodyBytes = 15_872

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["content_type", "body"])
        contentType = try object.string("content_type", max: 128, required: true) ?? ""
        guard contentType.utf8.count <= 128, contentType.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else {
            throw RESTError.unprocessable("content_type has at most 128 bytes of printable ASCII, e.g. application/json")
        }
        let text = try object.string("body", max: 21_164, required: true) ?? ""
        guard let bytes = Base64.decode(text), (1...Self.maximumBodyBytes).contains(bytes.count) else {
            throw RESTError.unprocessable("body must be 1 to 15872 bytes in standard Base64")
        }
        body = bytes
    }
}

/// `MessageSent`: the answer of `POST /sessions/{code}/chat` and `/messages`: the message's id, which its
/// `message_sent` event and its delivery (`message_delivered`, `message_refused`) name, and the code's state.
struct APIMessageSent: Encodable {
    let messageID: UInt32
    let session: APISession

    enum CodingKeys: String, CodingKey { case messageID = "message_id", session }
}
