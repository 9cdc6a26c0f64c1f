public import SupporterCore
public import SupporterModel

/// What another node committed, or sent this node, as ``ClusterListener`` read it.
public enum ClusterNews: Sendable {
    /// A code as stored now (nil: deleted).
    case code(String, SessionCodeRecord?)
    /// The device another node holds on a code (nil: none, or this node's own).
    case presence(String, RemotePresence?)
    /// Every device other nodes hold, by code (after a reconnection, and once per lease period).
    case presenceSnapshot([String: RemotePresence])
    /// Every code (at the first LISTEN, and after a reconnection: notifications sent while not listening are lost).
    case codeSnapshot([SessionCodeRecord])
    case account(String, SupporterAccountRecord?)
    case loginSession(digest: [UInt8], LoginSessionRecord?)
    case loginSessionsEnded(login: String)
    /// Every stored login session (after a reconnection): the ones missing ended elsewhere meanwhile.
    case loginSessionSnapshot([LoginSessionRecord])
    case token(id: String, digest: [UInt8]?, record: APITokenRecord?)
    /// A back-off key's stored row (nil: deleted).
    case backoff(key: String, BackoffRow?)
    /// A command for a device this node holds.
    case command(id: Int64, origin: String, ClusterCommand)
    /// The answer to a command this node sent; `reread` when read again after a reconnection (nobody may wait).
    case answer(id: Int64, ClusterCommandAnswer, reread: Bool)
}
