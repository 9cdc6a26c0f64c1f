import Foundation
import SupportSession
import SupportWire
import SupportUtilities
public import SupportVocabulary
public import SupporterModel

/// A supporter's command for a device that another node holds (docs/cluster.md, "Routing"): written to
/// `node_commands` with a `NOTIFY` to the holding node in one transaction; that node carries it out as if its own
/// supporter had asked, and writes a ``ClusterCommandAnswer`` back the same way.
public struct ClusterCommand: Codable, Sendable, Hashable {
    /// `vacate`: a node about to register a device on the code asks the node it last saw holding it whether a device
    /// is still there; the holder answers `conflict` if so, else once everything it submitted before (the code's
    /// release included) is committed. `ask` (a feature, in `features`, with `text`), `withdraw` (the pending ask for
    /// the feature in `features`), `chat` (`text`) and `message` (an
    /// application message: `contentType` and `body`) act in a running session. A node of an older version cannot read a kind it does not know: it never takes the command,
    /// and the sender answers `busy` after ``answerTimeout`` with nothing done.
    public enum Kind: String, Codable, Sendable {
        case request, abort, end, vacate, ask, withdraw, chat, message, file

        /// Whether the holder must take the command exclusively before carrying it out (docs/cluster.md, "Honest
        /// answers"): a supporter's command must be carried out or withdrawn, never both, so the holder and the
        /// sender race for its row. A `vacate` changes nothing the sender could not see, so carrying one out late —
        /// after the sender gave up and tried its claim — is harmless: it needs no take.
        public var needsExclusiveTake: Bool { self != .vacate }
    }

    /// How long the asking node waits for the holder's answer to a supporter's command (`busy` after it).
    public static let answerTimeout: Duration = .seconds(15)
    /// How long a node registering a device waits for a `vacate` answer before it tries the claim anyway: the
    /// device's REGISTER waits meanwhile, so a holder that does not answer must not cost it much.
    public static let vacateTimeout: Duration = .seconds(1)

    public var kind: Kind
    public var code: String
    public var supporterName: String? = nil
    /// ``ConnectionType`` raw value.
    public var connectionType: UInt8? = nil
    /// Feature ids and versions asked for, as pairs.
    public var features: [[UInt16]]? = nil
    /// Base64.
    public var mediaDescriptor: String? = nil
    public var text: String? = nil
    /// An application message's content type.
    public var contentType: String? = nil
    /// An application message's body, Base64.
    public var body: String? = nil
    public var assignTo: String? = nil
    public var replacingAssignee: Bool? = nil
    public var actor: Actor

    public init(
        kind: Kind, code: String, supporterName: String? = nil, connectionType: UInt8? = nil,
        features: [[UInt16]]? = nil, mediaDescriptor: String? = nil, text: String? = nil, assignTo: String? = nil,
        replacingAssignee: Bool? = nil, actor: Actor
    ) {
        self.kind = kind
        self.code = code
        self.supporterName = supporterName
        self.connectionType = connectionType
        self.features = features
        self.mediaDescriptor = mediaDescriptor
        self.text = text
        self.assignTo = assignTo
        self.replacingAssignee = replacingAssignee
        self.actor = actor
    }

    /// ``AuditActor`` as it travels.
    public struct Actor: Codable, Sendable, Hashable {
        public var kind: String
        public var tokenID: String?
        public var address: String?
        public var account: String?
        public var accountName: String?
        public var loginSession: String?

        public init(_ actor: AuditActor) {
            kind = actor.kind
            tokenID = actor.tokenID
            address = actor.address
            account = actor.account
            accountName = actor.accountName
            loginSession = actor.loginSession
        }

        public var auditActor: AuditActor {
            AuditActor(
                kind: kind, tokenID: tokenID, address: address, account: account, accountName: accountName,
                loginSession: loginSession)
        }
    }

    public var featureSet: FeatureSet {
        FeatureSet((features ?? []).compactMap { pair in
            pair.count == 2 ? Feature(Feature.ID(rawValue: pair[0]), version: pair[1]) : nil
        })
    }

    public static func encodeFeatures(_ features: FeatureSet) -> [[UInt16]] { features.map { [$0.id.rawValue, $0.version] } }

    public func json() -> String {
        (try? JSONEncoder().encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    public static func decode(_ text: String) -> ClusterCommand? {
        try? JSONDecoder().decode(ClusterCommand.self, from: Data(text.utf8))
    }
}

/// What the holding node answers to a ``ClusterCommand``: the request id, or the error the command met there.
public struct ClusterCommandAnswer: Codable, Sendable, Hashable {
    public var requestID: UInt32?
    /// The id a chat line or application message went out with (`chat`, `message`); a file's transfer id (`file`).
    public var messageID: UInt32?
    public var error: String?
    /// ``SupporterNodeError/Kind`` name.
    public var errorKind: String?

    public init(requestID: UInt32? = nil) { self.requestID = requestID }

    public init(_ error: SupporterNodeError) {
        self.error = error.description
        errorKind = error.kind.description
    }

    /// The error to throw at the asking node, if the command failed.
    public var failure: SupporterNodeError? {
        guard let error else { return nil }
        return SupporterNodeError(error, kind: errorKind.flatMap(SupporterNodeError.Kind.init(named:)) ?? .refused)
    }

    public func json() -> String {
        (try? JSONEncoder().encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    public static func decode(_ text: String) -> ClusterCommandAnswer {
        (try? JSONDecoder().decode(ClusterCommandAnswer.self, from: Data(text.utf8)))
            ?? ClusterCommandAnswer(SupporterNodeError("the other node's answer is unreadable", kind: .store))
    }
}
