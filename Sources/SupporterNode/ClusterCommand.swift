import Foundation
import SupporterCore
import SupportSession
import SupportWire
import SupportUtilities

/// A supporter's command for a device that another node holds (docs/cluster.md, "Routing"): written to
/// `node_commands` with a `NOTIFY` to the holding node in one transaction; that node carries it out as if its own
/// supporter had asked, and writes a ``ClusterCommandAnswer`` back the same way.
struct ClusterCommand: Codable, Sendable, Hashable {
    enum Kind: String, Codable, Sendable { case request, abort, end }

    var kind: Kind
    var code: String
    var supporterName: String? = nil
    /// ``ConnectionType`` raw value.
    var connectionType: UInt8? = nil
    /// Feature ids and versions asked for, as pairs.
    var features: [[UInt16]]? = nil
    /// Base64.
    var mediaDescriptor: String? = nil
    var text: String? = nil
    var assignTo: String? = nil
    var replacingAssignee: Bool? = nil
    var actor: Actor

    /// ``AuditActor`` as it travels.
    struct Actor: Codable, Sendable, Hashable {
        var kind: String
        var tokenID: String?
        var address: String?
        var account: String?
        var accountName: String?
        var loginSession: String?

        init(_ actor: AuditActor) {
            kind = actor.kind
            tokenID = actor.tokenID
            address = actor.address
            account = actor.account
            accountName = actor.accountName
            loginSession = actor.loginSession
        }

        var auditActor: AuditActor {
            AuditActor(
                kind: kind, tokenID: tokenID, address: address, account: account, accountName: accountName,
                loginSession: loginSession)
        }
    }

    var featureSet: FeatureSet {
        FeatureSet((features ?? []).compactMap { pair in
            pair.count == 2 ? Feature(Feature.ID(rawValue: pair[0]), version: pair[1]) : nil
        })
    }

    static func encodeFeatures(_ features: FeatureSet) -> [[UInt16]] { features.map { [$0.id.rawValue, $0.version] } }

    func json() -> String {
        (try? JSONEncoder().encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    static func decode(_ text: String) -> ClusterCommand? {
        try? JSONDecoder().decode(ClusterCommand.self, from: Data(text.utf8))
    }
}

/// What the holding node answers to a ``ClusterCommand``: the request id, or the error the command met there.
struct ClusterCommandAnswer: Codable, Sendable, Hashable {
    var requestID: UInt32?
    var error: String?
    /// ``SupporterNodeError/Kind`` name.
    var errorKind: String?

    init(requestID: UInt32? = nil) { self.requestID = requestID }

    init(_ error: SupporterNodeError) {
        self.error = error.description
        errorKind = error.kind.description
    }

    /// The error to throw at the asking node, if the command failed.
    var failure: SupporterNodeError? {
        guard let error else { return nil }
        let kinds: [SupporterNodeError.Kind] = [.refused, .notFound, .conflict, .invalid, .transport, .store, .forbidden, .busy]
        return SupporterNodeError(error, kind: kinds.first { $0.description == errorKind } ?? .refused)
    }

    func json() -> String {
        (try? JSONEncoder().encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    static func decode(_ text: String) -> ClusterCommandAnswer {
        (try? JSONDecoder().decode(ClusterCommandAnswer.self, from: Data(text.utf8)))
            ?? ClusterCommandAnswer(SupporterNodeError("the other node's answer is unreadable", kind: .store))
    }
}
