package import Foundation
import SupportUtilities
import SupportWire
package import SupporterModel

/// The node's login sessions: only SHA-256 digests of their secrets are kept, here and in the store (so a restart
/// signs nobody out; a session loaded from the store counts as used at load time). A session ends after
/// ``idleTimeout`` unused, ``lifetime`` in all, at sign-out, or when its account is disabled or its password changed.
/// At most ``capacity`` are held; beyond it the least recently used is dropped.
package struct LoginSessionTable: Sendable {
    package static let idleTimeout: TimeInterval = 8 * 3600
    package static let lifetime: TimeInterval = 24 * 3600
    package static let capacity = 10_000

    private var sessions: [[UInt8]: LoginSession] = [:]

    package init() {}

    /// A session being opened: decided, not yet in effect (``insert(_:)`` puts it in once it is stored).
    package struct Opening: Sendable {
        /// The cookie value, shown to nobody else.
        package let secret: String
        package let session: LoginSession
        package let record: LoginSessionRecord
    }

    /// A new session for `login`, not yet in the table.
    package static func makeSession(login: String, now: Date) -> Opening {
        let secret = Self.random()
        let digest = SHA256.hash(Array(secret.utf8))
        let id = digest.prefix(6).map { String(format: "%02x", $0) }.joined()
        let session = LoginSession(id: id, login: login, csrfToken: Self.random(), createdAt: now, lastUsed: now)
        let record = LoginSessionRecord(digest: digest, id: id, login: login, csrfToken: session.csrfToken, createdAt: now)
        return Opening(secret: secret, session: session, record: record)
    }

    /// Puts a session made by ``makeSession(login:now:)`` in effect (once it is stored).
    package mutating func insert(_ opening: Opening) { insert(opening.session, digest: opening.record.digest) }

    /// A new session for `login`, in effect at once; returns it with its secret (the cookie value).
    package mutating func open(login: String, now: Date) -> (secret: String, session: LoginSession, record: LoginSessionRecord) {
        let opening = Self.makeSession(login: login, now: now)
        insert(opening)
        return (opening.secret, opening.session, opening.record)
    }

    /// A stored session, unless it is past its lifetime at `now`.
    package mutating func load(_ record: LoginSessionRecord, now: Date) {
        guard now.timeIntervalSince(record.createdAt) < Self.lifetime else { return }
        insert(
            LoginSession(
                id: record.id, login: record.login, csrfToken: record.csrfToken, createdAt: record.createdAt,
                lastUsed: now),
            digest: record.digest)
    }

    private mutating func insert(_ session: LoginSession, digest: [UInt8]) {
        if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            sessions[oldest.key] = nil
        }
        sessions[digest] = session
    }

    package static func digest(of secret: String) -> [UInt8] { SHA256.hash(Array(secret.utf8)) }

    /// The live session whose secret is `secret` (marked used at `now`); nil when unknown or expired.
    package mutating func use(secret: String, now: Date) -> LoginSession? {
        let digest = SHA256.hash(Array(secret.utf8))
        guard var session = sessions[digest] else { return nil }
        guard now.timeIntervalSince(session.lastUsed) < Self.idleTimeout,
            now.timeIntervalSince(session.createdAt) < Self.lifetime
        else {
            sessions[digest] = nil
            return nil
        }
        session.lastUsed = now
        sessions[digest] = session
        return session
    }

    /// Ends the session whose secret is `secret`; returns it.
    package mutating func close(secret: String) -> LoginSession? {
        sessions.removeValue(forKey: SHA256.hash(Array(secret.utf8)))
    }

    /// Whether a session with this digest is held.
    package func contains(digest: [UInt8]) -> Bool { sessions[digest] != nil }

    /// The session whose secret has `digest`, as it is (not marked used).
    package func session(digest: [UInt8]) -> LoginSession? { sessions[digest] }

    /// Keeps only sessions whose digest is in `digests` or that began after `date` (read again from the store).
    package mutating func retain(digests: Set<[UInt8]>, orBegunAfter date: Date) {
        sessions = sessions.filter { digests.contains($0.key) || $0.value.createdAt > date }
    }

    /// Forgets the session with this digest (it ended on another node).
    package mutating func forget(digest: [UInt8]) { sessions[digest] = nil }

    /// Ends every session of `login`.
    package mutating func closeAll(of login: String) {
        sessions = sessions.filter { $0.value.login != login }
    }

    /// Drops expired sessions.
    package mutating func sweep(now: Date) {
        sessions = sessions.filter {
            now.timeIntervalSince($0.value.lastUsed) < Self.idleTimeout
                && now.timeIntervalSince($0.value.createdAt) < Self.lifetime
        }
    }

    package var count: Int { sessions.count }

    private static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }, urlSafe: true)
    }
}
