import SupporterModel
import Testing

@Suite struct WebhookURLTests {
    @Test func anHTTPSURLIsTakenApart() throws {
        let url = try WebhookURL("https://Helpdesk.Example:8443/hooks/rsup?team=2")
        #expect(url.isTLS)
        #expect(url.host == "helpdesk.example")
        #expect(url.port == 8443)
        #expect(url.target == "/hooks/rsup?team=2")
        #expect(url.hostHeader == "helpdesk.example:8443")
        let bare = try WebhookURL("https://h.example")
        #expect(bare.port == 443 && bare.target == "/" && bare.hostHeader == "h.example")
        let query = try WebhookURL("https://h.example?x=1")
        #expect(query.target == "/?x=1")
        let v6 = try WebhookURL("https://[2001:db8::1]/x")
        #expect(v6.host == "2001:db8::1" && v6.hostHeader == "[2001:db8::1]")
    }

    @Test func plainHTTPOnlyForAnAllowedHost() throws {
        #expect(throws: WebhookURL.Refusal.self) { try WebhookURL("http://h.example/") }
        do {
            _ = try WebhookURL("http://h.example/")
        } catch {
            #expect(error.kind == .plainHTTP)
            #expect(error.message.contains("--webhook-allow-http h.example"))
        }
        let allowed = try WebhookURL("http://h.example/x", plainHTTPHosts: ["h.example"])
        #expect(!allowed.isTLS && allowed.port == 80)
    }

    @Test(arguments: [
        "", "ftp://h.example/", "https://", "https://user:pass@h.example/", "https://h.example/#frag",
        "https://h .example/", "https://h.example:0/", "https://h.example:65536/", "https://h.example:x/",
        "https://-h.example/", "https://h..example/", "https://[::1/", "https://[h.example]/", "https://h.exämple/",
        "https://h.example/\u{7F}", "javascript:alert(1)",
    ])
    func malformedURLsAreRefused(text: String) {
        #expect(throws: WebhookURL.Refusal.self, "\(text)") { try WebhookURL(text) }
    }

    @Test func aLongURLIsRefusedAndTheMessageIsBounded() {
        let text = "https://h.example/" + String(repeating: "a", count: 3000)
        do {
            _ = try WebhookURL(text)
            Issue.record("accepted")
        } catch {
            #expect(error.message.count < 400)
        }
    }
}
