package import SupporterCore

extension StoreIntent {
    /// A short name for logs.
    package var summary: String {
        switch self {
        case .insertCode: "new code"
        case .updateCode: "code change"
        case .deleteCode: "code deletion"
        case .audit(let event): "audit \(event.kind)"
        case .auditWithContent(let event, _): "audit \(event.kind) with its content"
        case .pruneContents: "retention of message contents"
        case .saveBackoff, .deleteBackoff: "back-off"
        case .saveAccount: "supporter account"
        case .saveLoginSession, .deleteLoginSession, .deleteLoginSessions, .deleteLoginSessionsBefore: "login session"
        case .claimPresence, .presenceState, .resumeState: "device presence"
        case .releasePresence: "end of device presence"
        case .requirePresence: "claim check"
        case .handOverPresence: "handover of device presence"
        }
    }
}
