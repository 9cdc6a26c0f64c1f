public import Foundation

/// What a message or file of a session held: the words of a chat line, an application message's body, a file's bytes.
///
/// The audit trail records that a message went or came (`message_sent`, `message_received`, `file_received`), never
/// what it said. The content is kept apart, keyed by that audit row's id, for the operator's retention time only
/// (`--message-retention`), and within a total size (`--content-limit`): the oldest goes first.
public struct SessionContent: Sendable, Hashable {
    /// The content itself.
    public enum Body: Sendable, Hashable {
        case chat(String)
        case application(contentType: String, bytes: [UInt8])
        case file(name: String, contentType: String?, bytes: [UInt8])
    }

    public var code: String
    public var time: Date
    public var body: Body

    public init(code: String, time: Date, body: Body) {
        self.code = code
        self.time = time
        self.body = body
    }

    /// The bytes the content takes: what counts against the store's limit.
    public var size: Int {
        switch body {
        case .chat(let text): text.utf8.count
        case .application(_, let bytes), .file(_, _, let bytes): bytes.count
        }
    }

    /// The store's name for the kind of content: `chat`, `application` or `file`.
    public var kind: String {
        switch body {
        case .chat: "chat"
        case .application: "application"
        case .file: "file"
        }
    }
}

/// A stored content as a list shows it: a file without its bytes (they are read one file at a time).
public struct StoredSessionContent: Sendable, Hashable {
    /// The audit row it belongs to.
    public var auditID: Int64
    /// A file's bytes are left out (empty) unless the read asked for them.
    public var content: SessionContent
    /// The content's size in bytes (for a file: the file's, also when its bytes were left out).
    public var size: Int

    public init(auditID: Int64, content: SessionContent, size: Int) {
        self.auditID = auditID
        self.content = content
        self.size = size
    }
}
