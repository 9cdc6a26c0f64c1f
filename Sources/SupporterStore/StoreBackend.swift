/// Which engine keeps a supporter node's durable state (codes, accounts, login sessions, tokens, back-off and the
/// hash-chained audit trail).
public enum StoreBackend: Sendable, Hashable {
    /// The embedded default: the SQLite file at ``StoreConfiguration/path``.
    case sqlite
    /// A PostgreSQL database, by libpq connection string: a `postgres://` / `postgresql://` URI or `key=value`
    /// pairs (`host=… dbname=… sslmode=verify-full sslrootcert=…`). The node creates or migrates its tables there.
    case postgres(String)

    /// The connection string without its password, for logs and errors.
    public static func redacted(_ connectionString: String) -> String {
        var text = connectionString
        // URI: postgres://user:password@host/…
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") {
            let credentials = text[scheme.upperBound..<at]
            if let colon = credentials.firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        // key=value: password=…; URI query: ?password=…
        var parts: [String] = []
        for part in text.split(separator: " ", omittingEmptySubsequences: false) {
            parts.append(part.hasPrefix("password=") ? "password=***" : String(part))
        }
        text = parts.joined(separator: " ")
        if let range = text.range(of: "password=", options: []), text[..<range.lowerBound].hasSuffix("?")
            || text[..<range.lowerBound].hasSuffix("&")
        {
            let end = text[range.upperBound...].firstIndex(of: "&") ?? text.endIndex
            text.replaceSubrange(range.upperBound..<end, with: "***")
        }
        return text
    }
}
