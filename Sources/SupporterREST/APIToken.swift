import Foundation
import SupportUtilities
import SupportVocabulary
import SupporterModel

/// `Token` of protocol/openapi.yaml: an API token's public record; `token` only in the answer that issued it.
struct APIToken: Encodable {
    let record: APITokenRecord
    var token: String?

    enum CodingKeys: String, CodingKey {
        case id, scope, label, createdAt = "created_at", revokedAt = "revoked_at", token
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.id, forKey: .id)
        try container.encode(record.scope.rawValue, forKey: .scope)
        try container.encode(record.label, forKey: .label)
        try container.encode(RESTTime.format(record.createdAt), forKey: .createdAt)
        try container.encode(record.revokedAt.map(RESTTime.format), forKey: .revokedAt)
        try container.encodeIfPresent(token, forKey: .token)
    }
}

/// `TokenList`: the answer of `GET /tokens`.
struct APITokenList: Encodable {
    let tokens: [APIToken]
}

/// `TokenCreate`: the body of `POST /tokens`.
struct APITokenCreate: Decodable {
    let scope: APITokenScope
    let label: String?

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["scope", "label"])
        scope = try object.choice("scope", APITokenScope.self) ?? .device
        label = try object.string("label", max: 128, required: false)
    }
}
