import SupportUtilities

/// The `RemoteSupport-Signature` header of a delivery (Stripe's scheme): `t=<Unix seconds>,v1=<hex>` where the hex is
/// HMAC-SHA256, keyed with the endpoint's secret (its UTF-8 bytes, `whsec_` included), of `<t>.<body>`. While a
/// rotated secret is still valid a second `v1=` follows, signed with it. A receiver recomputes the HMAC with its secret,
/// compares in constant time with each `v1`, and refuses a `t` more than 5 minutes from its own clock (a replay).
public enum WebhookSignature {
    /// The header's value for `body` sent at `timestamp` (Unix seconds), signed with each of `secrets`.
    public static func header(timestamp: Int64, body: [UInt8], secrets: [String]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(timestamp: timestamp, body: body, secret: $0) })
            .joined(separator: ",")
    }

    /// One `v1` value.
    public static func signature(timestamp: Int64, body: [UInt8], secret: String) -> String {
        Hex.encode(SHA256.authenticationCode(key: Array(secret.utf8), message: Array("\(timestamp).".utf8) + body))
    }

    /// Whether `header` carries a `v1` for `body` under `secret`, with a `t` within `tolerance` seconds of `now`
    /// (Unix seconds): what a receiver checks (used by the tests and shown in docs/webhooks.md).
    public static func verify(header: String, body: [UInt8], secret: String, now: Int64, tolerance: Int64 = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(String(pair[1])) }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(signature(timestamp: timestamp, body: body, secret: secret).utf8)
        return signatures.contains { ConstantTime.equal(Array($0.utf8), expected) }
    }
}
