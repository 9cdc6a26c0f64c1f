import Testing
import SupportHTTP

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
}
