import SupportUtilities
import SupporterWebhooks
import Testing

@Suite struct WebhookSignatureTests {
    let body = Array(#"{"id":7,"kind":"session_started"}"#.utf8)

    @Test func theHeaderIsStripesSchemeOverTimestampDotBody() {
        let header = WebhookSignature.header(timestamp: 1_765_000_000, body: body, secrets: ["whsec_a"])
        let expected = Hex.encode(
            SHA256.authenticationCode(key: Array("whsec_a".utf8), message: Array("1765000000.".utf8) + body))
        #expect(header == "t=1765000000,v1=\(expected)")
    }

    @Test func aRotatedSecretAddsASecondSignature() {
        let header = WebhookSignature.header(timestamp: 100, body: body, secrets: ["new", "old"])
        #expect(header.split(separator: ",").count == 3)
        #expect(WebhookSignature.verify(header: header, body: body, secret: "new", now: 100))
        #expect(WebhookSignature.verify(header: header, body: body, secret: "old", now: 100))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "other", now: 100))
    }

    @Test func verificationRefusesAChangedBodyAnOldTimestampAndGarbage() {
        let header = WebhookSignature.header(timestamp: 1_000, body: body, secrets: ["s"])
        #expect(WebhookSignature.verify(header: header, body: body, secret: "s", now: 1_300))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "s", now: 1_301), "a replay past 5 minutes")
        #expect(!WebhookSignature.verify(header: header, body: body + [0x20], secret: "s", now: 1_000))
        #expect(!WebhookSignature.verify(header: "v1=abc", body: body, secret: "s", now: 1_000))
        #expect(!WebhookSignature.verify(header: "", body: body, secret: "s", now: 1_000))
    }
}
