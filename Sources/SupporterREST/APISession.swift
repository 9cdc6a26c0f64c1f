public import Foundation
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

/// `SessionType` of protocol/openapi.yaml.
public enum APISessionType: String, Codable, Sendable, Hashable, CaseIterable {
    case remoteSupport = "remote_support"
    case assistAR = "assist_ar"

    public init(_ type: SessionCodeType) { self = type == .remoteSupport ? .remoteSupport : .assistAR }

    /// The node's code type.
    public var codeType: SessionCodeType { self == .remoteSupport ? .remoteSupport : .assistAR }
}

/// A session code's stored state (`Session.state`, and what `SessionUpdate.state` asks for).
public enum APIStoredState: String, Codable, Sendable, Hashable, CaseIterable {
    case open
    case closed
}

/// What is happening on a code now (`Session.live_state`).
public enum APILiveState: String, Codable, Sendable, Hashable, CaseIterable {
    case open, online
    case requestPending = "request_pending"
    case active, closed, expired

    public init(_ state: SessionCodeState) {
        switch state {
        case .open: self = .open
        case .online: self = .online
        case .requestPending: self = .requestPending
        case .active: self = .active
        case .closed: self = .closed
        case .expired: self = .expired
        }
    }
}

/// `Session` of protocol/openapi.yaml: a session code with its live state, as every answer shows it. Every member is
/// always sent; absent optional values are `null`; times are UTC with milliseconds (``RESTTime``).
public struct APISession: Codable, Sendable, Hashable {
    public var code: String
    public var type: APISessionType
    public var description: String?
    public var customerName: String?
    public var customerEmail: String?
    public var waitingMessage: String?
    public var state: APIStoredState
    public var liveState: APILiveState
    /// Whether a device is on the code now.
    public var online: Bool
    public var createdAt: Date
    public var validUntil: Date
    public var closedAt: Date?
    public var assignedSupporter: String?
    /// The name of the device on the code, while one is on it.
    public var deviceName: String?
    /// The code rules (SPEC §15.3).
    public var featureRules: FeatureRules
    /// The device's link is lost and its session is kept while it reconnects (SPEC §15.5).
    public var reconnecting: Bool
    /// The id of the node the device is on, when that is another node sharing this node's database (null when it
    /// is on this node, or no device is on the code).
    public var node: String?
    /// Whether the code holds a default media descriptor (the descriptor itself is never shown).
    public var hasMediaDescriptor = false

    /// The API's view of the node's code.
    public init(_ info: SessionCodeInfo) {
        let record = info.record
        code = record.code
        type = APISessionType(record.type)
        description = record.description
        customerName = record.customerName
        customerEmail = record.customerEmail
        waitingMessage = record.waitingMessage
        state = record.isClosed ? .closed : .open
        liveState = APILiveState(info.state)
        online = info.online
        createdAt = record.createdAt
        validUntil = record.validUntil
        closedAt = record.closedAt
        assignedSupporter = record.assignedSupporter
        deviceName = info.deviceName
        featureRules = record.featureRules
        reconnecting = info.reconnecting
        node = info.node
        hasMediaDescriptor = record.mediaDescriptor != nil
    }

    enum CodingKeys: String, CodingKey {
        case code, type, description, state, online
        case customerName = "customer_name", customerEmail = "customer_email", waitingMessage = "waiting_message"
        case liveState = "live_state", createdAt = "created_at", validUntil = "valid_until", closedAt = "closed_at"
        case assignedSupporter = "assigned_supporter", deviceName = "device_name"
        case featureRules = "feature_rules", reconnecting, node, hasMediaDescriptor = "has_media_descriptor"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(type, forKey: .type)
        // `encode` of an Optional writes null for nil (`encodeIfPresent` would leave the member out).
        try container.encode(description, forKey: .description)
        try container.encode(customerName, forKey: .customerName)
        try container.encode(customerEmail, forKey: .customerEmail)
        try container.encode(waitingMessage, forKey: .waitingMessage)
        try container.encode(state, forKey: .state)
        try container.encode(liveState, forKey: .liveState)
        try container.encode(online, forKey: .online)
        try container.encode(RESTTime.format(createdAt), forKey: .createdAt)
        try container.encode(RESTTime.format(validUntil), forKey: .validUntil)
        try container.encode(closedAt.map(RESTTime.format), forKey: .closedAt)
        try container.encode(assignedSupporter, forKey: .assignedSupporter)
        try container.encode(deviceName, forKey: .deviceName)
        try container.encode(APIFeatureRules(featureRules), forKey: .featureRules)
        try container.encode(reconnecting, forKey: .reconnecting)
        try container.encode(node, forKey: .node)
        try container.encode(hasMediaDescriptor, forKey: .hasMediaDescriptor)
    }

    /// Reads an answer (for clients and tests); times must be RFC 3339.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func time(_ key: CodingKeys) throws -> Date {
            let text = try container.decode(String.self, forKey: key)
            guard let date = RESTTime.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not RFC 3339")
            }
            return date
        }
        code = try container.decode(String.self, forKey: .code)
        type = try container.decode(APISessionType.self, forKey: .type)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        customerName = try container.decodeIfPresent(String.self, forKey: .customerName)
        customerEmail = try container.decodeIfPresent(String.self, forKey: .customerEmail)
        waitingMessage = try container.decodeIfPresent(String.self, forKey: .waitingMessage)
        state = try container.decode(APIStoredState.self, forKey: .state)
        liveState = try container.decode(APILiveState.self, forKey: .liveState)
        online = try container.decode(Bool.self, forKey: .online)
        createdAt = try time(.createdAt)
        validUntil = try time(.validUntil)
        closedAt = try container.decodeNil(forKey: .closedAt) ? nil : try time(.closedAt)
        assignedSupporter = try container.decodeIfPresent(String.self, forKey: .assignedSupporter)
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName)
        featureRules = try container.decode(APIFeatureRules.self, forKey: .featureRules).value
        reconnecting = try container.decode(Bool.self, forKey: .reconnecting)
        node = try container.decodeIfPresent(String.self, forKey: .node)
        hasMediaDescriptor = try container.decodeIfPresent(Bool.self, forKey: .hasMediaDescriptor) ?? false
    }
}

/// `SessionPage` of protocol/openapi.yaml: one page of codes, oldest first, and how many there are in all.
public struct APISessionPage: Codable, Sendable, Hashable {
    public var sessions: [APISession]
    public var total: Int
    public var offset: Int
    public var limit: Int

    public init(sessions: [APISession], total: Int, offset: Int, limit: Int) {
        self.sessions = sessions
        self.total = total
        self.offset = offset
        self.limit = limit
    }
}

/// `Error` of protocol/openapi.yaml: `{"error": {"status": 404, "code": "not_found", "message": "…"}}`.
public struct APIErrorBody: Codable, Sendable, Hashable {
    /// The inner object.
    public struct Detail: Codable, Sendable, Hashable {
        /// The HTTP status, again.
        public var status: Int
        /// A word for programs, one per status (`not_found`, `too_many_requests`, …).
        public var code: String
        /// What went wrong, for a person.
        public var message: String

        public init(status: Int, code: String, message: String) {
            self.status = status
            self.code = code
            self.message = message
        }
    }

    public var error: Detail

    public init(status: Int, code: String, message: String) {
        error = Detail(status: status, code: code, message: message)
    }
}
