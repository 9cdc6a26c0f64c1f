/// The kind of a session code (REGISTER_RESULT `code_type`).
public enum SessionCodeType: UInt8, Sendable, CaseIterable {
    case remoteSupport = 1
    case assistAR = 2
}
