import Foundation
import SupportUtilities
import SupporterModel

/// `Account` of protocol/openapi.yaml: a supporter account, never its password.
struct APIAccount: Encodable {
    let account: SupporterAccount

    init(_ account: SupporterAccount) { self.account = account }

    enum CodingKeys: String, CodingKey {
        case login, displayName = "display_name", role, state, createdAt = "created_at", updatedAt = "updated_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(account.login, forKey: .login)
        try container.encode(account.displayName, forKey: .displayName)
        try container.encode(account.role.rawValue, forKey: .role)
        try container.encode(account.state.rawValue, forKey: .state)
        try container.encode(RESTTime.format(account.createdAt), forKey: .createdAt)
        try container.encode(RESTTime.format(account.updatedAt), forKey: .updatedAt)
    }
}

/// `Login`: the body of `POST /login`.
struct APILogin: Decodable {
    let login: String
    let password: String

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["login", "password"])
        login = try object.string("login", max: 64, required: true) ?? ""
        password = try object.string("password", max: 1024, required: true) ?? ""
    }
}

/// `AccountCreate`: the body of `POST /users`.
struct APIAccountCreate: Decodable {
    let login: String
    let displayName: String
    let role: SupporterRole
    let password: String

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["login", "display_name", "role", "password"])
        login = try object.string("login", max: 64, required: true) ?? ""
        displayName = try object.string("display_name", max: 64, required: true) ?? ""
        role = try object.choice("role", SupporterRole.self) ?? .supporter
        password = try object.string("password", max: 1024, required: true) ?? ""
    }
}

/// `AccountUpdate`: the body of `PUT /users/{login}`; absent members stay.
struct APIAccountUpdate: Decodable {
    let change: SupporterAccountChange

    init(from decoder: any Decoder) throws {
        let object = try StrictJSON.object(decoder)
        try object.refuseUnknownMembers(allowed: ["display_name", "role", "state", "password"])
        change = SupporterAccountChange(
            displayName: try object.string("display_name", max: 64, required: false),
            role: try object.choice("role", SupporterRole.self),
            state: try object.choice("state", SupporterAccountState.self),
            password: try object.string("password", max: 1024, required: false))
    }
}

/// `SignedIn`: the answer of `POST /login` and `GET /me`.
struct APISignedIn: Encodable {
    let account: APIAccount
    let csrfToken: String

    enum CodingKeys: String, CodingKey { case account, csrfToken = "csrf_token" }
}

/// `AccountList`: the answer of `GET /users`.
struct APIAccountList: Encodable {
    let users: [APIAccount]
}
