/// The release of RemoteSupport this build is, and the protocol it speaks, for `--version`, logs and support
/// requests. One place, so that both CLIs, the node and the SDK say the same.
public enum ProductVersion {
    /// The release, semantic-versioning style (`-dev` between releases).
    public static let release = "1.2.0-dev"
    /// The wire protocol: version 1 (the frame header's), the 1.0.1 errata and the 1.1 extensions, and the
    /// revision of `protocol/SPEC.md` this build implements.
    public static let protocolText =
        "1 (1.0.1, and 1.1 with access_control, session_messages, session_resume, ask_withdraw; SPEC revision 1.2.0)"
}
