import Foundation
import SupportWire
import SupportUtilities

/// A node's identity among several supporter nodes sharing one PostgreSQL database (docs/cluster.md).
///
/// The id is drawn at each start, so a node that died and came back is a new member: whatever the old one held
/// lapses with its presence leases. Presence times are the database server's clock (`rsup_now_ms()`), never a node's,
/// so nodes whose clocks differ still agree on whose lease has run out.
public struct ClusterMember: Sendable, Hashable {
    /// Lowercase letters and digits only: it names a `LISTEN` channel.
    public let nodeID: String
    /// How long a presence stays valid without renewal; renewed every third of it.
    public let presenceLease: Duration

    public init(nodeID: String = ClusterMember.randomID(), presenceLease: Duration) {
        self.nodeID = nodeID
        self.presenceLease = presenceLease
    }

    public var leaseMilliseconds: Int64 {
        let (seconds, attoseconds) = presenceLease.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The channel every node listens on for changes made elsewhere (``ClusterChange``).
    public static let changesChannel = "rsup_changes"

    /// The channel on which this node is sent commands and answers (``ClusterCommand``).
    public var commandChannel: String { Self.commandChannel(of: nodeID) }

    public static func commandChannel(of nodeID: String) -> String { "rsup_node_" + nodeID }

    public static func randomID() -> String {
        String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)).lowercased()
    }
}

/// A change one node committed that the others keep in memory too, sent with `NOTIFY` in the change's own
/// transaction (so it arrives after the commit, in commit order): the receiving node reads the named row again.
///
/// Payload: `<origin node id> <kind> <key>`; the key is the rest of the text (it may hold spaces).
package enum ClusterChange: Sendable, Hashable {
    /// A session code was created, changed or deleted.
    case code(String)
    /// A node started or stopped holding the device on a code, or its session there changed state.
    case presence(code: String)
    /// A supporter account was created or changed.
    case account(login: String)
    /// A login session was created or ended (by the hex of its digest).
    case loginSession(digestHex: String)
    /// Every login session of an account ended.
    case loginSessions(login: String)
    /// An API token was issued or revoked (by its public id).
    case token(id: String)
    /// A registration back-off row was saved or deleted (by its key: `addr:…`, `code:…`, `token:…`).
    case backoff(key: String)

    public func payload(from origin: String) -> String {
        switch self {
        case .code(let code): "\(origin) code \(code)"
        case .presence(let code): "\(origin) presence \(code)"
        case .account(let login): "\(origin) account \(login)"
        case .loginSession(let digest): "\(origin) login \(digest)"
        case .loginSessions(let login): "\(origin) logins \(login)"
        case .token(let id): "\(origin) token \(id)"
        case .backoff(let key): "\(origin) backoff \(key)"
        }
    }

    /// The change and its origin node, or nil for a payload this version does not know (ignored).
    public static func parse(_ payload: String) -> (origin: String, change: ClusterChange)? {
        let parts = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[2].isEmpty else { return nil }
        let key = String(parts[2])
        let change: ClusterChange
        switch parts[1] {
        case "code": change = .code(key)
        case "presence": change = .presence(code: key)
        case "account": change = .account(login: key)
        case "login": change = .loginSession(digestHex: key)
        case "logins": change = .loginSessions(login: key)
        case "token": change = .token(id: key)
        case "backoff": change = .backoff(key: key)
        default: return nil
        }
        return (String(parts[0]), change)
    }
}
