/// How an endpoint's event kinds are stored, the same in every engine: `*` for every kind, else the kinds between
/// commas (`,session_started,session_ended,`), so the outbox trigger finds a kind with one substring test.
public enum WebhookKindList {
    /// The stored text of `kinds`.
    public static func stored(_ kinds: [String]) -> String {
        kinds.contains("*") ? "*" : "," + kinds.joined(separator: ",") + ","
    }

    /// The kinds of stored text `text`.
    public static func kinds(stored text: String) -> [String] {
        text == "*" ? ["*"] : text.split(separator: ",").map(String.init)
    }
}
