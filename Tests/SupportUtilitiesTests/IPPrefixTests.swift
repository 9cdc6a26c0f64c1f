import Testing
import SupportUtilities

/// CIDR prefixes: who may read metrics.
@Suite struct IPPrefixTests {
    @Test(arguments: [
        ("10.0.0.0/8", "10.200.3.4", true), ("10.0.0.0/8", "11.0.0.1", false),
        ("192.0.2.7", "192.0.2.7", true), ("192.0.2.7", "192.0.2.8", false),
        ("192.0.2.0/27", "192.0.2.31", true), ("192.0.2.0/27", "192.0.2.32", false),
        ("0.0.0.0/0", "203.0.113.9", true), ("0.0.0.0/0", "::1", false),
        ("2001:db8::/32", "2001:db8:ffff::1", true), ("2001:db8::/32", "2001:db9::1", false),
        ("::1/128", "::1", true), ("127.0.0.0/8", "::ffff:127.0.0.1", true),
        ("10.0.0.0/8", "not-an-address", false),
    ])
    func anAddressIsInItsNetworkOnly(prefix: String, address: String, inside: Bool) throws {
        #expect(try #require(IPPrefix(prefix)).contains(address) == inside)
    }

    @Test(arguments: ["", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "::/129", "example.com/8", "10.0.0/8", "1.2.3.4/٣"])
    func aMalformedPrefixIsRefused(text: String) {
        #expect(IPPrefix(text) == nil)
    }

    @Test func itIsWrittenWithItsHostBitsCleared() throws {
        #expect(try #require(IPPrefix("10.1.2.3/8")).description == "10.0.0.0/8")
        #expect(try #require(IPPrefix("2001:db8::1/32")).description == "2001:db8::/32")
        #expect(try #require(IPPrefix("192.0.2.7")).description == "192.0.2.7/32")
    }
}
