public import Foundation
import SupportWire
import SupportUtilities
public import SupporterModel

/// A durable change the registry asks for. The node hands intents to its store writer, which applies them in order
/// in one transaction; whatever an intent records is told to nobody before that transaction commits.
public enum StoreIntent: Sendable, Hashable {
    case insertCode(SessionCodeRecord)
    case updateCode(SessionCodeRecord)
    case deleteCode(String)
    case audit(AuditEvent)
    /// An audit row, and the content of the message or file it records, kept apart for the retention time under the
    /// row's id (``SessionContent``).
    case auditWithContent(AuditEvent, SessionContent)
    /// Forgets contents stored before `before`, then the oldest until those left take at most `keepingBytes`.
    case pruneContents(before: Date, keepingBytes: Int)
    case saveBackoff(BackoffRow)
    case deleteBackoff(key: String)
    /// Creates or replaces a supporter account (by login).
    case saveAccount(SupporterAccountRecord)
    /// Remembers a login session.
    case saveLoginSession(LoginSessionRecord)
    /// Forgets the login session with this digest (sign-out).
    case deleteLoginSession(digest: [UInt8])
    /// Forgets every login session of an account (disabled, or its password changed).
    case deleteLoginSessions(login: String)
    /// Forgets login sessions that began before this time (past their lifetime).
    case deleteLoginSessionsBefore(Date)
    /// This node now holds the device on `code`. Where several nodes share one database this is "one device per
    /// code" across them: the write fails with a conflict while another node's live presence holds the code. A store
    /// of one node has nothing to record.
    case claimPresence(code: String, deviceName: String?)
    /// The session on a code this node holds moved to `state` (online, request pending, active), for the other nodes.
    case presenceState(code: String, state: SessionCodeState)
    /// What another node needs to take over the session on `code` if this node dies (an opaque text the node
    /// makes: state, request, grant, digests of the resume secrets). A store of one node has nothing to record.
    case resumeState(code: String, state: String)
    /// This node no longer holds a device on `code`. Where several nodes share one database this is fenced like
    /// ``requirePresence(code:)``: it fails, with the job, once another node claimed the code since this one did.
    case releasePresence(code: String)
    /// The node drains (SPEC §15.5, "Drain"): it lets go of `code` at once but keeps the session as last recorded
    /// (``resumeState(code:state:)``) for another node — or this one restarted — to take over when the device
    /// resumes. Fenced like ``requirePresence(code:)``. A store of one node has nothing to record.
    case handOverPresence(code: String)
    /// The job is about the device session this node holds on `code` (fencing): where several nodes share one
    /// database, the whole job fails (``StoreError``'s `fenced`) unless this node's claim on the code still stands,
    /// that is no other node claimed the code since — so no node records anything about a session that moved on.
    /// A store of one node has nothing to check.
    case requirePresence(code: String)
}

