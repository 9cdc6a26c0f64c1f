import Testing
import SupportUtilities

@Suite struct IPAddressTextTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("0:0:0:0:0:0:0:1", "::1"), ("::ffff:10.0.0.5", "10.0.0.5"),
        ("2001:DB8::0:1", "2001:db8::1"), ("::FFFF:7F00:1", "127.0.0.1"),
    ])
    func sameAddressHasOneText(_ input: String, _ canonical: String) {
        #expect(IPAddressText.canonical(input) == canonical)
    }

    @Test(arguments: ["", "localhost", "10.0.0.256", "10.0.0.5:80", "[::1]", "fe80::1%eth0", " 10.0.0.5", "1.2.3"])
    func namesPortsAndGarbageAreNotAddresses(_ input: String) {
        #expect(IPAddressText.canonical(input) == nil)
    }

    @Test(arguments: [
        ("203.0.113.7", "203.0.113.7"), ("::ffff:203.0.113.7", "203.0.113.7"), ("::FFFF:CB00:7107", "203.0.113.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"), ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
        ("::1", "::/64"), ("fe80::1:2:3:4", "fe80::/64"),
    ])
    func aSourceKeyIsTheIPv4AddressOrTheIPv6Slash64(_ input: String, _ key: String) {
        #expect(IPAddressText.sourceKey(input) == key)
    }

    @Test func everyAddressOfOneIPv6Slash64SharesOneKeyAndTheNextSlash64DoesNot() {
        var generator = SystemRandomNumberGenerator()
        let keys = Set((0..<200).map { _ in
            let low = (0..<4).map { _ in String(UInt16.random(in: 0...UInt16.max, using: &generator), radix: 16) }
            return IPAddressText.sourceKey("2001:db8:aa:bb:" + low.joined(separator: ":"))
        })
        #expect(keys == ["2001:db8:aa:bb::/64"])
        #expect(IPAddressText.sourceKey("2001:db8:aa:bc::1") == "2001:db8:aa:bc::/64")
    }

    @Test(arguments: ["unknown", "", "localhost"])
    func textThatIsNoAddressIsItsOwnKey(_ input: String) {
        #expect(IPAddressText.sourceKey(input) == input)
    }
}
