import Testing
import SupporterREST
import SupporterNode
import SupporterCore
import SupportSession
import SupportWire
import SupportHTTP
import SupportRuntime
import TestSupport

@Suite struct ClientAddressResolverTests {
    static let proxies = ClientAddressResolver(trustedProxies: ["10.0.0.1", "10.0.0.2", "::1"])!

    @Test func withoutTrustedProxiesForwardedForIsIgnored() {
        let resolver = ClientAddressResolver(trustedProxies: [])!
        #expect(resolver.clientAddress(peer: "127.0.0.1", forwardedFor: ["203.0.113.9"]) == "127.0.0.1")
    }

    @Test func anUntrustedPeerCannotNameAnotherAddress() {
        #expect(Self.proxies.clientAddress(peer: "198.51.100.7", forwardedFor: ["203.0.113.9"]) == "198.51.100.7")
    }

    @Test(arguments: [
        (["203.0.113.9"], "203.0.113.9"),
        // A client-supplied entry on the left is not believed: the right-most untrusted entry is the client.
        (["6.6.6.6, 203.0.113.9"], "203.0.113.9"),
        // Entries written by trusted proxies are skipped, across fields too.
        (["6.6.6.6, 203.0.113.9", "10.0.0.2"], "203.0.113.9"), (["203.0.113.9,10.0.0.2 , 10.0.0.1"], "203.0.113.9"),
        (["::ffff:203.0.113.9"], "203.0.113.9"), (["2001:DB8::1"], "2001:db8::1"),
        // Only trusted proxies: the left-most is the client.
        (["10.0.0.2, 10.0.0.1"], "10.0.0.2"),
        // Absent, empty, or not an address where the client should be: the peer.
        ([], "10.0.0.1"), ([""], "10.0.0.1"), (["unknown"], "10.0.0.1"), (["203.0.113.9, garbage"], "10.0.0.1"),
    ])
    func behindATrustedProxyTheClientIsTheRightMostUntrustedEntry(_ header: [String], _ client: String) {
        #expect(Self.proxies.clientAddress(peer: "10.0.0.1", forwardedFor: header) == client)
    }

    @Test func peerAddressesAreCompareCanonically() {
        #expect(Self.proxies.clientAddress(peer: "::ffff:10.0.0.1", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        #expect(Self.proxies.clientAddress(peer: "0:0:0:0:0:0:0:1", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
    }

    @Test func aTrustedProxyMustBeAnIPAddress() {
        #expect(ClientAddressResolver(trustedProxies: ["proxy.example.com"]) == nil)
        #expect(ClientAddressResolver(trustedProxies: ["10.0.0.1:8080"]) == nil)
    }
}
