import SupportUtilities
import SupporterWebhooks
import Testing

@Suite struct WebhookAddressPolicyTests {
    @Test(arguments: [
        "169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.1.1", "fe80::1",
        "127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255",
    ])
    func refusedByDefault(address: String) {
        #expect(WebhookAddressPolicy().refusal(of: address) != nil, "\(address) was allowed")
    }

    @Test(arguments: ["10.1.2.3", "172.16.0.9", "192.168.1.1", "fd12::1", "93.184.216.34", "2606:2800:220:1::1"])
    func privateAndPublicAddressesAreAllowed(address: String) {
        #expect(WebhookAddressPolicy().refusal(of: address) == nil)
    }

    @Test func theMetadataAddressIsNamedAsSuch() {
        #expect(WebhookAddressPolicy().refusal(of: "169.254.169.254") == "a cloud metadata service's address")
        #expect(WebhookAddressPolicy().refusal(of: "169.254.7.7") == "a link-local address")
    }

    @Test func anOperatorAllowsAPrefix() {
        let policy = WebhookAddressPolicy(allowed: [IPPrefix("127.0.0.0/8")!])
        #expect(policy.refusal(of: "127.0.0.1") == nil)
        #expect(policy.refusal(of: "::ffff:127.0.0.1") == nil)
        #expect(policy.refusal(of: "::1") != nil, "IPv6 loopback is another prefix")
        #expect(policy.refusal(of: "169.254.169.254") != nil)
    }
}
