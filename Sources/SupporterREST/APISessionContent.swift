import Foundation
import SupportUtilities
import SupporterModel

/// `MessageContent` of protocol/openapi.yaml: what a message or file of a session held, while it is kept (the node's
/// `--message-retention`); a file by its name, size and where to download it, never its bytes.
struct APISessionContent: Encodable {
    let stored: StoredSessionContent

    init(_ stored: StoredSessionContent) { self.stored = stored }

    /// The kinds of audit row whose content an event carries.
    static let carried: Set<AuditEvent.Kind> = [.messageSent, .messageReceived, .fileReceived]

    enum CodingKeys: String, CodingKey {
        case kind, text, contentType = "content_type", body, name, size, download
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let content = stored.content
        try container.encode(content.kind, forKey: .kind)
        switch content.body {
        case .chat(let text):
            try container.encode(text, forKey: .text)
        case .application(let type, let bytes):
            try container.encode(type, forKey: .contentType)
            try container.encode(Base64.encode(bytes), forKey: .body)
        case .file(let name, let type, _):
            try container.encode(name, forKey: .name)
            try container.encode(type, forKey: .contentType)
            try container.encode(stored.size, forKey: .size)
            try container.encode(
                "/api/v1/sessions/\(content.code)/files/\(stored.auditID)", forKey: .download)
        }
    }
}
