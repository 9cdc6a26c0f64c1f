import SupportRuntime
import SupportVocabulary

/// What `--version` prints: the program and release, the protocol, and the C libraries the process runs with (the
/// ones a support request or a security advisory asks about).
public enum VersionText {
    /// Lines for people: `rsup-supporter 1.2.0-dev`, then one `name: version` line each.
    public static func lines(program: String, libraries: [(name: String, version: String)] = []) -> [String] {
        ["\(program) \(ProductVersion.release)", "protocol: \(ProductVersion.protocolText)",
         "TLS: \(OpenSSLLibrary.versionText)"]
            + libraries.map { "\($0.name): \($0.version)" }
    }

    /// The same as one JSON object (`--version --json`).
    public static func object(program: String, libraries: [(name: String, version: String)] = []) -> [String: Any] {
        var object: [String: Any] = [
            "program": program, "version": ProductVersion.release, "protocol": ProductVersion.protocolText,
            "openssl": OpenSSLLibrary.versionText,
        ]
        for library in libraries { object[library.name.lowercased()] = library.version }
        return object
    }
}
