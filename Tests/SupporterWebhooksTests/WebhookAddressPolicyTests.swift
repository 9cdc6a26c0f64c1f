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

    /// NAT64, 6to4 and IPv4-compatible addresses carry an IPv4 address: judged by it too.
    @Test(arguments: ["64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "::169.254.169.254", "64:ff9b::7f00:1"])
    func anIPv4AddressInsideAnIPv6OneIsJudgedToo(address: String) {
        let refusal = WebhookAddressPolicy().refusal(of: address)
        #expect(refusal?.contains("inside") == true, "\(address): \(String(describing: refusal))")
    }

    @Test func aNAT64AddressOfAPublicHostIsAllowed() {
        #expect(WebhookAddressPolicy().refusal(of: "64:ff9b::5db8:d822") == nil)  // 93.184.216.34
        #expect(WebhookAddressPolicy(allowed: [IPPrefix("127.0.0.0/8")!]).refusal(of: "64:ff9b::7f00:1") == nil)
    }

    @Test func anOperatorAllowsAPrefix() {
        let policy = WebhookAddressPolicy(allowed: [IPPrefix("127.0.0.0/8")!])
        #expect(policy.refusal(of: "127.0.0.1") == nil)
        #expect(policy.refusal(of: "::ffff:127.0.0.1") == nil)
        #expect(policy.refusal(of: "::1") != nil, "IPv6 loopback is another prefix")
        #expect(policy.refusal(of: "169.254.169.254") != nil)
    }
}
